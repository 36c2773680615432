"""What one micro-batch transaction costs on the real broker: the engine's order of calls
and producer retry backoff against the order and backoffs it used before, side by side.

    python ops/bench/transactions.py [--transactions 300] [--records 8] [--rounds 3]
                                     [--variants offsets-first:1 records-first:5 records-first:100]

Each transaction is what the worker commits per batch (``engine.stages.emit``): ``--records``
verdict-sized records to a 6-partition topic, the consumed offsets of 6 partitions sent
with a real consumer group's metadata, then commit — through ``TransactionalEmitter``,
so the producer is configured exactly as the worker's (``producer_config``), save
``KafkaSettings.producer_retry_backoff_ms``. A variant is ``ORDER:BACKOFF``:

* ``offsets-first`` — ``TransactionalEmitter.commit_batch`` as the worker runs it: begin,
  send offsets, produce, commit;
* ``records-first`` — the order before: begin, produce, send offsets, commit (the same
  producer, driven by ``engine_relay.commit_records_first``).

Transactions run back to back, as under load: the next begins as soon as the previous
one has committed, and a read_committed reader on a thread of its own notes when each
transaction's records arrive. Printed per variant: p50/p95/p99 and mean of

* ``commit``  — the whole transaction (begin … commit), wall ms;
* ``visible`` — its start until a read_committed consumer has all its records: what the
                transaction adds to a verdict's end-to-end latency.

Why it matters: a transaction's first request often reaches the coordinator while it is
still writing the previous commit's markers, and is answered CONCURRENT_TRANSACTIONS.
librdkafka retries AddOffsetsToTxn after ``retry.backoff.ms`` (100 ms by default), but
AddPartitionsToTxn — which the first produce triggers — after a fixed 20 ms; sending the
offsets first makes the cheap retry the one that waits. Variants are measured in
alternating rounds, so the machine's noise falls on all alike.
"""

from __future__ import annotations

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
from _common import percentile
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from engine.settings import KafkaSettings, Settings  # noqa: E402
from engine.stages.emit import TransactionalEmitter  # noqa: E402
from ops.bench.engine_relay import commit_records_first  # noqa: E402

PARTITIONS = 6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=300, help="per variant, over all rounds")
    ap.add_argument("--records", type=int, default=8, help="records per transaction (a quiet stream's batch)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds per variant")
    ap.add_argument("--variants", nargs="+", default=["offsets-first:1", "records-first:5", "records-first:100"],
                    help="ORDER:RETRY_BACKOFF_MS, ORDER offsets-first (the engine's) or records-first")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made
    for v in args.variants:
        order, _, backoff = v.partition(":")
        if order not in ORDERS or not backoff.isdigit():
            ap.error(f"variant {v!r}: expected offsets-first:N or records-first:N")

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
    print(f"{args.records} records per transaction, {args.transactions} transactions per variant "
          f"in {args.rounds} alternating rounds; wall ms")
    print(f"{'variant':>20} {'':8} {'p50':>7} {'p95':>7} {'p99':>7} {'mean':>7}")
    for variant, series in results.items():
        for name, xs in series.items():
            print(f"{variant:>20} {name:8} {percentile(xs, 50):7.2f} {percentile(xs, 95):7.2f} "
                  f"{percentile(xs, 99):7.2f} {statistics.fmean(xs):7.2f}")
    ours = args.variants[0]
    for other in args.variants[1:]:
        print(f"visible p99: {percentile(results[other]['visible'], 99):.1f} ms with {other} vs "
              f"{percentile(results[ours]['visible'], 99):.1f} ms with {ours} "
              f"({percentile(results[other]['visible'], 99) / percentile(results[ours]['visible'], 99):.2f}x)")


def _run(bootstrap: str, source: str, sink: str, u: str, args: argparse.Namespace) -> dict[str, dict[str, list]]:
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
    reader = _Reader(bootstrap, sink, u)
    reader.start()
    emitters = {}
    for i, variant in enumerate(args.variants):
        backoff = int(variant.partition(":")[2])
        settings = Settings(kafka=KafkaSettings(bootstrap=bootstrap, producer_retry_backoff_ms=backoff))
        emitters[variant] = TransactionalEmitter(settings, f"bench-{u}-{i}", encode_verdicts=lambda batch: [],
                                                 encode_dead_letter=bytes, verdicts_topic=sink)
        emitters[variant].start()
    value = b"v" * 160  # about an encoded verdict
    results: dict[str, dict[str, list]] = {v: {"commit": [], "visible": []} for v in args.variants}
    per_round = max(1, args.transactions // args.rounds)
    n = 0
    try:
        # Discarded: each producer's first transaction, and the reader's first fetches.
        for emitter in emitters.values():
            n += 1
            emitter.commit_batch([], [], {(source, 0): 1}, member.consumer_group_metadata(), [(sink, f"{n}:0".encode(), value, None)])
            reader.all_seen(n, 1)
        for _ in range(args.rounds):
            for variant, emitter in emitters.items():
                commit = ORDERS[variant.partition(":")[0]]
                started: dict[int, float] = {}
                for _ in range(per_round):  # back to back: the next begins when this one has committed
                    n += 1
                    records = [(sink, f"{n}:{i}".encode(), value, None) for i in range(args.records)]
                    offsets = {(source, p): n for p in range(PARTITIONS)}
                    started[n] = t0 = time.perf_counter()
                    commit(emitter, offsets, member.consumer_group_metadata(), records)
                    results[variant]["commit"].append((time.perf_counter() - t0) * 1000)
                # Wait until every transaction of this round is visible before the next variant's.
                for txn, t0 in started.items():
                    results[variant]["visible"].append((reader.all_seen(txn, args.records) - t0) * 1000)
    finally:
        for emitter in emitters.values():
            emitter.close()
        member.close()
        reader.stop()
    return results


class _Reader(threading.Thread):
    """A read_committed consumer of the sink: when the last record of each transaction
    (key ``<txn>:<i>``) arrived, on the ``perf_counter`` clock."""

    def __init__(self, bootstrap: str, sink: str, u: str):
        super().__init__(daemon=True)
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-txn-r-{u}",
                                   "isolation.level": "read_committed", "fetch.wait.max.ms": 5})
        self._consumer.assign([TopicPartition(sink, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self._seen: dict[int, tuple[int, float]] = {}  # txn -> (records seen, last arrival)
        self._changed = threading.Condition()
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            m = self._consumer.poll(0.05)
            if m is None or m.error() is not None:
                continue
            now = time.perf_counter()
            txn = int(m.key().split(b":")[0])
            with self._changed:
                self._seen[txn] = (self._seen.get(txn, (0, 0.0))[0] + 1, now)
                self._changed.notify_all()

    def all_seen(self, txn: int, records: int, timeout_s: float = 10.0) -> float:
        with self._changed:
            if not self._changed.wait_for(lambda: self._seen.get(txn, (0, 0.0))[0] >= records, timeout_s):
                raise RuntimeError(f"transaction {txn}'s records did not all arrive within {timeout_s:g} s")
            return self._seen[txn][1]

    def stop(self) -> None:
        self._halt.set()
        self.join(5)
        self._consumer.close()


def _offsets_first(emitter: TransactionalEmitter, offsets, group_metadata, records) -> None:
    emitter.commit_batch([], [], offsets, group_metadata, records)


ORDERS = {"offsets-first": _offsets_first, "records-first": commit_records_first}


if __name__ == "__main__":
    main()
