"""The pure join rules and the Parquet stores (no servers)."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from feedback.store import DecisionRow, DecisionStore, LabelledExample, LabelStore, complete_from_decisions
from feedback.stream.join import (
    JoinRecord,
    apply_event,
    apply_outcome,
    apply_verdict,
    is_complete,
    label_arrival_fields,
    mark_emitted,
    needs_emit,
)

H = 3_600_000


def _outcome(kind: str, t: int, source: str = "issuer") -> dict:
    return {"event_id": "e1", "kind": kind, "outcome_time_ms": t, "source": source}


def _verdict() -> dict:
    return {"event_id": "e1", "customer_id": "c1", "verdict": "pass", "risk_score": 0.2,
            "probabilities": {"pass": 0.7, "review": 0.2, "reject": 0.1}, "model_version": "v1",
            "rules_version": "r1", "decided_at_ms": 5, "event_time_ms": 1}


def test_outcome_before_verdict_waits_then_emits_once():
    r = apply_outcome(JoinRecord("e1"), _outcome("chargeback", 10 * H))
    assert not is_complete(r) and not needs_emit(r)
    r = apply_verdict(r, _verdict())
    assert needs_emit(r)
    r = mark_emitted(r, r.outcome_rev)
    assert not needs_emit(apply_verdict(r, {**_verdict(), "verdict": "reject"}))  # redelivery ignored


def test_corrections_replace_and_stale_or_duplicate_outcomes_do_not():
    r = apply_verdict(JoinRecord("e1"), _verdict())
    r = mark_emitted(apply_outcome(r, _outcome("chargeback", 10 * H)), 1)
    assert apply_outcome(r, _outcome("chargeback", 10 * H)) == r  # duplicate
    corrected = apply_outcome(r, _outcome("confirmed_legitimate", 20 * H, "desk"))
    assert corrected.outcome_rev == 2 and needs_emit(corrected)
    assert apply_outcome(corrected, _outcome("chargeback", 10 * H)) == corrected  # stale replay
    # Two reports at the same instant: a deterministic winner, whatever the arrival order.
    a, b = _outcome("chargeback", 30 * H, "x"), _outcome("review_approved", 30 * H, "y")
    one = apply_outcome(apply_outcome(corrected, a), b)
    two = apply_outcome(apply_outcome(corrected, b), a)
    assert one.outcome["kind"] == two.outcome["kind"]


def test_label_arrival_uses_event_outcome_or_verdict_facts():
    r = apply_outcome(JoinRecord("e1"), _outcome("confirmed_fraud", 10 * H))
    assert label_arrival_fields(r) is None  # no terminal, no event time yet
    r = apply_event(r, {"event_id": "e1", "terminal_id": "T9", "event_time_ms": 7})
    assert label_arrival_fields(r) == {"event_id": "e1", "terminal_id": "T9", "event_time_ms": 7,
                                       "arrival_time_ms": 10 * H, "is_bad": True}


def test_redis_round_trip():
    r = apply_outcome(apply_verdict(JoinRecord("e1"), _verdict()), _outcome("chargeback", 3))
    raw = {k.encode(): v.encode() for k, v in r.to_redis().items()}
    assert JoinRecord.from_redis("e1", raw) == r
    assert JoinRecord.from_redis("e2", {}) == JoinRecord("e2")


def _example(rev: int, kind: str, t: int) -> LabelledExample:
    rec = JoinRecord("e1", {"event_id": "e1", "event_time_ms": 1, "customer_id": "c1", "terminal_id": "T"},
                     _verdict(), _outcome(kind, t), rev)
    return LabelledExample.from_join(rec, {"event_id": "e1", "features": {"x": 1.0}})


def test_label_store_dedups_and_keeps_corrections_across_hours(tmp_path):
    store = LabelStore(tmp_path)
    store.append([_example(1, "chargeback", 1 * H)] * 2)  # a crash-retry duplicate
    assert len(store.read(dedup=False)) == 2 and len(store.read()) == 1
    store.append([_example(2, "confirmed_legitimate", 5 * H)])
    latest = store.read()
    assert list(latest["outcome_kind"]) == ["confirmed_legitimate"] and latest["is_bad"].tolist() == [0]
    # The hour-1 window no longer offers the superseded label for training.
    assert store.read(since_ms=0, until_ms=2 * H).empty
    assert store.hours() == ["1970-01-01T01", "1970-01-01T05"]
    row = store.read().iloc[0]
    assert json.loads(row["snapshot_json"]) == {"event_id": "e1", "features": {"x": 1.0}}


def test_store_survives_restart_and_ignores_partial_files(tmp_path):
    DecisionStore(tmp_path).append([DecisionRow.from_verdict(_verdict(), None, {"event_id": "e1"})])
    (tmp_path / "hour=1970-01-01T00" / ".part-x.parquet.tmp").write_bytes(b"half a file")
    again = DecisionStore(tmp_path)  # a new process
    df = again.read()
    assert list(df["event_id"]) == ["e1"] and df["snapshot_json"].isna().all()


def test_incomplete_record_cannot_become_an_example():
    with pytest.raises(ValueError):
        LabelledExample.from_join(JoinRecord("e1", verdict=_verdict()))


def test_outcome_alone_is_complete_once_its_verdict_is_known_to_be_in_the_decision_store():
    r = apply_outcome(JoinRecord("e1"), {**_outcome("chargeback", 10 * H), "event_time_ms": 7, "terminal_id": "T9"})
    assert not is_complete(r)  # waiting: the verdict may still be on its way
    # The delayed-label state needs no verdict when the outcome says when and where.
    assert label_arrival_fields(r) == {"event_id": "e1", "terminal_id": "T9", "event_time_ms": 7,
                                       "arrival_time_ms": 10 * H, "is_bad": True}
    gone = JoinRecord.from_redis("e1", {**r.to_redis(), "decision_in_store": "1"})
    assert gone.decision_in_store and needs_emit(gone)
    ex = LabelledExample.from_join(gone)
    assert (ex.verdict, ex.event_time_ms, ex.snapshot_json, ex.is_bad) == ("", 7, None, 1)


def _decision(event_id: str, event_time_ms: int, verdict: str = "review") -> DecisionRow:
    vd = {**_verdict(), "event_id": event_id, "event_time_ms": event_time_ms, "verdict": verdict,
          "decided_at_ms": event_time_ms + 5}
    return DecisionRow.from_verdict(vd, {"event_id": event_id, "features": {"x": 2.0}},
                                    {"event_id": event_id, "terminal_id": "T3", "event_time_ms": event_time_ms})


def test_labels_written_without_their_decision_are_completed_from_the_decision_store(tmp_path):
    decisions = DecisionStore(tmp_path / "decisions")
    decisions.append([_decision("e1", 3 * H), _decision("e2", 40 * H, "reject"), _decision("other", 3 * H)])
    labels = LabelStore(tmp_path / "labels")
    no_verdict = lambda eid, t: LabelledExample.from_join(JoinRecord(  # noqa: E731
        eid, outcome={**_outcome("chargeback", 100 * H), "event_id": eid, **({"event_time_ms": t} if t else {})},
        outcome_rev=1, decision_in_store=True))
    no_snapshot = LabelledExample.from_join(apply_outcome(apply_verdict(JoinRecord("e3"), {**_verdict(), "event_id": "e3"}),
                                                          {**_outcome("chargeback", 100 * H), "event_id": "e3"}))
    labels.append([no_verdict("e1", 3 * H), no_verdict("e2", 0), no_verdict("lost", 3 * H), no_snapshot,
                   replace(_example(1, "chargeback", 100 * H), event_id="e4")])
    raw = labels.read()
    assert sorted(raw["verdict"]) == ["", "", "", "pass", "pass"]
    done, unmatched = complete_from_decisions(raw, decisions)
    by_id = done.set_index("event_id")
    # e2's outcome did not say when its transaction happened: found by looking everywhere.
    assert unmatched == 1 and sorted(by_id.index) == ["e1", "e2", "e3", "e4"]
    assert by_id.loc["e1", "verdict"] == "review" and by_id.loc["e2", "verdict"] == "reject"
    assert by_id.loc["e2", "event_time_ms"] == 40 * H and by_id.loc["e1", "terminal_id"] == "T3"
    assert json.loads(by_id.loc["e1", "snapshot_json"]) == {"event_id": "e1", "features": {"x": 2.0}}
    assert by_id.loc["e1", "p_review"] == 0.2 and by_id.loc["e1", "model_version"] == "v1"
    # e3 kept its own verdict (this decision store has none for it) and stays without inputs.
    assert by_id.loc["e3", "verdict"] == "pass" and pd.isna(by_id.loc["e3", "snapshot_json"])
    assert by_id.loc["e1", "outcome_kind"] == "chargeback" and by_id.loc["e1", "is_bad"] == 1
    assert json.loads(by_id.loc["e4", "snapshot_json"]) == {"event_id": "e1", "features": {"x": 1.0}}  # untouched
