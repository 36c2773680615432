"""The quickstart's scoring of verdicts against the simulator's ground truth, and its report
(the Kafka side runs in `tollgate quickstart` itself)."""

from __future__ import annotations

import json

from engine.interfaces.quickstart import LiveSummary, Truth, summary_line, write_report
from engine.records import Decision, Reason, ReasonKind, Verdict


def verdict(eid: str, decision: Decision, latency: float) -> Verdict:
    return Verdict(eid, "c1", decision, 0.9, {"pass": 0.05, "review": 0.05, "reject": 0.9}, 0.5,
                   (Reason(ReasonKind.MODEL, "threshold_reject"),), "m1", "r1", latency, 0, 0)


def summary(truth: Truth, verdicts: dict) -> LiveSummary:
    s = object.__new__(LiveSummary)  # no Kafka consumer: only the bookkeeping is under test
    s.truth, s.verdicts, s.e2e_ms = truth, verdicts, [10.0, 20.0, 30.0, 40.0]
    return s


def test_figures_count_caught_missed_and_good_customers_held(tmp_path):
    truth = Truth(is_fraud={"f1": True, "f2": True, "f3": True, "g1": False, "g2": False, "g3": False, "g4": False},
                  produced_at={k: 0.0 for k in ("f1", "f2", "f3", "g1", "g2", "g3", "g4", "late")}, outcomes=3)
    vs = {"f1": verdict("f1", Decision.REJECT, 5), "f2": verdict("f2", Decision.REVIEW, 6),
          "f3": verdict("f3", Decision.PASS, 7), "g1": verdict("g1", Decision.PASS, 8),
          "g2": verdict("g2", Decision.REVIEW, 9), "g3": verdict("g3", Decision.REJECT, 10),
          "g4": verdict("g4", Decision.PASS, 100)}
    f = summary(truth, vs).figures()
    assert f["verdicts"] == {"pass": 3, "review": 2, "reject": 2}
    assert (f["fraud"], f["fraud_caught"], f["fraud_missed"]) == (3, 2, 1)
    assert (f["good"], f["good_sent_to_review"], f["good_rejected"]) == (4, 1, 1)
    assert (f["produced"], f["decided"], f["outcomes_sent"]) == (8, 7, 3)
    assert f["decision_latency_ms"]["p50"] == 8.0 and f["decision_latency_ms"]["p99"] > 90
    line = summary_line(f)
    assert "fraud caught 2/3 missed 1" in line and "good→review 1" in line

    out = write_report(tmp_path / "rep", f, [v.decision_latency_ms for v in vs.values()],
                       {"model_version": "m1", "days": 1, "speed": 1440, "customers": 10})
    assert json.loads((out / "summary.json").read_text())["figures"]["fraud_caught"] == 2
    md = (out / "summary.md").read_text()
    assert "fraud caught (review or reject): 2 of 3" in md and "| reject | 2 |" in md
    assert (out / "latency.png").stat().st_size > 1000


def test_empty_run_still_reports(tmp_path):
    f = summary(Truth(), {}).figures()
    assert f["decided"] == 0 and f["fraud"] == 0
    assert "0/0" in summary_line(f)
    write_report(tmp_path / "empty", f, [], {})


# -- what `tollgate quickstart` says (engine/interfaces/commands/quickstart.py) -----------------------

def test_report_states_the_simulated_worlds_customers():
    from engine.interfaces.commands.quickstart import report_meta

    meta = report_meta("m1", days=2, speed=1440.0, customers=400, seed=42, wall_s=61.23)
    assert meta["customers"] == 1000 and meta["wall_s"] == 61.2  # 400 asked, the world has 1,000
    assert report_meta("m1", days=2, speed=1.0, customers=2500, seed=1, wall_s=1)["customers"] == 2500


def test_failed_training_without_any_model_stops_with_what_to_do(tmp_path, capsys):
    import pytest
    import typer

    from engine.interfaces.commands.quickstart import fallback_model
    from engine.settings import PathSettings, RedisSettings, Settings

    settings = Settings(paths=PathSettings(models_dir=tmp_path / "models"),
                        redis=RedisSettings(url="redis://127.0.0.1:1/0", socket_timeout_s=0.2))
    with pytest.raises(typer.Exit) as stopped:
        fallback_model(settings, RuntimeError("out of memory"))
    assert stopped.value.exit_code == 1
    err = capsys.readouterr().err
    assert "out of memory" in err and "no model in" in err and "tollgate model bootstrap" in err


def test_failed_training_with_a_model_directory_names_what_will_serve(tmp_path, capsys):
    from engine.interfaces.commands.quickstart import fallback_model
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.settings import PathSettings, RedisSettings, Settings
    from engine.stages.encode import FieldIsolatedEncoder

    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="older-1")
    save_model_dir(model, card, tmp_path / "models" / "older-1")
    settings = Settings(paths=PathSettings(models_dir=tmp_path / "models"),
                        redis=RedisSettings(url="redis://127.0.0.1:1/0", socket_timeout_s=0.2))
    assert fallback_model(settings, RuntimeError("out of memory")) == "older-1"
    out = capsys.readouterr().out
    assert "will serve the newest model directory" in out and "older-1" in out and "UNTRAINED" not in out


def test_grafana_hint_is_about_this_run_not_a_compose_command_that_clashes():
    from engine.interfaces.commands.quickstart import grafana_hint

    text = "\n".join(grafana_hint(43121, 0))
    assert "http://127.0.0.1:43121/metrics" in text and "--metrics-port 9464" in text
    assert "docker compose up -d prometheus grafana" not in text
    assert "not this run's" in text and "ops/stack down" in text
    assert "127.0.0.1:9500" in "\n".join(grafana_hint(9500, 9500))
