"""Exactly once on the real broker and Redis: SIGKILL mid-stream, restart, count verdicts.

The worker runs as a subprocess (``tollgate run``) with the real pipeline (Redis
context, fresh model of the serving architecture, detector, rules). A read_committed
consumer then counts verdicts: every event id exactly once, no more, no fewer.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable

import pytest

from engine.wire.codec import Codec
from tests.support.worker_support import (
    WorkerProcess,
    delete_prefix,
    make_events,
    model_processes,
    process_exit_state,
    produce_events,
    read_committed,
    read_verdicts,
)

pytestmark = pytest.mark.integration

N_EVENTS = 20_000


def _count(verdicts) -> Counter:
    return Counter(v.event_id for v in verdicts)


def _kill_mid_stream_then_restart(wenv, tmp_path, events, codec, *, kill_after: int, env: dict[str, str],
                                  read_timeout: float,
                                  while_dead: Callable[[list[int]], None] | None = None) -> tuple[list, float]:
    """Stream ``events`` at 800/s to worker w1 and SIGKILL it once ``kill_after`` verdicts
    are committed — while it is deciding: some transactions committed, one probably open —
    then restart it under the same id (which aborts what the dead one left open) and read
    every verdict. ``while_dead(pids)`` runs between the kill and the restart, with the
    pids the dead worker's model processes had. Returns (verdicts, killed at, epoch ms)."""
    worker = WorkerProcess(wenv, "w1", tmp_path, **env)
    try:
        worker.wait_for("worker ready")
        children = model_processes(worker.proc.pid)
        producer = threading.Thread(target=produce_events,
                                    args=(wenv.bootstrap, wenv.events, events, codec), kwargs={"rate_per_s": 800})
        producer.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(read_committed(wenv.bootstrap, wenv.verdicts, 1, timeout=2, settle_s=0)) >= kill_after:
                break
        worker.kill()
        killed_at_ms = time.time() * 1000
        if while_dead is not None:
            while_dead(children)
        worker = WorkerProcess(wenv, "w1", tmp_path, **env)
        worker.wait_for("worker ready")
        producer.join()
        return read_verdicts(wenv.bootstrap, wenv.verdicts, len(events), codec, timeout=read_timeout), killed_at_ms
    finally:
        worker.terminate()


@pytest.mark.slow
def test_sigkill_mid_stream_then_restart_gives_exactly_one_verdict_per_event(wenv, tmp_path):
    codec = Codec()
    events = make_events(wenv.unique, N_EVENTS)
    # The shipped batching (a backlog's batches of up to settings.batch.max_events).
    verdicts, killed_at_ms = _kill_mid_stream_then_restart(wenv, tmp_path, events, codec, kill_after=3000,
                                                           env={}, read_timeout=120)
    counts = _count(verdicts)
    assert len(counts) == N_EVENTS, f"{N_EVENTS - len(counts)} events have no verdict"
    assert sum(counts.values()) == N_EVENTS, f"duplicates: {[k for k, n in counts.items() if n > 1][:5]}"
    assert set(counts) == {e.event_id for e in events}
    assert any(v.decided_at_ms > killed_at_ms for v in verdicts)  # the restarted worker did real work
    assert read_committed(wenv.bootstrap, wenv.dead_letters, 0, timeout=3, settle_s=1) == []


def test_with_the_model_in_its_own_process_sigkill_leaves_no_orphan_and_loses_nothing(wenv, tmp_path):
    """``settings.batch.infer_process``: the forward pass runs in a child process. A
    SIGKILLed worker's child must exit by itself (it reads end-of-file), and the restarted
    worker still leaves exactly one verdict per event."""
    codec = Codec()
    events = make_events(wenv.unique, 3_000)

    def no_orphan(children: list[int]) -> None:
        (child,) = children
        state = process_exit_state(child, timeout_s=15)
        assert state in ("gone", "Z"), f"model process {child} outlived its SIGKILLed worker ({state})"

    verdicts, _ = _kill_mid_stream_then_restart(wenv, tmp_path, events, codec, kill_after=800,
                                                env={"TOLLGATE_BATCH__INFER_PROCESS": "true"}, read_timeout=90,
                                                while_dead=no_orphan)
    counts = _count(verdicts)
    assert set(counts) == {e.event_id for e in events} and sum(counts.values()) == len(events)
    assert {v.model_version for v in verdicts} == {"v1"}


def test_on_a_redis_cluster_sigkill_then_restart_gives_exactly_one_verdict_per_event(wenv, tmp_path,
                                                                                   redis_cluster_url):
    """The same kill and restart with the context store on a three-master Redis Cluster."""
    import dataclasses

    from engine.wire.redisconn import connect

    on_cluster = dataclasses.replace(wenv, redis_url=redis_cluster_url)
    cluster = connect(redis_cluster_url, socket_timeout_s=10)
    cluster.set(f"{wenv.key_prefix}:model:serving", "v1")
    codec = Codec()
    events = make_events(wenv.unique, 3_000)
    try:
        verdicts, killed_at_ms = _kill_mid_stream_then_restart(on_cluster, tmp_path, events, codec, kill_after=800,
                                                               env={}, read_timeout=90)
        # the stream's own snapshots (warm-up records none: test_worker_warmup.py)
        recorded = len(set(cluster.scan_iter(f"{wenv.key_prefix}:snap:{{{wenv.unique}-*", count=10_000)))
    finally:
        delete_prefix(cluster, wenv.key_prefix)
    counts = _count(verdicts)
    assert set(counts) == {e.event_id for e in events} and sum(counts.values()) == len(events)
    assert any(v.decided_at_ms > killed_at_ms for v in verdicts)
    assert recorded == len(events)  # every event's context came from (and went to) the cluster


def test_sigterm_drains_commits_and_leaves_the_group(wenv, tmp_path):
    codec = Codec()
    events = make_events(wenv.unique, 2_000)
    worker = WorkerProcess(wenv, "w1", tmp_path)
    try:
        port = worker.health_port
        assert _status(port, "/readyz") in (503, 200)
        worker.wait_for("worker ready")
        assert _status(port, "/readyz") == 200 and _status(port, "/healthz") == 200
        produce_events(wenv.bootstrap, wenv.events, events, codec, rate_per_s=2000)
        names = ("tollgate_verdicts_total{", 'tollgate_stage_latency_ms_bucket{le="1.0",stage="infer"}',
                     'tollgate_stage_latency_ms_count{stage="emit"}', "tollgate_e2e_from_arrival_ms_bucket",
                     "tollgate_e2e_from_event_time_ms_bucket", "tollgate_batch_size_bucket",
                     'tollgate_consumer_lag{partition="0"}', 'tollgate_model_info{version="v1"}',
                     "tollgate_rules_info{", "tollgate_ready 1.0", "tollgate_degraded 0.0",
                     "tollgate_rules_active_version{")  # the rules stage's own metrics, same endpoint
        deadline = time.monotonic() + 30  # lag is refreshed once a second
        while not all(n in (text := _get(port, "/metrics")) for n in names) and time.monotonic() < deadline:
            time.sleep(0.2)
        for name in names:
            assert name in text, name
    finally:
        rc = worker.terminate()
    assert rc == 0, worker.tail()
    assert worker.logged("worker stopped")
    first = read_verdicts(wenv.bootstrap, wenv.verdicts, 0, codec, timeout=5, settle_s=1)
    # Whatever it decided before leaving is committed; a second worker finishes the rest.
    worker = WorkerProcess(wenv, "w2", tmp_path)
    try:
        worker.wait_for("worker ready")
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(events), codec, timeout=60)
    finally:
        worker.terminate()
    counts = _count(verdicts)
    assert len(first) > 0
    assert len(counts) == len(events) and sum(counts.values()) == len(events)


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
        return r.read().decode()


def _status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
