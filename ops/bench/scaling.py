"""Per-event costs for the capacity model in docs/scaling.md, measured.

Two parts (both by default):

``--redis``: the feature store's enrich on a single Redis and on a Redis Cluster, per
batch of B events drawn from many customers: round trips (sequential waits), commands
sent, Redis operations executed (``INFO commandstats`` deltas summed over every primary:
each ``redis.call`` inside a script counts), client CPU, wall time.

``--memory``: Redis memory per event on a single Redis, for the capacity model's memory
bound, from the engine bench's user events (5 % memos; ``ops/bench/engine_events.py``):
the decision log's snapshot (``{p}:snap``), the re-send claim (``{p}:seen``) and the
feedback worker's verdict-only join record (``{p}:fb:join``), each as ``MEMORY USAGE``
per key and as the server's ``used_memory`` growth per event (which adds the key table
and the TTL table; for the snapshot step, also the customer and terminal state the
events add, which is bounded per entity, not per event); then the size of a join record
holding an outcome, before and after its label is written (with a horizon it then keeps
only the outcome and the transaction's terminal and time).

``--feedback N``: the feedback worker's Redis side for N verdicts (batches of 500, as the
worker takes them) and outcomes for 3 % of them, on a single Redis and on a Redis
Cluster (where the join spreads over hash-tag groups, one transaction per group a batch
touches): client CPU, wall time, Redis operations and server CPU per verdict, for the
join and for the flush to the decision and label stores (Parquet in a temp dir).

``--workers 1,2``: K ``tollgate run`` worker processes on one 12-partition ``tx.events``;
a backlog of N events is produced first, then the workers start together and the run
ends when every verdict is committed. Reported: events/s from the first verdict to the
last, CPU seconds per event of the workers (and their model processes), bytes per
message on tx.events and tx.verdicts, Kafka transactions (micro-batches) per second per
worker (from each worker's /metrics).

    python ops/bench/scaling.py --redis-url redis://127.0.0.1:6379/0 \\
        --cluster-url redis+cluster://127.0.0.1:26379 --bootstrap 127.0.0.1:9092 --workers 1,2

Uses TOLLGATE_KAFKA_BOOTSTRAP / TOLLGATE_REDIS_URL / TOLLGATE_TEST_REDIS_CLUSTER_URL when
the flags are not given. A JSON line per measurement on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import resource
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

from engine.features.redis_store import RedisFeatureStore
from engine.records import Decision, TransactionEvent, Verdict
from engine.settings import Settings
from engine.wire.redisconn import connect

BASE_MS = 1_767_225_600_000


def _events(n: int, start: int, customers: int, tag: str) -> list[TransactionEvent]:
    rng = random.Random(start)
    out = []
    for i in range(start, start + n):
        c = rng.randrange(customers)
        out.append(TransactionEvent(
            f"{tag}-{i}", BASE_MS + i * 20, f"c{c}", f"a{c}", f"t{rng.randrange(max(1, customers // 4))}", "5411",
            round(rng.lognormvariate(3.5, 1.0), 2), "EUR", "card_present", "BE", device_id=f"d{c}"))
    return out


def _server_ops(client) -> int:
    """Commands executed so far on every primary (scripts' inner calls included). The
    server must be this benchmark's alone: anyone else's commands would count too."""
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        infos = list(client.info("commandstats", target_nodes=RedisCluster.PRIMARIES).values())
    else:
        infos = [client.info("commandstats")]
    # minus the INFO calls this function has made so far (one per node per call)
    return sum(int(v["calls"]) for info in infos for k, v in info.items()
               if k.startswith("cmdstat_") and k != "cmdstat_info")


def _server_cpu_s(client) -> float:
    """CPU seconds (user + system) every primary has used so far."""
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        infos = list(client.info("cpu", target_nodes=RedisCluster.PRIMARIES).values())
    else:
        infos = [client.info("cpu")]
    return sum(float(i["used_cpu_user"]) + float(i["used_cpu_sys"]) for i in infos)


def bench_redis(name: str, url: str, batch: int, batches: int, customers: int) -> dict:
    ns = f"bench-{uuid.uuid4().hex[:8]}"
    store = RedisFeatureStore(settings=Settings(redis={"url": url, "socket_timeout_s": 10}), namespace=ns)
    client = connect(url, socket_timeout_s=10)
    warm = _events(batch, 10_000_000, customers, ns)
    store.enrich(warm)
    rt0, cmd0, ops0, scpu0 = store.round_trips, store.commands, _server_ops(client), _server_cpu_s(client)
    cpu0, t0 = time.process_time(), time.perf_counter()
    for b in range(batches):
        store.enrich(_events(batch, b * batch, customers, ns))
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    ops, server_cpu = _server_ops(client) - ops0, _server_cpu_s(client) - scpu0
    n = batch * batches
    for key in client.scan_iter(f"*{ns}*", count=10_000):
        client.unlink(key)
    return {"part": "redis", "backend": name, "batch": batch, "customers": customers, "events": n,
            "round_trips_per_batch": (store.round_trips - rt0) / batches,
            "commands_per_batch": (store.commands - cmd0) / batches,
            "redis_ops_per_event": round(ops / n, 2),
            "redis_server_cpu_us_per_event": round(server_cpu / n * 1e6, 1),
            "client_cpu_us_per_event": round(cpu / n * 1e6, 1), "wall_us_per_event": round(wall / n * 1e6, 1)}


def _pass_verdict(e: TransactionEvent, *, reasons: tuple = (), model: str = "m-1", rules: str = "r-1") -> dict:
    """A pass verdict on ``e`` as the feedback worker receives it (Avro field layout)."""
    return Verdict(e.event_id, e.customer_id, Decision.PASS, 0.93, {"pass": 0.93, "review": 0.05, "reject": 0.02},
                   0.04, reasons, model, rules, 4.2, e.event_time_ms + 9, e.event_time_ms).to_dict()


def _chargeback(e: TransactionEvent) -> dict:
    """A chargeback for ``e`` a day later, naming neither terminal nor event time."""
    return {"event_id": e.event_id, "kind": "chargeback", "outcome_time_ms": e.event_time_ms + 86_400_000,
            "source": "issuer", "customer_id": None, "terminal_id": None}


def bench_memory(url: str, n: int) -> dict:
    from engine.records import Reason, ReasonKind, SourcePosition
    from engine.worker.dedupe import ReSendFilter
    from feedback.stream.joinstate import RedisJoinState
    from ops.bench.engine_events import realistic_events

    ns = f"bench-{uuid.uuid4().hex[:8]}"
    settings = Settings(redis={"url": url, "socket_timeout_s": 10})
    client = connect(url, socket_timeout_s=10)
    store = RedisFeatureStore(settings=settings, namespace=ns)
    events = [dataclasses.replace(b.event, source=SourcePosition("tx.events", i % 12, i))
              for i, b in enumerate(realistic_events(ns, n))]
    # What a served verdict carries, since its bytes are what is measured.
    reason = Reason(ReasonKind.MODEL, "threshold_pass", "p_pass 0.930 >= 0.600 (pass 0.93, review 0.05, reject 0.02)")
    verdicts = [_pass_verdict(e, reasons=(reason,), model="m-20261204-200100", rules="r-3f9c2a") for e in events]
    seen = ReSendFilter(client, f"{settings.redis.key_prefix}:{ns}", 7 * 86_400)
    join = RedisJoinState(client, f"{settings.redis.key_prefix}:{ns}", 45 * 86_400_000, 3_600_000)
    out: dict = {"part": "memory", "events": n, "memo_share": round(sum(e.memo is not None for e in events) / n, 3)}
    # Each step writes one kind of key for every event (256 a call, as a worker's batch).
    steps = (("snapshot", lambda lo, hi: store.enrich(events[lo:hi]), lambda e: store._k("snap", e.event_id)),
             ("seen_claim", lambda lo, hi: seen.owners(events[lo:hi]), lambda e: f"{seen._prefix}{e.event_id}"),
             ("join_verdict_only", lambda lo, hi: join.apply("verdict", verdicts[lo:hi]),
              lambda e: join.key(e.event_id)))
    for name, write, key in steps:
        before = int(client.info("memory")["used_memory"])
        for start in range(0, n, 256):
            write(start, start + 256)
        grown = int(client.info("memory")["used_memory"]) - before
        sample = events[:: max(1, n // 500)]
        usage = [int(client.memory_usage(key(e), samples=0) or 0) for e in sample]
        out[f"{name}_memory_usage_bytes"] = round(sum(usage) / len(usage))
        out[f"{name}_used_memory_per_event_bytes"] = round(grown / n)  # enrich: + the state events add
    # The records that hold an outcome (a small share of events, kept for the retention):
    # joined, then once written (with a horizon they keep only the outcome, where and when).
    sample = events[:: max(1, n // 500)]
    join.mark_decisions_written([e.event_id for e in sample])
    join.apply("outcome", [_chargeback(e) for e in sample])
    size = lambda: round(sum(int(client.memory_usage(join.key(e.event_id), samples=0) or 0)  # noqa: E731
                             for e in sample) / len(sample))
    out["join_with_outcome_memory_usage_bytes"] = size()
    join.mark_labels_written({e.event_id: 1 for e in sample}, {e.event_id: (e.terminal_id, e.event_time_ms)
                                                              for e in sample})
    out["join_outcome_written_memory_usage_bytes"] = size()
    for k in client.scan_iter(f"*{ns}*", count=10_000):
        client.unlink(k)
    return out


def bench_feedback(name: str, url: str, n: int, batch: int = 500) -> dict:
    from feedback.stream.process import FeedbackProcessor
    from ops.bench.engine_events import realistic_events

    ns = f"bench-{uuid.uuid4().hex[:8]}"
    client = connect(url, socket_timeout_s=10)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(redis={"url": url, "socket_timeout_s": 10, "key_prefix": f"tg-{ns}"},
                            paths={"state_dir": tmp, "examples_dir": Path(tmp) / "examples"})
        store = RedisFeatureStore(client, settings)
        events = [b.event for b in realistic_events(ns, n)]
        for start in range(0, n, 512):
            store.enrich(events[start:start + 512])  # the engine's decision log, before timing
        verdicts = [_pass_verdict(e) for e in events]
        outcomes = [_chargeback(e) for e in events[::33]]
        proc = FeedbackProcessor.from_settings(settings, client, store)
        out: dict = {"part": "feedback", "backend": name, "verdicts": n, "outcomes": len(outcomes),
                     "batch": batch, "join_groups": proc.join.groups}

        def measure(label: str, work) -> None:
            ops0, scpu0, cpu0, t0 = _server_ops(client), _server_cpu_s(client), time.process_time(), time.perf_counter()
            work()
            out[f"{label}_wall_us_per_verdict"] = round((time.perf_counter() - t0) / n * 1e6, 1)
            out[f"{label}_client_cpu_us_per_verdict"] = round((time.process_time() - cpu0) / n * 1e6, 1)
            out[f"{label}_redis_ops_per_verdict"] = round((_server_ops(client) - ops0) / n, 2)
            out[f"{label}_redis_server_cpu_us_per_verdict"] = round((_server_cpu_s(client) - scpu0) / n * 1e6, 1)

        def join() -> None:
            for start in range(0, n, batch):
                proc.on_batch("verdict", verdicts[start:start + batch])
            for start in range(0, len(outcomes), batch):
                proc.on_batch("outcome", outcomes[start:start + batch])

        measure("join", join)
        measure("flush", lambda: out.update(flushed=proc.flush().decisions_written))
    for key in client.scan_iter(f"*{ns}*", count=10_000):
        client.unlink(key)
    return out


def bench_workers(bootstrap: str, redis_url: str, workers: int, n_events: int, partitions: int) -> dict:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from engine.wire.codec import Codec
    from ops.bench.engine_io import scrape
    from tests.support.worker_support import (
        WorkerEnv,
        WorkerProcess,
        delete_prefix,
        make_events,
        produce_events,
        read_committed,
        save_fresh_model,
    )

    unique = f"scale{workers}{uuid.uuid4().hex[:6]}"
    tmp = Path(tempfile.mkdtemp(prefix="tollgate-bench-scaling-"))
    wenv = WorkerEnv(bootstrap, redis_url, unique, f"tx.events.{unique}", f"tx.verdicts.{unique}",
                     f"tx.events.dlq.{unique}", tmp / "models")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [(wenv.events, partitions), (wenv.verdicts, partitions), (wenv.dead_letters, 1)]
    for f in admin.create_topics([NewTopic(t, num_partitions=p, replication_factor=-1) for t, p in topics]).values():
        f.result(30)
    save_fresh_model(wenv.models_dir, "v1")
    client = connect(redis_url, socket_timeout_s=10)
    client.set(f"{wenv.key_prefix}:model:serving", "v1")
    codec = Codec()
    events = make_events(unique, n_events, customers=5000)
    produce_events(bootstrap, wenv.events, events, codec)
    event_bytes = sum(len(codec.encode_event(e)) + len(e.customer_id) for e in events) / n_events
    procs: list[WorkerProcess] = []
    try:
        procs = [WorkerProcess(wenv, f"w{i}", tmp) for i in range(workers)]
        for p in procs:
            p.wait_for("worker ready", timeout=300)
        cpu0 = sum(_tree_cpu(p.proc.pid) for p in procs)
        t0 = time.monotonic()
        # One read_committed consumer counts verdicts as they are committed (cheap next to
        # the workers: it decodes nothing).
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{unique}",
                           "isolation.level": "read_committed", "enable.auto.commit": False})
        parts = reader.list_topics(wenv.verdicts, timeout=10).topics[wenv.verdicts].partitions
        reader.assign([TopicPartition(wenv.verdicts, p, OFFSET_BEGINNING) for p in parts])
        seen, deadline = 0, t0 + 900
        try:
            while seen < n_events and time.monotonic() < deadline:
                seen += sum(1 for m in reader.consume(1000, 0.5) if m.error() is None)
        finally:
            reader.close()
        done = time.monotonic()
        cpu = sum(_tree_cpu(p.proc.pid) for p in procs) - cpu0
        batches = sum(scrape(p.health_port).get(("tollgate_batch_size_count", ""), 0.0) for p in procs)
        verdicts = read_committed(bootstrap, wenv.verdicts, n_events, timeout=60, settle_s=1)
    finally:
        for p in procs:
            p.terminate()
        admin.delete_topics([t for t, _ in topics])
        delete_prefix(client, wenv.key_prefix)
    verdict_bytes = sum(len(m.value()) + len(m.key() or b"") for m in verdicts) / max(1, len(verdicts))
    span = done - t0
    return {"part": "workers", "workers": workers, "partitions": partitions, "events": n_events,
            "verdicts": len(verdicts), "events_per_s": round(len(verdicts) / span, 1),
            "worker_cpu_ms_per_event": round(cpu / max(1, len(verdicts)) * 1000, 3),
            "transactions_per_s_per_worker": round(batches / span / workers, 1),
            "mean_batch": round(len(verdicts) / max(1.0, batches), 1),
            "tx_events_bytes_per_msg": round(event_bytes, 1), "tx_verdicts_bytes_per_msg": round(verdict_bytes, 1)}


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children (the model process)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--redis-url", default=os.environ.get("TOLLGATE_REDIS_URL"))
    ap.add_argument("--cluster-url", default=os.environ.get("TOLLGATE_TEST_REDIS_CLUSTER_URL"))
    ap.add_argument("--bootstrap", default=os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP"))
    ap.add_argument("--redis", action="store_true", help="only the Redis part")
    ap.add_argument("--memory", type=int, default=0, metavar="N",
                    help="Redis memory per event over N user events on --redis-url (0: skip)")
    ap.add_argument("--feedback", type=int, default=0, metavar="N",
                    help="the feedback join and flush over N verdicts, single and cluster (0: skip)")
    ap.add_argument("--workers", default="", help="comma list of worker counts (e.g. 1,2); empty: skip")
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--events", type=int, default=20_000, help="backlog per worker run")
    ap.add_argument("--partitions", type=int, default=12)
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made
    if args.feedback:
        for name, url in (("single", args.redis_url), ("cluster", args.cluster_url)):
            if url:
                print(json.dumps(bench_feedback(name, url, args.feedback)), flush=True)
    if args.memory:
        print(json.dumps(bench_memory(args.redis_url, args.memory)), flush=True)
    if args.redis or not (args.workers or args.memory or args.feedback):
        for batch in (64, 512):
            for name, url in (("single", args.redis_url), ("cluster", args.cluster_url)):
                if url:
                    print(json.dumps(bench_redis(name, url, batch, args.batches, customers=5000)), flush=True)
    for k in filter(None, args.workers.split(",")):
        print(json.dumps(bench_workers(args.bootstrap, args.redis_url, int(k), args.events, args.partitions)),
              flush=True)
    print(json.dumps({"max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024}), file=sys.stderr)


if __name__ == "__main__":
    main()
