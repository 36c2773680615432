"""``tollgate feedback export``: decisions + outcomes → one clean table."""

from __future__ import annotations

import pandas as pd
import typer
from typer.testing import CliRunner

from feedback.store import DecisionRow, DecisionStore, LabelledExample, LabelStore
from feedback.stream.join import JoinRecord

H = 3_600_000


def _verdict(eid: str, t: int) -> dict:
    return {"event_id": eid, "customer_id": "c1", "verdict": "pass", "risk_score": 0.2, "event_time_ms": t,
            "probabilities": {"pass": 0.7, "review": 0.2, "reject": 0.1}, "model_version": "v1",
            "rules_version": "r1", "decided_at_ms": t + 3}


def _fill(root):
    snap = {"event_id": "x", "features": {"tx_count_1d": 3.0, "terminal_risk_28d": 0.1},
            "event": {"event_id": "x", "amount": 12.5, "channel": "ecommerce", "terminal_id": "T1",
                      "event_time_ms": 0, "customer_id": "c1"}}
    DecisionStore(root / "decisions").append(
        [DecisionRow.from_verdict(_verdict(e, i * H), snap) for i, e in enumerate(["e1", "e2", "e3"])])
    labels = LabelStore(root / "labels")
    for rev, kind in ((1, "chargeback"), (2, "confirmed_legitimate")):  # e2 corrected
        rec = JoinRecord("e2", None, _verdict("e2", H), {"event_id": "e2", "kind": kind,
                                                          "outcome_time_ms": (7 + rev) * 24 * H, "source": "s"}, rev)
        labels.append([LabelledExample.from_join(rec, snap)])


def test_export_table_joins_latest_outcome_and_flattens_inputs(tmp_path, monkeypatch):
    _fill(tmp_path / "examples")
    monkeypatch.setenv("TOLLGATE_PATHS__EXAMPLES_DIR", str(tmp_path / "examples"))
    from engine.settings import get_settings
    from feedback.commands import register

    get_settings.cache_clear()
    app = typer.Typer()
    register(app)
    out = tmp_path / "table.csv"
    res = CliRunner().invoke(app, ["feedback", "export", str(out)])
    get_settings.cache_clear()
    assert res.exit_code == 0, res.output
    assert "wrote 3 rows" in res.output
    t = pd.read_csv(out)
    assert list(t["event_id"]) == ["e1", "e2", "e3"]
    row = t.set_index("event_id").loc["e2"]
    assert row["outcome_kind"] == "confirmed_legitimate" and row["label"] == 0 and row["outcome_rev"] == 2
    assert row["event.amount"] == 12.5 and row["feature.tx_count_1d"] == 3.0 and row["verdict"] == "pass"
    assert t["label"].isna().sum() == 2  # no outcome yet: label left empty, not guessed
    assert "feature.terminal_risk_28d" in t and "event.event_id" not in t

    res = CliRunner().invoke(app, ["feedback", "export", str(tmp_path / "l.parquet"), "--labelled-only"])
    get_settings.cache_clear()
    assert pd.read_parquet(tmp_path / "l.parquet")["event_id"].tolist() == ["e2"]
