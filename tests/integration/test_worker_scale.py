"""Scale out: workers in one group share the partitions; a worker joining and a worker
leaving (SIGTERM) both rebalance, and no verdict is lost or duplicated. With 12
partitions and up to four workers, per-customer order holds and a model hot swap and a
rules reload reach every worker."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections import Counter, defaultdict

import pytest

from engine.codec import Codec
from tests.integration.worker_support import (
    REPO, EventStream, WorkerEnv, WorkerProcess, delete_prefix, make_events, produce_events, read_committed,
    read_verdicts, save_fresh_model, wait_until, wenv,  # noqa: F401 (wenv: fixture)
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


def test_twelve_partitions_workers_join_and_leave_order_holds_and_swaps_reach_all(
        stack, unique, kafka_topics, redis_client, tmp_path):
    codec = Codec()
    rules_dir = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules_dir)
    env = WorkerEnv(stack.kafka_bootstrap, stack.redis_url, unique, events=kafka_topics("tx.events", 12),
                    verdicts=kafka_topics("tx.verdicts", 12), dead_letters=kafka_topics("tx.events.dlq", 1),
                    models_dir=tmp_path / "models",
                    extra={"TOLLGATE_BATCH__INFER_PROCESS": "false", "TOLLGATE_PATHS__RULES_DIR": str(rules_dir),
                           "TOLLGATE_HOTSWAP_CHECK_S": "60"})  # a swap within seconds: pub/sub reached it
    save_fresh_model(env.models_dir, "v1")
    save_fresh_model(env.models_dir, "v2", seed=7)
    redis_client.set(f"{env.key_prefix}:model:serving", "v1")
    workers = {wid: WorkerProcess(env, wid, tmp_path) for wid in ("w1", "w2", "w3")}
    stream = EventStream(env, codec, rate_per_s=300)
    try:
        for w in workers.values():
            w.wait_for("worker ready", timeout=180)
        stream.start()
        wait_until(lambda: len(read_committed(env.bootstrap, env.verdicts, 1, timeout=2, settle_s=0)) >= 300,
                   120, "first verdicts")
        workers["w4"] = WorkerProcess(env, "w4", tmp_path)  # joins mid-stream: four workers
        _wait(lambda: any(p != "[]" for p in _assigned(workers["w4"])), workers["w4"], timeout=180)
        assert workers["w2"].terminate() == 0  # leaves mid-stream
        live = [workers[w] for w in ("w1", "w3", "w4")]
        wait_until(lambda: sum(len(_assigned(w)) for w in live) >= 4, 60, "w2's partitions reassigned")

        redis_client.set(f"{env.key_prefix}:model:serving", "v2")
        redis_client.publish(f"{env.key_prefix}:model:events", json.dumps({"version": "v2", "action": "promote"}))
        swapped_at = max(w.wait_for("model swapped", timeout=90)["ts"] for w in live)
        (rules_dir / "policy.yaml").write_text((rules_dir / "policy.yaml").read_text() + "\n# reloaded\n")
        for w in live:
            wait_until(lambda w=w: any(str(line.get("msg", "")).startswith("rules: swapped") for line in w.lines()),
                       90, f"{w.worker_id} reloads the rules")
        time.sleep(2.0)  # a little stream after both swaps, decided by every live worker
        stream.stop_and_join()
        messages = read_committed(env.bootstrap, env.verdicts, stream.produced, timeout=180)
    finally:
        stream.stop_and_join()
        for w in workers.values():
            w.stop_quietly()
        delete_prefix(redis_client, env.key_prefix)

    assert not stream.errors, stream.errors[:3]
    verdicts = [codec.decode_verdict(m.value()) for m in messages]
    counts = Counter(v.event_id for v in verdicts)
    assert set(counts) == {e.event_id for e in make_events(unique, stream.sent)}
    assert sum(counts.values()) == stream.sent, f"duplicates: {[k for k, n in counts.items() if n > 1][:5]}"
    # Per-customer order: a customer's verdicts share one partition (keyed by customer),
    # in the order its events were produced (event ids count up).
    by_customer: dict[bytes, list[tuple[int, int, int]]] = defaultdict(list)
    for m, v in zip(messages, verdicts):
        by_customer[m.key()].append((m.partition(), m.offset(), int(v.event_id.rsplit("-", 1)[1])))
    for key, rows in by_customer.items():
        assert len({p for p, _, _ in rows}) == 1, key
        in_offset_order = [i for _, _, i in sorted(rows)]
        assert in_offset_order == sorted(in_offset_order), f"customer {key!r} out of order"
    after = [v for v in verdicts if v.decided_at_ms > swapped_at * 1000]
    assert after and {v.model_version for v in after} == {"v2"}
