"""`tollgate train` and `tollgate backtest` end to end on tiny files (CliRunner, 1 epoch)."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from engine.interfaces import cli
from engine.offline.simulate.simulator import DAY_MS, SimConfig
from tests.support.sim_files import write_simulated_parquet

MEASURED_EPOCHS = 14  # the handbook figures in docs/decision-model.md were measured with 14


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    cli._register_all()
    return CliRunner()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory) -> Path:
    """Three simulated days as `tollgate simulate` writes them: events + outcomes Parquet."""
    return write_simulated_parquet(tmp_path_factory.mktemp("sim") / "events.parquet",
                                   SimConfig(customers=150, terminals=300, days=3, seed=3))


def invoke(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(cli.app, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_train_writes_the_model_directory_and_the_report(runner, simulated, tmp_path):
    invoke(runner, ["train", "--data", str(simulated), "--epochs", "1", "--version", "v1",
                    "--models-dir", str(tmp_path / "models"), "--report-dir", str(tmp_path / "report")])
    model_dir = tmp_path / "models" / "v1"
    assert {"model.safetensors", "model_card.json"} <= {p.name for p in model_dir.iterdir()}
    assert {"metrics.json", "reliability.png", "confusion.png", "pr_curve.png"} <= {
        p.name for p in (tmp_path / "report").iterdir()}
    card = json.loads((model_dir / "model_card.json").read_text())
    assert card["version"] == "v1" and card["training"]["epochs"] == 1
    assert card["training"]["n_train_rule_verdicts"] == 0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert "auc_roc" in metrics and len(metrics["history"]) == 1
    # the model card's window is everything the model saw, the held-out tail included
    times = pd.read_parquet(simulated, columns=["event_time_ms"])["event_time_ms"]
    assert card["data_window"] == [int(times.min()), int(times.max()) + 1]


def test_train_cold_start_from_a_rule_set_without_outcomes(runner, simulated, tmp_path):
    events = tmp_path / "no_outcomes.parquet"  # no sibling outcomes file: nothing known yet
    pd.read_parquet(simulated).to_parquet(events)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "r.yaml").write_text('rules:\n  - {id: big, description: d, owner: o, '
                                  'when: "event.amount >= 100", then: reject}\n')
    out = invoke(runner, ["train", "--data", str(events), "--rules", str(rules), "--epochs", "1",
                          "--version", "cold", "--models-dir", str(tmp_path / "models"),
                          "--report-dir", str(tmp_path / "report")])
    n = len(pd.read_parquet(events))
    assert f"outcomes=0, bad=0, rule verdicts={n}" in out
    card = json.loads((tmp_path / "models" / "cold" / "model_card.json").read_text())
    assert card["training"]["n_train_outcomes"] == 0 and card["temperature"]["risk"] == 1.0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert "rule_agreement" in metrics and metrics["n_val"] == 0
    assert (tmp_path / "report" / "rule_confusion.png").is_file()
    # without --rules the same file is refused: there is nothing to learn from
    result = runner.invoke(cli.app, ["train", "--data", str(events), "--epochs", "1"])
    assert result.exit_code != 0 and "outcomes file" in result.output


def test_train_reads_recorded_rule_verdicts(runner, simulated, tmp_path):
    frame = pd.read_parquet(simulated)
    verdicts = tmp_path / "verdicts.csv"
    subset = frame.iloc[::2]
    pd.DataFrame({"event_id": subset["event_id"],
                  "verdict": np.where(subset["amount"] > 80, "review", "pass")}).to_csv(verdicts, index=False)
    out = invoke(runner, ["train", "--data", str(simulated), "--rule-verdicts", str(verdicts), "--epochs", "1",
                          "--version", "rv", "--models-dir", str(tmp_path / "models"),
                          "--report-dir", str(tmp_path / "report")])
    assert f"rule verdicts={len(subset)}" in out
    card = json.loads((tmp_path / "models" / "rv" / "model_card.json").read_text())
    assert 0 < card["training"]["n_train_rule_verdicts"] < card["training"]["n_train"]
    # outcomes are still used where known, and only there
    assert 0 < card["training"]["n_train_outcomes"] < card["training"]["n_train"]


def handbook_raw(t0: pd.Timestamp, days: int, per_day: int, seed: int = 0) -> pd.DataFrame:
    """A synthetic frame in the handbook's raw column layout (../shared/data/README.md)."""
    rng = np.random.default_rng(seed)
    seconds = np.sort(rng.integers(0, days * 86_400, days * per_day))
    amount = rng.gamma(2.0, 30.0, len(seconds)).round(2)
    fraud = (amount > 150).astype(np.int64)
    ids = rng.permutation(len(seconds)).astype(np.int64)  # like the book: ids do not follow time
    return pd.DataFrame({
        "TRANSACTION_ID": ids, "TX_DATETIME": t0 + pd.to_timedelta(seconds, unit="s"),
        "CUSTOMER_ID": rng.integers(0, 60, len(seconds)).astype(np.int64),
        "TERMINAL_ID": rng.integers(0, 30, len(seconds)).astype(np.int64), "TX_AMOUNT": amount,
        "TX_TIME_SECONDS": seconds.astype(np.int64), "TX_TIME_DAYS": (seconds // 86_400).astype(np.int64),
        "TX_FRAUD": fraud, "TX_FRAUD_SCENARIO": fraud})


def test_backtest_handbook_format_writes_scores(runner, tmp_path):
    # history 1 day, train 2018-05-02..03, delay 1 day, test 2018-05-05
    raw = handbook_raw(pd.Timestamp("2018-05-01"), days=5, per_day=200)
    data, out = tmp_path / "handbook.parquet", tmp_path / "scores.parquet"
    raw.to_parquet(data)
    invoke(runner, ["backtest", "--data", str(data), "--format", "handbook", "--train-start", "2018-05-02",
                    "--train-days", "2", "--delay-days", "1", "--test-days", "1", "--history-days", "1",
                    "--epochs", "1", "--out", str(out), "--set", "d_model=16", "--set", "n_heads=2",
                    "--set", "n_layers=1", "--set", "progress=false"])
    scores = pd.read_parquet(out)
    assert list(scores.columns[:4]) == ["transaction_id", "risk_score", "verdict", "confidence"]
    test_day = raw[(raw["TX_DATETIME"] >= "2018-05-05") & (raw["TX_DATETIME"] < "2018-05-06")]
    assert sorted(scores["transaction_id"]) == sorted(test_day["TRANSACTION_ID"].astype(str))
    assert set(scores["verdict"]) <= {"pass", "review", "reject"}
    assert scores["risk_score"].between(0, 1).all() and scores["confidence"].between(1 / 3, 1).all()
    assert (scores["event_time_ms"] // DAY_MS).nunique() == 1


def test_training_defaults_are_the_measured_configuration(runner):
    from engine.offline.backtest.run import run_backtest
    from engine.offline.train.sets import TrainConfig

    root = typer.main.get_command(cli.app)
    for command in ("train", "backtest"):
        epochs = next(p for p in root.commands[command].params if p.name == "epochs")
        assert epochs.default == MEASURED_EPOCHS, command
    assert inspect.signature(run_backtest).parameters["epochs"].default == MEASURED_EPOCHS
    assert TrainConfig().epochs == MEASURED_EPOCHS
