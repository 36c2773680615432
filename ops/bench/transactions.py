"""What one micro-batch transaction costs on the real broker, with the engine's producer
retry backoff and with librdkafka's default, side by side.

    python ops/bench/transactions.py [--transactions 300] [--records 8] [--rounds 3]
                                     [--backoffs 5 100]

Each transaction is what the worker commits per batch (``engine.emit``): ``--records``
verdict-sized records to a 6-partition topic, the consumed offsets of 6 partitions sent
with a real consumer group's metadata, then commit — through ``TransactionalEmitter``,
so the producer is configured exactly as the worker's (``producer_config``), save
``KafkaSettings.producer_retry_backoff_ms``. Transactions run back to back, as under
load. Printed per backoff: p50/p95/p99 and mean of

* ``commit``  — ``commit_batch`` (begin, produce, send offsets, commit), wall ms;
* ``visible`` — commit_batch start until a read_committed consumer has all its records:
                what the transaction adds to a verdict's end-to-end latency.

Why it matters: a transaction's AddOffsetsToTxn often reaches the coordinator while it
is still writing the previous commit's markers and is answered CONCURRENT_TRANSACTIONS;
the producer retries after ``retry.backoff.ms``. With librdkafka's default (100 ms) that
retry is most of the tail. Backoffs are measured in alternating rounds, so the
machine's noise falls on both alike.
"""

from __future__ import annotations

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
from _common import percentile

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from engine.emit import TransactionalEmitter  # noqa: E402
from engine.settings import KafkaSettings, Settings  # noqa: E402

PARTITIONS = 6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=300, help="per backoff, over all rounds")
    ap.add_argument("--records", type=int, default=8, help="records per transaction (a quiet stream's batch)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per backoff")
    ap.add_argument("--backoffs", type=int, nargs="+", default=[5, 100], help="retry.backoff.ms values")
    args = ap.parse_args()

    bootstrap = os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
    u = uuid.uuid4().hex[:8]
    source, sink = f"bench.txn.src.{u}", f"bench.txn.out.{u}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in (source, sink)]).values():
        f.result(30)
    try:
        results = _run(bootstrap, source, sink, u, args)
    finally:
        for f in admin.delete_topics([source, sink]).values():
            try:
                f.result(30)
            except Exception:  # noqa: BLE001 - cleanup only
                pass
    print(f"{args.records} records per transaction, {args.transactions} transactions per backoff "
          f"in {args.rounds} alternating rounds; wall ms")
    print(f"{'retry.backoff.ms':>16} {'':8} {'p50':>7} {'p95':>7} {'p99':>7} {'mean':>7}")
    for backoff, series in results.items():
        for name, xs in series.items():
            print(f"{backoff:>16} {name:8} {percentile(xs, 50):7.2f} {percentile(xs, 95):7.2f} "
                  f"{percentile(xs, 99):7.2f} {statistics.fmean(xs):7.2f}")
    base, ours = results[max(results)], results[min(results)]
    print(f"\nvisible p99: {percentile(base['visible'], 99):.1f} ms at {max(results)} ms backoff vs "
          f"{percentile(ours['visible'], 99):.1f} ms at {min(results)} ms "
          f"({percentile(base['visible'], 99) / percentile(ours['visible'], 99):.1f}x)")


def _run(bootstrap: str, source: str, sink: str, u: str, args: argparse.Namespace) -> dict[int, dict[str, list]]:
    # The group whose offsets the transactions commit: a real member, as the worker is.
    feeder = Producer({"bootstrap.servers": bootstrap})
    for p in range(PARTITIONS):
        feeder.produce(source, value=b"x", partition=p)
    feeder.flush(30)
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-txn-{u}", "enable.auto.commit": False,
                       "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    member.subscribe([source])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.1)
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-txn-r-{u}",
                       "isolation.level": "read_committed", "fetch.wait.max.ms": 5})
    reader.assign([TopicPartition(sink, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    emitters = {}
    for backoff in args.backoffs:
        settings = Settings(kafka=KafkaSettings(bootstrap=bootstrap, producer_retry_backoff_ms=backoff))
        emitters[backoff] = TransactionalEmitter(settings, f"bench-{u}-{backoff}", encode_verdict=bytes,
                                                 encode_dead_letter=bytes, verdicts_topic=sink)
        emitters[backoff].start()
    value = b"v" * 160  # about an encoded verdict
    results: dict[int, dict[str, list]] = {b: {"commit": [], "visible": []} for b in args.backoffs}
    per_round = max(1, args.transactions // args.rounds)
    n = 0
    try:
        for _ in range(args.rounds):
            for backoff, emitter in emitters.items():
                for _ in range(per_round):
                    n += 1
                    records = [(sink, f"c{(n * args.records + i) % 97}".encode(), value, None)
                               for i in range(args.records)]
                    offsets = {(source, p): n for p in range(PARTITIONS)}
                    t0 = time.perf_counter()
                    emitter.commit_batch([], [], offsets, member.consumer_group_metadata(), records)
                    t1 = time.perf_counter()
                    seen = 0
                    while seen < args.records:
                        m = reader.poll(5)
                        if m is None:
                            raise RuntimeError("a committed transaction's records did not arrive within 5 s")
                        seen += m.error() is None
                    t2 = time.perf_counter()
                    results[backoff]["commit"].append((t1 - t0) * 1000)
                    results[backoff]["visible"].append((t2 - t0) * 1000)
    finally:
        for emitter in emitters.values():
            emitter.close()
        member.close()
        reader.close()
    return results


if __name__ == "__main__":
    main()
