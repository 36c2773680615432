"""Scale out: two workers in one group share the partitions; a worker joining and a
worker leaving (SIGTERM) both rebalance, and no verdict is lost or duplicated."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from engine.codec import Codec
from tests.integration.worker_support import (
    WorkerProcess, make_events, produce_events, read_committed, read_verdicts, wenv,  # noqa: F401 (fixture)
)

pytestmark = pytest.mark.integration


def _assigned(worker: WorkerProcess) -> list[str]:
    return [line["partitions"] for line in worker.logged("partitions assigned")]


def _wait(condition, worker: WorkerProcess, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, worker.tail()
        time.sleep(0.1)


def _verdicts_at_least(wenv, n: int, worker: WorkerProcess) -> None:
    """Until ``n`` verdicts are committed: the stream is flowing (instead of a sleep)."""
    _wait(lambda: len(read_committed(wenv.bootstrap, wenv.verdicts, 1, timeout=2, settle_s=0)) >= n, worker)


def test_two_workers_share_partitions_and_rebalances_lose_and_duplicate_nothing(wenv, tmp_path):
    codec = Codec()
    events = make_events(wenv.unique, 6_000)
    w1 = WorkerProcess(wenv, "w1", tmp_path)
    w2 = None
    try:
        w1.wait_for("worker ready")
        producer = threading.Thread(target=produce_events, args=(wenv.bootstrap, wenv.events, events, codec),
                                    kwargs={"rate_per_s": 400})
        producer.start()
        _verdicts_at_least(wenv, 400, w1)
        w2 = WorkerProcess(wenv, "w2", tmp_path)  # joins: cooperative rebalance moves some partitions
        _wait(lambda: any(p != "[]" for p in _assigned(w2)), w2)  # cooperative: 2nd round moves them
        assert w1.logged("partitions revoked"), "w1 must give partitions to w2"
        _verdicts_at_least(wenv, 1_600, w2)  # both have been deciding a while
        assert w1.terminate() == 0  # leaves: its partitions move to w2 at once
        producer.join()
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(events), codec, timeout=90)
    finally:
        w1.stop_quietly()
        if w2 is not None:
            w2.terminate()

    counts = Counter(v.event_id for v in verdicts)
    assert set(counts) == {e.event_id for e in events}
    assert sum(counts.values()) == len(events), f"duplicates: {[k for k, n in counts.items() if n > 1][:5]}"
    assert len([p for p in _assigned(w2) if p != "[]"]) >= 2  # its share, then w1's after it left


def test_a_second_instance_with_the_same_worker_id_fences_the_zombie(wenv, tmp_path):
    """A worker that is still alive but has been replaced (a zombie: paused VM, network
    partition) must not commit anything after its replacement started."""
    codec = Codec()
    events = make_events(wenv.unique, 3_000)
    zombie = WorkerProcess(wenv, "w1", tmp_path)
    replacement = None
    try:
        zombie.wait_for("worker ready")
        half = len(events) // 2
        producer = threading.Thread(target=produce_events, args=(wenv.bootstrap, wenv.events, events[:half], codec),
                                    kwargs={"rate_per_s": 400})
        producer.start()
        _verdicts_at_least(wenv, 400, zombie)
        replacement = WorkerProcess(wenv, "w1", tmp_path)  # same id: init_transactions fences the first
        replacement.wait_for("worker ready")
        producer.join()
        # Events keep coming after the replacement started, however long it took to warm
        # up: the zombie still holds partitions until the rebalance, and its next
        # transaction must be refused.
        producer = threading.Thread(target=produce_events, args=(wenv.bootstrap, wenv.events, events[half:], codec),
                                    kwargs={"rate_per_s": 400})
        producer.start()
        deadline = time.monotonic() + 60
        while zombie.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert zombie.proc.returncode == 3, zombie.tail()  # exited on the fatal "fenced" error
        assert zombie.logged("fatal Kafka error, exiting")
        producer.join()
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(events), codec, timeout=90)
    finally:
        zombie.stop_quietly()
        if replacement is not None:
            replacement.terminate()
    counts = Counter(v.event_id for v in verdicts)
    assert set(counts) == {e.event_id for e in events} and sum(counts.values()) == len(events)
