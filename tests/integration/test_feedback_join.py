"""The feedback join against the real Redis: outcome before verdict, duplicates,
corrections, the delayed-label update the engine reads, and crash-safe flushing."""

from __future__ import annotations

import json

import pytest

from engine.features.redis_store import RedisFeatureStore
from engine.records import TransactionEvent
from engine.settings import PathSettings, RedisSettings, Settings
from feedback.stream.process import FeedbackProcessor
from tests.support.events import event

pytestmark = pytest.mark.integration

T0 = 1_780_000_000_000
DAY = 86_400_000


@pytest.fixture(params=["single", "cluster"])
def join_redis(request, stack, unique):
    """(url, client) of the real single Redis, then of the real Redis Cluster; this
    test's keys are removed after."""
    from engine.wire.redisconn import connect

    url = stack.redis_url if request.param == "single" else request.getfixturevalue("redis_cluster_url")
    client = connect(url, socket_timeout_s=10)
    yield url, client
    for key in client.scan_iter(f"*{unique}*", count=10_000):
        client.delete(key)
    client.close()


def _settings(stack, unique, tmp_path, url: str | None = None, **redis_settings) -> Settings:
    return Settings(redis=RedisSettings(url=url or stack.redis_url, key_prefix=f"tgfb{unique}", **redis_settings),
                    paths=PathSettings(state_dir=tmp_path, models_dir=tmp_path / "models",
                                       reports_dir=tmp_path / "reports", examples_dir=tmp_path / "examples"))


def _event(i: int, terminal: str = "T1") -> TransactionEvent:
    return event(i, event_time_ms=T0 + i * 60_000, customer_id=f"c{i % 3}", account_id="a", terminal_id=terminal,
                 amount=10.0 + i)


def _verdict(ev: TransactionEvent, verdict: str = "pass") -> dict:
    return {"event_id": ev.event_id, "customer_id": ev.customer_id, "verdict": verdict, "confidence": 0.9,
            "probabilities": {"pass": 0.9, "review": 0.05, "reject": 0.05}, "risk_score": 0.1,
            "reasons": [], "model_version": "v1", "rules_version": "r1", "decision_latency_ms": 1.0,
            "decided_at_ms": ev.event_time_ms + 5, "event_time_ms": ev.event_time_ms, "detector_score": None}


def _outcome(ev: TransactionEvent, kind: str, at: int) -> dict:
    return {"event_id": ev.event_id, "kind": kind, "outcome_time_ms": at, "source": "issuer",
            "customer_id": None, "terminal_id": None}


def test_join_handles_order_duplicates_corrections(stack, unique, join_redis, tmp_path):
    url, redis_client = join_redis
    s = _settings(stack, unique, tmp_path, url)
    features = RedisFeatureStore(redis_client, s)
    proc = FeedbackProcessor.from_settings(s, redis_client, features)
    events = [_event(i) for i in range(4)]
    features.enrich(events)  # what the engine does: writes the decision log

    # e0: normal order. e1: outcome before verdict. e2: duplicate outcome, then a correction.
    proc.on_batch("verdict", [_verdict(events[0]), _verdict(events[2]), _verdict(events[3])])
    proc.on_batch("outcome", [_outcome(events[0], "chargeback", T0 + 7 * DAY),
                              _outcome(events[1], "confirmed_fraud", T0 + 7 * DAY)])
    assert proc.join.pending_count("labels") == 1  # e1 waits for its verdict
    proc.on_batch("verdict", [_verdict(events[1]), _verdict(events[1])])  # redelivered twice
    dup = _outcome(events[2], "confirmed_fraud", T0 + 8 * DAY)
    proc.on_batch("outcome", [dup, dup])
    stats = proc.flush(now_ms=T0 + 8 * DAY)
    assert stats.labels_written == 3 and stats.decisions_written == 4 and stats.labels_without_inputs == 0

    # A correction, plus a stale replay of the original outcome after it: correction wins.
    proc.on_batch("outcome", [_outcome(events[2], "confirmed_legitimate", T0 + 9 * DAY)])
    proc.on_batch("outcome", [dup])
    proc.flush(now_ms=T0 + 9 * DAY)

    labels = proc.labels.read()
    by_id = labels.set_index("event_id")
    assert sorted(by_id.index) == ["e0", "e1", "e2"]
    assert by_id.loc["e2", "outcome_kind"] == "confirmed_legitimate" and by_id.loc["e2", "outcome_rev"] == 2
    assert by_id.loc["e2", "is_bad"] == 0 and by_id.loc["e1", "preferred"] == "reject"
    # The exact model inputs travel with the label: the event and its context snapshot.
    assert json.loads(by_id.loc["e1", "event_json"])["terminal_id"] == "T1"
    assert json.loads(by_id.loc["e1", "snapshot_json"])["event_id"] == "e1"
    # The window query excludes e2's first label (it was corrected after the window).
    early = proc.labels.read(since_ms=T0 + 7 * DAY, until_ms=T0 + 9 * DAY)
    assert sorted(early["event_id"]) == ["e0", "e1"]
    assert len(proc.decisions.read()) == 4
    assert proc.join.pending_count("labels") == 0 and proc.join.pending_count("decisions") == 0

    # The delayed-label state the engine reads now counts e0 and e1 bad, e2 good.
    for eid, bad in (("e0", 1), ("e1", 1), ("e2", 0)):
        # the label key sits in its terminal's slot: {prefix}:lab:{<terminal>}:<event id>
        (key,) = redis_client.scan_iter(f"{s.redis.key_prefix}:lab:*:{eid}", count=10_000)
        raw = redis_client.get(key)
        assert raw is not None, eid
        _terminal_key, _arrival_bucket, counted_bad = json.loads(raw)  # what a correction moves
        assert counted_bad == bad, (eid, raw)


def test_crash_between_parquet_and_mark_rewrites_but_never_loses(stack, unique, redis_client, tmp_path):
    s = _settings(stack, unique, tmp_path)
    features = RedisFeatureStore(redis_client, s)
    proc = FeedbackProcessor.from_settings(s, redis_client, features)
    ev = _event(7)
    features.enrich([ev])
    proc.on_batch("verdict", [_verdict(ev)])
    proc.on_batch("outcome", [_outcome(ev, "chargeback", T0 + 7 * DAY)])

    original = proc.join.mark_labels_written
    proc.join.mark_labels_written = lambda revs, facts=None: (_ for _ in ()).throw(SystemExit("killed"))
    with pytest.raises(SystemExit):
        proc.flush()
    proc.join.mark_labels_written = original
    # A fresh worker finds the label still pending and writes it again; reads dedup.
    again = FeedbackProcessor.from_settings(s, redis_client, features)
    assert again.join.pending_count("labels") == 1
    again.flush()
    assert len(again.labels.read(dedup=False)) == 2
    assert list(again.labels.read()["event_id"]) == ["e7"]


def test_with_a_horizon_redis_keeps_hours_and_late_outcomes_join_the_decision_store(stack, unique, join_redis,
                                                                                    tmp_path):
    """redis.decision_log_redis_hours: snapshots and verdict-only records leave Redis after
    the horizon; an outcome that comes later is still written, and the fine-tune's read
    finds its verdict and inputs in the decision store."""
    import time

    from feedback.store import complete_from_decisions

    url, redis_client = join_redis
    hours = 2
    s = _settings(stack, unique, tmp_path, url, decision_log_redis_hours=hours)
    horizon = hours * 3_600_000
    features = RedisFeatureStore(redis_client, s)
    proc = FeedbackProcessor.from_settings(s, redis_client, features)
    events = [_event(i, terminal=f"T{i}") for i in range(4)]
    if url != stack.redis_url:  # on a cluster a batch's records span several slot groups
        assert len({redis_client.keyslot(proc.join.key(e.event_id)) for e in events}) > 1
    features.enrich(events)
    for ev in events:
        assert 0 < redis_client.pttl(features._k("snap", ev.event_id)) <= horizon

    proc.on_batch("verdict", [_verdict(ev) for ev in events[:3]])
    proc.on_batch("outcome", [_outcome(events[0], "chargeback", T0 + DAY)])
    now = int(time.time() * 1000)
    stats = proc.flush(now_ms=now)
    assert (stats.decisions_written, stats.labels_written) == (3, 1)
    assert stats.oldest_decision_ms == events[0].event_time_ms + 5
    # A record with an outcome waits for corrections for the retention; verdict-only ones
    # leave with the horizon once their decision is in the store.
    assert redis_client.pttl(proc.join.key("e0")) > horizon
    # ... at a fraction of the size: its label is written and its decision is in the
    # store, so it keeps only the outcome and where and when.
    e0 = proc.join.load(["e0"])["e0"]
    assert e0.verdict is None and e0.event is None and e0.decision_in_store
    assert (e0.terminal_id, e0.event_time_ms) == ("T0", events[0].event_time_ms)
    for eid in ("e1", "e2"):
        assert 0 < redis_client.pttl(proc.join.key(eid)) <= horizon

    # The horizon passes: Redis drops what expired (deleting is what expiry does).
    for eid in ("e1", "e2"):
        redis_client.delete(proc.join.key(eid), features._k("snap", eid))
    late = {**_outcome(events[1], "confirmed_fraud", T0 + 30 * DAY),
            "terminal_id": "T1", "event_time_ms": events[1].event_time_ms}
    proc.on_batch("outcome", [late, _outcome(events[2], "chargeback", T0 + 30 * DAY)])
    # e3's outcome comes before its verdict, as happens within seconds: it must not be
    # given up on when its verdict follows within the horizon.
    proc.on_batch("outcome", [_outcome(events[3], "chargeback", T0 + DAY)])
    proc.on_batch("verdict", [_verdict(events[3])])
    # e1's outcome said where and when: the engine's delayed-label state has it already.
    assert redis_client.exists(features._label_key("T1", "e1"))
    assert proc.flush(now_ms=now).labels_written == 1  # e3; e1 and e2 wait for their verdicts
    assert proc.backlog() == {"decisions": 0, "labels": 0, "awaiting_verdict": 2}
    stats = proc.flush(now_ms=now + horizon + 1_000)
    assert (stats.labels_written, stats.labels_without_verdict) == (2, 2)
    assert proc.join.awaiting_count() == 0
    # A verdict replayed after the wait ended does not write the label twice.
    proc.on_batch("verdict", [_verdict(events[1])])
    assert proc.flush(now_ms=now + horizon + 2_000).labels_written == 0
    # A correction of e0, whose record kept only its outcome: written again, and the
    # engine's delayed-label state moves (the kept terminal and event time).
    (lab0,) = redis_client.scan_iter(f"{s.redis.key_prefix}:lab:*:e0", count=10_000)
    assert json.loads(redis_client.get(lab0))[2] == 1  # counted bad
    redis_client.delete(features._k("snap", "e0"))  # the horizon has passed for it too
    proc.on_batch("outcome", [_outcome(events[0], "confirmed_legitimate", T0 + 2 * DAY)])
    assert json.loads(redis_client.get(lab0))[2] == 0
    assert proc.flush(now_ms=now + horizon + 3_000).labels_written == 1

    raw = proc.labels.read().set_index("event_id")
    assert raw.loc["e1", "verdict"] == "" and raw.loc["e2", "verdict"] == ""
    done, unmatched = complete_from_decisions(proc.labels.read(), proc.decisions)
    by_id = done.set_index("event_id")
    assert unmatched == 0 and sorted(by_id.index) == ["e0", "e1", "e2", "e3"]
    assert by_id.loc["e0", "outcome_kind"] == "confirmed_legitimate" and by_id.loc["e0", "outcome_rev"] == 2
    for eid in ("e0", "e1", "e2"):
        assert by_id.loc[eid, "verdict"] == "pass" and by_id.loc[eid, "model_version"] == "v1"
        assert json.loads(by_id.loc[eid, "snapshot_json"])["event_id"] == eid
        assert json.loads(by_id.loc[eid, "event_json"])["terminal_id"] == f"T{eid[1]}"
    assert by_id.loc["e2", "event_time_ms"] == events[2].event_time_ms
    # The fine-tune reads its labels through the same join, and every one is trainable.
    from engine.stages.encode import FieldIsolatedEncoder
    from feedback.learn.dataset import encode_rows
    from feedback.learn.scheduler import FineTuneScheduler

    sched = FineTuneScheduler(s, redis_client, labels=proc.labels, decisions=proc.decisions, progress=False)
    rows = sched._read_labels(T0, T0 + 31 * DAY)
    encoded = encode_rows(rows, FieldIsolatedEncoder())
    assert encoded.dropped == 0 and sorted(encoded.rows["event_id"]) == ["e0", "e1", "e2", "e3"]
