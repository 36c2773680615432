"""``tollgate rules check|test|backtest`` — and the default set's own cases, run in CI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from engine.commands.rules import register

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cli() -> typer.Typer:
    app = typer.Typer()
    register(app)

    @app.callback()
    def _root() -> None:  # keep `rules` a sub-command
        pass
    return app


def invoke(cli: typer.Typer, *args: str):
    return CliRunner().invoke(cli, list(args))


def test_default_rule_set_passes_its_own_cases(cli) -> None:
    """CI gate: `tollgate rules test rules/` must pass."""
    result = invoke(cli, "rules", "test", str(REPO / "rules"))
    assert result.exit_code == 0, result.output
    assert " passed, 0 failed (rules-" in result.output


def test_check_reports_a_valid_set(cli) -> None:
    result = invoke(cli, "rules", "check", str(REPO / "rules"))
    assert result.exit_code == 0, result.output
    assert "is valid, version rules-" in result.output and "list sanctioned_countries: 4 value(s), yaml" in result.output


def test_check_names_file_line_and_rule_and_fails(cli, tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "r")
    path = tmp_path / "r" / "card_payments.yaml"
    path.write_text(path.read_text().replace("when: event.amount >= 2500", "when: event.amount >= 2500 &&"))
    result = invoke(cli, "rules", "check", str(tmp_path / "r"))
    assert result.exit_code == 1
    assert ("card_payments.yaml:17: rule 'large-amount': `when` does not compile: CEL syntax error at line 1, "
            "column 22: near '&&'") in result.output


def test_failing_case_is_reported(cli, tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "r")
    path = tmp_path / "r" / "card_payments.yaml"
    path.write_text(path.read_text().replace("when: event.amount >= 10000", "when: event.amount >= 30000"))
    result = invoke(cli, "rules", "test", str(tmp_path / "r"))
    assert result.exit_code == 1
    assert "FAIL tests/card_payments.yaml:" in result.output
    assert "a very large amount is rejected even when the model says pass" in result.output
    assert "verdict review, expected reject" in result.output


def test_malformed_case_file_is_an_error(cli, tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "r")
    (tmp_path / "r" / "tests" / "bad.yaml").write_text("cases:\n  - name: x\n    expect: {verdict: maybe}\n")
    result = invoke(cli, "rules", "test", str(tmp_path / "r"))
    assert result.exit_code == 1
    assert "tests/bad.yaml:3: cases.0.expect.verdict: Input should be 'pass', 'review' or 'reject'" in result.output


@pytest.fixture(scope="module")
def sim_data(tmp_path_factory) -> Path:
    from engine.simulate import SimConfig, Simulator
    from engine.simulate_sinks import ParquetSink

    path = tmp_path_factory.mktemp("sim") / "week.parquet"
    sink = ParquetSink(path)
    for day in Simulator(SimConfig(customers=150, terminals=300, days=6, seed=5)).days():
        sink.write(day)
    sink.close()
    return path


def test_backtest_prints_hits_migration_and_fraud_caught(cli, sim_data: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "rules", tmp_path / "proposed")
    rules = tmp_path / "proposed" / "card_payments.yaml"
    # the proposal: scenario-1 fraud (amount > 220) goes to review
    rules.write_text(rules.read_text().replace("when: event.amount >= 2500", "when: event.amount >= 220"))
    out_json = tmp_path / "report.json"
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(sim_data),
                    "--proposed", str(tmp_path / "proposed"), "--json", str(out_json))
    assert result.exit_code == 0, result.output
    text = result.output
    assert "verdict migration (rows: current, columns: proposed)" in text
    assert "fraud caught" in text and "good hurt" in text
    report = json.loads(out_json.read_text())
    hits = report["hits"]
    assert hits["proposed"].get("large-amount", 0) > hits["current"].get("large-amount", 0)
    assert report["migration"].get("pass->review", 0) > 0
    assert report["fraud_caught"]["proposed"] > report["fraud_caught"]["current"]
    import pandas as pd

    frame = pd.read_parquet(sim_data)
    assert report["events"] == len(frame) and report["bad"] == int(frame.tx_fraud.sum())


def test_backtest_uses_model_columns_when_present(cli, sim_data: Path, tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.read_parquet(sim_data).head(300)
    frame["p_pass"], frame["p_review"], frame["p_reject"] = 0.1, 0.1, 0.8
    frame["risk"], frame["proposed"] = 0.95, "reject"
    path = tmp_path / "scored.jsonl"
    frame.to_json(path, orient="records", lines=True)
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(path))
    assert result.exit_code == 0, result.output
    assert "model outputs from the data file" in result.output
    assert "verdicts: model 0/0/300" in result.output


def test_backtest_missing_file(cli, tmp_path: Path) -> None:
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(tmp_path / "nope.parquet"))
    assert result.exit_code == 2 and "does not exist" in result.output


def test_case_typos_fail_the_case(tmp_path: Path) -> None:
    from engine.rules.cases import CaseSpec, run_case
    from engine.rules.loader import load_ruleset

    rs = load_ruleset(REPO / "rules")
    case = CaseSpec.model_validate({"name": "typo", "model": {"p_rejet": 0.9}, "context": {"velocity_1h_cnt": 3},
                                    "detector": {"flaged": True}, "expect": {"verdict": "pass"}})
    failures = run_case(rs, case).failures
    assert any("unknown model field(s): p_rejet" in f for f in failures)
    assert any("unknown context feature(s): velocity_1h_cnt" in f for f in failures)
    assert any("unknown detector field(s): flaged" in f for f in failures)


@pytest.mark.slow
def test_backtest_scores_with_a_model_through_the_real_pipeline(cli, sim_data: Path, tmp_path: Path) -> None:
    import pandas as pd
    import torch

    from engine.encode import FieldIsolatedEncoder
    from engine.model import InputSpec, fresh_model, save_model_dir

    torch.set_num_threads(1)
    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="t-rules", seed=3)
    model_dir = save_model_dir(model, card, tmp_path / "models" / "t-rules")
    data = tmp_path / "few.parquet"
    pd.read_parquet(sim_data).head(200).to_parquet(data)
    out_json = tmp_path / "report.json"
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(data), "--model", str(model_dir),
                    "--json", str(out_json))
    if "DetectorArtifactError" in result.output:  # the detector area's shipped artifact is being retrained
        pytest.skip(f"detector artifact unusable: {result.output.strip().splitlines()[-1]}")
    assert result.exit_code == 0, result.output
    assert f"model outputs: model {model_dir}" in result.output
    report = json.loads(out_json.read_text())
    assert sum(report["verdicts"]["model"].values()) == 200
