"""One verdict per event id (issue 20, item 3), on the real broker and Redis.

Upstream re-sends — the same event id again, on another partition (another key) or
the same one (same key, a later offset), inside one batch or hours later — are dropped
and counted in ``tollgate_resent_events_total``; across a worker restart too. The
SIGKILL tests in test_worker_exactly_once.py cover the other half: a claim written by
a worker killed before its commit never costs the original its verdict.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from engine.wire.codec import Codec
from tests.support.worker_support import (
    WorkerProcess,
    make_events,
    metric,
    produce_events,
    read_verdicts,
    wait_until,
)

pytestmark = pytest.mark.integration


def test_resent_event_ids_get_no_second_verdict_across_partitions_batches_and_a_restart(wenv, tmp_path):
    codec = Codec()
    originals = make_events(wenv.unique, 300)
    # Re-sends: the same event id; half under another key (so, mostly, another partition),
    # half exactly as sent (same partition, later offset); the payload may differ too (a
    # gateway retry can carry a new timestamp), which must not matter.
    elsewhere = [replace(e, customer_id=e.customer_id + "-retry") for e in originals[:50]]
    exact = originals[50:100]
    worker = WorkerProcess(wenv, "w1", tmp_path)
    try:
        worker.wait_for("worker ready")
        produce_events(wenv.bootstrap, wenv.events, originals + originals[:20], codec)  # some twice at once
        read_verdicts(wenv.bootstrap, wenv.verdicts, len(originals), codec, timeout=90)
        produce_events(wenv.bootstrap, wenv.events, elsewhere + exact, codec)
        port = worker.health_port
        wait_until(lambda: metric(port, "tollgate_resent_events_total") >= 120, 90, "the re-sends to be dropped")
        assert metric(port, "tollgate_resent_events_total") == 120
    finally:
        assert worker.terminate() == 0, worker.tail()
    # A new worker (another id, so not a restart of the same one) after the first left.
    fresh = make_events(wenv.unique, 100, start=300)
    worker = WorkerProcess(wenv, "w2", tmp_path)
    try:
        worker.wait_for("worker ready")
        produce_events(wenv.bootstrap, wenv.events, originals[100:160] + fresh, codec)
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(originals) + len(fresh), codec, timeout=90)
        port = worker.health_port
        wait_until(lambda: metric(port, "tollgate_resent_events_total") >= 60, 60, "the late re-sends")
        assert metric(port, "tollgate_resent_events_total") == 60
    finally:
        worker.terminate()
    counts = Counter(v.event_id for v in verdicts)
    assert set(counts) == {e.event_id for e in originals + fresh}
    assert sum(counts.values()) == len(originals) + len(fresh), [k for k, n in counts.items() if n > 1][:5]
    by_id = {v.event_id: v for v in verdicts}
    assert all(by_id[e.event_id].customer_id == e.customer_id for e in originals[:50])  # the original decided


def test_the_horizon_setting_zero_turns_the_check_off(wenv, tmp_path):
    codec = Codec()
    events = make_events(wenv.unique, 40)
    worker = WorkerProcess(wenv, "w1", tmp_path, TOLLGATE_WORKER__DEDUPE_HORIZON_S="0")
    try:
        worker.wait_for("worker ready")
        produce_events(wenv.bootstrap, wenv.events, events + events, codec)
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, 2 * len(events), codec, timeout=90)
    finally:
        worker.terminate()
    assert len(verdicts) == 2 * len(events)
