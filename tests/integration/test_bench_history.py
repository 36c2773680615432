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
