"""Scale out: workers in one group share the partitions; a worker joining and a worker
leaving (SIGTERM) both rebalance, and no verdict is lost or duplicated. With 12
partitions and up to four workers, per-customer order holds and a model hot swap and a
rules reload reach every worker."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections import Counter, defaultdict

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from engine.wire.codec import Codec
from tests.support.worker_support import (
    REPO,
    EventStream,
    WorkerEnv,
    WorkerProcess,
    delete_prefix,
    make_events,
    produce_events,
    read_committed,
    read_verdicts,  # noqa: F401 (wenv: fixture)
    save_fresh_model,
    wait_until,
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


def _static_members(env: WorkerEnv) -> set[str]:
    """The ``group.instance.id`` of each member the group coordinator holds now."""
    admin = AdminClient({"bootstrap.servers": env.bootstrap})
    group = f"engine-{env.unique}"
    described = admin.describe_consumer_groups([group], request_timeout=20)[group].result(timeout=30)
    return {m.group_instance_id for m in described.members}


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
        # Static membership (the default) skips the LeaveGroup on close; the worker's
        # clean stop sends it anyway, so w1 is gone now, not after the session timeout.
        assert _static_members(wenv) == {f"engine-{wenv.unique}-w2"}
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


@pytest.mark.parametrize("membership", ["dynamic", "static"])
def test_a_second_instance_with_the_same_worker_id_fences_the_zombie(wenv, tmp_path, membership):
    """A worker that is still alive but has been replaced (a zombie: paused VM, network
    partition) must not commit anything after its replacement started. Dynamic
    membership: the zombie's next transaction is fenced. Static: the group fences its
    consumer first (a fatal consumer error, which must end it too)."""
    codec = Codec()
    events = make_events(wenv.unique, 3_000)
    static = {"TOLLGATE_WORKER__STATIC_MEMBERSHIP": "true" if membership == "static" else "false"}
    zombie = WorkerProcess(wenv, "w1", tmp_path, **static)
    replacement = None
    try:
        zombie.wait_for("worker ready")
        half = len(events) // 2
        producer = threading.Thread(target=produce_events, args=(wenv.bootstrap, wenv.events, events[:half], codec),
                                    kwargs={"rate_per_s": 400})
        producer.start()
        _verdicts_at_least(wenv, 400, zombie)
        replacement = WorkerProcess(wenv, "w1", tmp_path, **static)  # same id: init_transactions fences the first
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


def _committed(env: WorkerEnv) -> int:
    """Events decided and committed so far: the group's committed offsets on the events
    topic (written in the verdicts' transactions), one request instead of re-reading
    every verdict."""
    probe = Consumer({"bootstrap.servers": env.bootstrap, "group.id": f"engine-{env.unique}",
                      "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        committed = probe.committed([TopicPartition(env.events, p) for p in range(12)], timeout=20)
    finally:
        probe.close()
    return sum(max(tp.offset, 0) for tp in committed)


def _owns_partitions(worker: WorkerProcess) -> bool:
    return any(p != "[]" for p in _assigned(worker))


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the group's waits are bounded one by one; this bounds the sum on a loaded host
def test_twelve_partitions_one_two_four_workers_join_killed_and_stopped_exactly_once_order_swaps_reach_all(
        stack, unique, kafka_topics, redis_client, tmp_path):
    """12 partitions; the group grows 1 → 2 → 4 workers mid-stream, a model hot swap and a
    rules reload reach all four, then one is SIGKILLed and one SIGTERMed (4 → 2): every
    event gets exactly one verdict (read_committed), a customer's verdicts stay in one
    partition in production order, and everything decided after the swaps is v2 under
    the reloaded rules."""
    codec = Codec()
    rules_dir = tmp_path / "rules"
    shutil.copytree(REPO / "rules", rules_dir)
    env = WorkerEnv(stack.kafka_bootstrap, stack.redis_url, unique, events=kafka_topics("tx.events", 12),
                    verdicts=kafka_topics("tx.verdicts", 12), dead_letters=kafka_topics("tx.events.dlq", 1),
                    models_dir=tmp_path / "models",
                    extra={"TOLLGATE_BATCH__INFER_PROCESS": "false", "TOLLGATE_PATHS__RULES_DIR": str(rules_dir),
                           "TOLLGATE_HOTSWAP_CHECK_S": "60",  # a swap within seconds: pub/sub reached it
                           # the SIGKILLed worker's open transaction is aborted by the broker after
                           # this (nobody restarts its id); until then read_committed waits on it
                           "TOLLGATE_KAFKA__TRANSACTION_TIMEOUT_MS": "15000"})
    save_fresh_model(env.models_dir, "v1")
    save_fresh_model(env.models_dir, "v2", seed=7)
    redis_client.set(f"{env.key_prefix}:model:serving", "v1")
    workers = {"w1": WorkerProcess(env, "w1", tmp_path)}
    stream = EventStream(env, codec, rate_per_s=250)
    try:
        workers["w1"].wait_for("worker ready", timeout=180)
        stream.start()
        wait_until(lambda: _committed(env) >= 250, 120, "w1 alone decides")  # one worker, 12 partitions
        workers["w2"] = WorkerProcess(env, "w2", tmp_path)  # two workers
        _wait(lambda: _owns_partitions(workers["w2"]), workers["w2"], timeout=180)
        for wid in ("w3", "w4"):  # four workers
            workers[wid] = WorkerProcess(env, wid, tmp_path)
        for wid in ("w3", "w4"):
            _wait(lambda wid=wid: _owns_partitions(workers[wid]), workers[wid], timeout=180)
        done = _committed(env)
        wait_until(lambda: _committed(env) >= done + 250, 120, "four workers decide")

        redis_client.set(f"{env.key_prefix}:model:serving", "v2")
        redis_client.publish(f"{env.key_prefix}:model:events", json.dumps({"version": "v2", "action": "promote"}))
        swapped_at = max(w.wait_for("model swapped", timeout=120)["ts"] for w in workers.values())
        (rules_dir / "policy.yaml").write_text((rules_dir / "policy.yaml").read_text() + "\n# reloaded\n")
        for w in workers.values():
            wait_until(lambda w=w: _rules_swapped(w), 120, f"{w.worker_id} reloads the rules")

        workers["w4"].kill()  # removed by SIGKILL: its partitions move after the session timeout
        assert workers["w3"].terminate() == 0  # removed by SIGTERM: it drains, commits and leaves
        # The stream outlasts both rebalances: more events decided after the last reload.
        target = stream.sent + 250
        wait_until(lambda: _committed(env) >= target, 180, "two workers decide on")
        stream.stop_and_join()
        messages = read_committed(env.bootstrap, env.verdicts, stream.produced, timeout=180)
    finally:
        stream.stop_and_join()
        for w in workers.values():
            w.stop_quietly()
        delete_prefix(redis_client, env.key_prefix)

    assert not stream.errors, stream.errors[:3]
    assert stream.produced == stream.sent
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
    # Every worker decided something (w1 alone first, then each after it joined).
    assert all(w.logged("first verdicts committed") for w in workers.values()), \
        [w.worker_id for w in workers.values() if not w.logged("first verdicts committed")]
    after_swap = [v for v in verdicts if v.decided_at_ms > swapped_at * 1000]
    assert after_swap and {v.model_version for v in after_swap} == {"v2"}
    assert {v.model_version for v in verdicts} == {"v1", "v2"}
    # The rules reload: every worker moved from the same set to the same new one, and the
    # last verdict of every partition (the stream went on after both removals) was
    # decided under the new set. (A batch prepared just before a reload keeps its set.)
    reloads = {re.match(r"rules: swapped (\S+) -> (\S+)", _rules_swapped(w)[-1]["msg"]).groups()
               for w in workers.values()}
    assert len(reloads) == 1, reloads
    (old_rules, new_rules), = reloads
    assert old_rules != new_rules
    last_by_partition = {m.partition(): v for m, v in sorted(zip(messages, verdicts), key=lambda mv: mv[0].offset())}
    assert {v.rules_version for v in last_by_partition.values()} == {new_rules}
    assert old_rules in {v.rules_version for v in verdicts}
    assert {m.partition() for m in messages} == set(range(12))


def _rules_swapped(worker: WorkerProcess) -> list[dict]:
    return [line for line in worker.lines() if str(line.get("msg", "")).startswith("rules: swapped")]
