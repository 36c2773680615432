"""``tollgate rules check|test|backtest`` — and the default set's own cases, run in CI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from engine.interfaces.commands.rules import register

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
    from engine.offline.simulate.simulator import SimConfig
    from tests.support.sim_files import write_simulated_parquet

    return write_simulated_parquet(tmp_path_factory.mktemp("sim") / "week.parquet",
                                   SimConfig(customers=150, terminals=300, days=6, seed=5))


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
    assert "the file's `proposed` column is ignored" in result.output
    assert "verdicts: model 0/0/300" in result.output


def _policy_only_change(tmp_path: Path, *changes: tuple[str, str]) -> Path:
    """A copy of rules/ whose only change is in policy.yaml."""
    shutil.copytree(REPO / "rules", tmp_path / "proposed")
    edit = tmp_path / "proposed" / "policy.yaml"
    text = edit.read_text()
    for old, new in changes:
        assert old in text
        text = text.replace(old, new)
    edit.write_text(text)
    return tmp_path / "proposed"


def _backtest_reject_threshold_change(cli, frame, tmp_path: Path):
    """`rules backtest` of the shipped rules on ``frame`` against a copy whose only change
    is reject_threshold 0.5 -> 0.3 in policy.yaml: (CLI result, JSON report)."""
    path = tmp_path / "data.parquet"
    frame.to_parquet(path)
    proposed = _policy_only_change(tmp_path, ("reject_threshold: 0.5", "reject_threshold: 0.3"))
    out_json = tmp_path / "report.json"
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(path),
                    "--proposed", str(proposed), "--json", str(out_json))
    assert result.exit_code == 0, result.output
    return result, json.loads(out_json.read_text())


def test_backtest_policy_change_moves_the_migration_matrix(cli, sim_data: Path, tmp_path: Path) -> None:
    """Each side decides from the probabilities with its own policy.yaml."""
    import pandas as pd

    frame = pd.read_parquet(sim_data).head(300)
    # p(reject) 0.4: under 0.5 -> review (p(review)+p(reject) = 0.5); under 0.3 -> reject
    frame["p_pass"], frame["p_review"], frame["p_reject"] = 0.5, 0.1, 0.4
    result, report = _backtest_reject_threshold_change(cli, frame, tmp_path)
    assert "changed: reject_threshold" in result.output
    assert report["policy"]["current"]["reject_threshold"] == 0.5
    assert report["policy"]["proposed"]["reject_threshold"] == 0.3
    assert report["hits"]["current"] == report["hits"]["proposed"]  # the rules did not change
    # most events move review -> reject; only rules that reject or allowlist keep them in place
    assert report["migration"].get("review->reject", 0) >= 250, report["migration"]
    assert report["verdicts"]["model"] == {"review": 300}
    assert report["verdicts"]["model-proposed"] == {"reject": 300}


def test_backtest_without_probabilities_says_policy_cannot_show(cli, sim_data: Path, tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.read_parquet(sim_data).head(200)
    frame["proposed"] = "review"
    result, report = _backtest_reject_threshold_change(cli, frame, tmp_path)
    assert "the data file's `proposed` column, for both sets (no probabilities: policy.yaml changes do not show)" \
        in result.output
    assert "(not applied: no model probabilities)" in result.output
    assert report["verdicts"]["model"] == {"review": 200}  # the column is the proposal
    assert all(a == b for a, b in (k.split("->") for k in report["migration"]))


def test_backtest_refuses_partial_probability_columns(cli, sim_data: Path, tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.read_parquet(sim_data).head(20)
    frame["p_pass"], frame["p_reject"] = 0.9, 0.05
    path = tmp_path / "partial.parquet"
    frame.to_parquet(path)
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(path))
    assert result.exit_code == 1 and "missing p_review" in result.output


def test_backtest_missing_file(cli, tmp_path: Path) -> None:
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(tmp_path / "nope.parquet"))
    assert result.exit_code == 2 and "does not exist" in result.output


def test_case_typos_fail_the_case(tmp_path: Path) -> None:
    from engine.offline.rules_tools.cases import CaseSpec, run_case
    from engine.rules.loader import load_ruleset

    rs = load_ruleset(REPO / "rules")
    case = CaseSpec.model_validate({"name": "typo", "model": {"p_rejet": 0.9}, "context": {"velocity_1h_cnt": 3},
                                    "detector": {"flaged": True}, "expect": {"verdict": "pass"}})
    failures = run_case(rs, case).failures
    assert any("unknown model field(s): p_rejet" in f for f in failures)
    assert any("unknown context feature(s): velocity_1h_cnt" in f for f in failures)
    assert any("unknown detector field(s): flaged" in f for f in failures)


def test_case_verdict_comes_from_the_sets_policy(cli, tmp_path: Path) -> None:
    """A case with probabilities and no `proposed:` is decided by policy.yaml, then the rules."""
    shutil.copytree(REPO / "rules", tmp_path / "r")
    assert invoke(cli, "rules", "test", str(tmp_path / "r")).exit_code == 0
    policy = tmp_path / "r" / "policy.yaml"
    policy.write_text(policy.read_text().replace("reject_threshold: 0.5", "reject_threshold: 0.7"))
    result = invoke(cli, "rules", "test", str(tmp_path / "r"))
    assert result.exit_code == 1, result.output
    assert "the model's reject stands when no rule fires (p_reject reaches reject_threshold)" in result.output
    assert "verdict review, expected reject" in result.output
    assert "reason(s) ['threshold_reject'] not among the verdict's reasons ['threshold_review'" in result.output
    assert "an explicit proposal overrides the policy" not in result.output  # `proposed:` ignores the policy


def test_case_policy_path_and_its_errors() -> None:
    from engine.offline.rules_tools.cases import CaseSpec, run_case
    from engine.rules.loader import load_ruleset

    rs = load_ruleset(REPO / "rules")

    def run(**case):
        return run_case(rs, CaseSpec.model_validate({"name": "c", **case})).failures

    model = {"p_pass": 0.2, "p_review": 0.2, "p_reject": 0.6}
    assert run(model=model, expect={"verdict": "reject", "reasons": ["threshold_reject"]}) == ()
    assert run(model={"probabilities": {"pass": 0.2, "review": 0.2, "reject": 0.6}},
               expect={"verdict": "reject"}) == ()
    assert run(model=model, proposed="pass", expect={"verdict": "pass"}) == ()  # the override
    # degraded_mode: review (policy.yaml) holds even a model reject for review
    assert run(model={**model, "degraded": True}, expect={"verdict": "review", "reasons": ["context_unavailable"]}) == ()
    assert any("give all of p_pass, p_review and p_reject (missing p_review)" in f
               for f in run(model={"p_pass": 0.4, "p_reject": 0.6}, expect={"verdict": "reject"}))
    assert any("summing to 1, got 0.5 + 0.2 + 0.6" in f
               for f in run(model={**model, "p_pass": 0.5}, expect={"verdict": "reject"}))
    assert any("model.verdict: the policy computes these" in f
               for f in run(model={**model, "verdict": "pass"}, expect={"verdict": "reject"}))


@pytest.mark.slow
def test_backtest_scores_with_a_model_through_the_real_pipeline(cli, sim_data: Path, tmp_path: Path) -> None:
    import pandas as pd
    import torch

    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.stages.encode import FieldIsolatedEncoder

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
    # The model's outputs are recorded once and each side decides with its own policy:
    # a policy-only change (reject whatever the model says: p(reject) >= 0, never abstain
    # or call a tie) must show.
    proposed = _policy_only_change(tmp_path, ("reject_threshold: 0.5", "reject_threshold: 0.0"),
                                   ("tie_margin: 0.05", "tie_margin: 0.0"),
                                   ("abstain_threshold: 0.5", "abstain_threshold: 0.0"))
    result = invoke(cli, "rules", "backtest", str(REPO / "rules"), "--data", str(data), "--model", str(model_dir),
                    "--proposed", str(proposed), "--json", str(out_json))
    assert result.exit_code == 0, result.output
    moved = json.loads(out_json.read_text())
    assert moved["verdicts"]["model"] == report["verdicts"]["model"]
    assert moved["verdicts"]["model-proposed"] == {"reject": 200}
    assert moved["hits"]["current"] == report["hits"]["current"]
    # every event the current set does not reject is rejected now, but allowlisted ones
    passed_by_rule = moved["hits"]["proposed"].get("trusted-customer", 0)
    into_reject = sum(n for k, n in moved["migration"].items() if k.endswith("->reject") and k != "reject->reject")
    assert into_reject >= 200 - report["verdicts"]["current"].get("reject", 0) - passed_by_rule > 0
