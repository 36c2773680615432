"""The engine benchmark's month of history (``ops/bench/engine_history.py``) is the state a
worker would have left: after it, a new payment's context on the real Redis equals the
memory store's after the same payments and outcomes, and the busiest shop's activity was
written in the day layout that a busy terminal has in service."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from engine.features.memory import MemoryFeatureStore
from engine.features.redis_store import RedisFeatureStore
from engine.features.store import LabelArrival
from engine.settings import Settings
from ops.bench.engine_events import BASE_TIME_MS, history_events, realistic_events
from ops.bench.engine_history import outcomes, replay
from tests.conftest import REPO

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000


def test_history_leaves_the_state_a_worker_would_have(stack, unique, tmp_path):
    history = history_events("h", 10_000, BASE_TIME_MS, days=30)
    path = tmp_path / "history.json"
    path.write_text(json.dumps([e.to_dict() for e in history]))
    prefix = f"tg-hist-{unique}"
    written = subprocess.run([sys.executable, str(REPO / "ops" / "bench" / "engine_history.py"),
                              "--redis-url", stack.redis_url, "--prefix", prefix, "--events", str(path),
                              "--tree", str(REPO), "--bad-every", "7"],
                             capture_output=True, text=True, timeout=300, check=False)
    assert written.returncode == 0, written.stderr
    store = RedisFeatureStore(settings=Settings(redis={"url": stack.redis_url, "key_prefix": prefix}))
    try:
        report = json.loads(written.stdout)
        labels = outcomes(history, 7 * DAY_MS, 7, LabelArrival)
        assert report["events"] == 10_000 and report["labels"] == len(labels) > 7000

        memory = MemoryFeatureStore()
        replay(memory, history, labels, 512)
        live = [b.event for b in realistic_events(unique, 300)]
        assert memory.enrich(live) == store.enrich(live)
        assert store.client.hexists(store._k("tact", "t0"), "v"), "the busiest shop is not in the day layout"
        known = [s for s in memory.decision_log([e.event_id for e in live]) if s is not None]
        assert len(known) == len(live) and any(s.terminal_risk_30d > 0 for s in known)
        assert sum(s.terminal_count_30d > 100 for s in known) > 10  # busy shops, seen busy
    finally:
        for key in store.client.scan_iter(f"{prefix}:*", count=10_000):
            store.client.unlink(key)


def test_outcomes_during_a_run_follow_the_verdicts_as_the_feedback_worker_records_them(stack, unique, tmp_path):
    """``ops/bench/engine_outcomes.py`` records one outcome per verdict it is told of, for
    the history's payments still without one, then under new ids once they are used up;
    the state it leaves equals the memory store's after the same outcomes."""
    from ops.bench.engine_outcomes import arrivals
    from tests.support.events import event

    payments = history_events("p", 40, BASE_TIME_MS, days=2)[:3]
    path = tmp_path / "pending.json"
    path.write_text(json.dumps([e.to_dict() for e in payments]))
    prefix = f"tg-out-{unique}"
    store = RedisFeatureStore(settings=Settings(redis={"url": stack.redis_url, "key_prefix": prefix}))
    memory = MemoryFeatureStore()
    for target in (store, memory):  # the payments, as the history wrote them
        target.enrich(payments)
    at = BASE_TIME_MS + 3 * DAY_MS
    child = subprocess.Popen([sys.executable, str(REPO / "ops" / "bench" / "engine_outcomes.py"),
                              "--redis-url", stack.redis_url, "--prefix", prefix, "--payments", str(path),
                              "--tree", str(REPO), "--batch", "2", "--bad-every", "2"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        out, _ = child.communicate(f"2 {at}\n5 {at}\n0 0\n", timeout=120)
        assert child.returncode == 0
        ready, report = out.splitlines()
        assert ready == "ready"
        assert (json.loads(report)["outcomes"], json.loads(report)["batches"]) == (5, 3)  # 2, then 2 and 1

        upcoming = arrivals(payments, 2, LabelArrival)
        expected = [next(upcoming)(at) for _ in range(5)]
        assert [lab.event_id for lab in expected] == [p.event_id for p in payments] + [
            f"{p.event_id}~1" for p in payments[:2]]
        assert [lab.is_bad for lab in expected] == [True, False, True, False, True]
        assert all(lab.arrival_time_ms == at for lab in expected)
        memory.record_outcomes(expected)
        probe = [event(i, event_id=f"probe-{i}", customer_id=f"new-{i}", terminal_id=p.terminal_id,
                       event_time_ms=at + 2 * 3_600_000) for i, p in enumerate(payments)]
        assert store.enrich(probe) == memory.enrich(probe)
        assert any(s.terminal_labelled_1d > 0 for s in memory.decision_log([p.event_id for p in probe]) if s)
    finally:
        if child.poll() is None:
            child.kill()
        for key in store.client.scan_iter(f"{prefix}:*", count=10_000):
            store.client.unlink(key)
