"""A worker's warm-up decides synthetic events through the whole path but never writes
the live context store: after a start and a short stream, Redis holds the stream's
context and nothing of the warm-up's (``__warmup__`` ids)."""

from __future__ import annotations

import pytest

from engine.wire.codec import Codec
from tests.support.worker_support import (
    WorkerProcess,  # noqa: F401 (wenv: fixture)
    make_events,
    produce_events,
    read_verdicts,
)

pytestmark = pytest.mark.integration


def test_warm_up_leaves_nothing_in_the_live_context_store(wenv, redis_client, tmp_path):
    codec = Codec()
    events = make_events(wenv.unique, 60)
    worker = WorkerProcess(wenv, "w1", tmp_path)
    try:
        ready = worker.wait_for("worker ready", timeout=180)
        assert float(ready["warmup_s"]) > 0  # it did warm up
        produce_events(wenv.bootstrap, wenv.events, events, codec)
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(events), codec, timeout=120)
    finally:
        worker.stop_quietly()
    assert sorted(v.event_id for v in verdicts) == sorted(e.event_id for e in events)
    keys = [k.decode() for k in redis_client.scan_iter(f"{wenv.key_prefix}:*", count=10_000)]
    assert not [k for k in keys if "__warmup__" in k], [k for k in keys if "__warmup__" in k][:5]
    snapshots = [k for k in keys if ":snap:" in k]
    assert len(snapshots) == len(events)  # the stream's own context did go to Redis
