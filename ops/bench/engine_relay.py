"""The floor under the engine benchmark: an exactly-once relay that decides nothing.

    python -m ops.bench.engine_relay [--records-first]   # settings from TOLLGATE_* (topics, group, ids)

It consumes ``tx.events`` with the worker's consumer configuration
(``engine.stages.consume.consumer_config``: read_committed, the same fetch settings), and for
every poll's worth of records (up to ``settings.batch.max_events``) writes each event's
bytes, unchanged, to ``tx.verdicts`` and commits them with the consumed offsets in one
transaction through the worker's own ``TransactionalEmitter`` (same producer
configuration, same order of calls). No decode, Redis, model, rules or overlap: one
transaction at a time, in line.

``ops/bench/engine.py`` runs it at the same offered rate, with the same load generator
and read_committed reader, as the worker: its latency is what Kafka transactions alone
cost on this machine — the part of the worker's latency no change to the worker can
remove — and its CPU is the least a consume-transform-produce process pays per event.
``--records-first`` drives the same producer in the order ``commit_batch`` used before
(records, then offsets): ``ops/bench/engine.py --floor-ab`` compares the two under a
live stream.
"""

from __future__ import annotations

import argparse
import signal
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from engine.settings import Settings
from engine.stages.consume import consumer_config
from engine.stages.emit import TransactionalEmitter

READY = "relay ready"


def commit_records_first(emitter: TransactionalEmitter, offsets: Mapping[tuple[str, int], int],
                         group_metadata: Any, records: Sequence[Any]) -> None:
    """One transaction in the order ``commit_batch`` used before: the records, then the
    offsets (the same producer and calls; no retries or error handling — a benchmark
    stops on error)."""
    producer = emitter._producer  # noqa: SLF001 - the one producer, configured as the worker's
    producer.begin_transaction()
    for topic, key, value, headers in records:
        producer.produce(topic, value=value, key=key, headers=headers)
    producer.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                         group_metadata, 10)
    producer.commit_transaction(10)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records-first", action="store_true", help="the order of calls before offsets-first")
    args = ap.parse_args(argv)
    settings = Settings()
    consumer = Consumer(consumer_config(settings))
    emitter = TransactionalEmitter(settings, f"relay-{uuid.uuid4().hex[:8]}", encode_verdicts=lambda batch: [],
                                   encode_dead_letter=bytes)
    emitter.start()
    consumer.subscribe([settings.topics.events])
    stopping = False

    def stop(*_: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    print(READY, flush=True)
    verdicts, room = settings.topics.verdicts, settings.batch.max_events - 1
    while not stopping:
        first = consumer.poll(0.2)
        if first is None:
            continue
        records, offsets = [], {}
        for m in [first, *consumer.consume(room, 0)]:
            if m.error() is not None:
                continue
            records.append((verdicts, m.key(), m.value(), m.headers()))  # a JSON event keeps its content-type
            offsets[(m.topic(), m.partition())] = m.offset() + 1  # in order within a partition
        if records and args.records_first:
            commit_records_first(emitter, offsets, consumer.consumer_group_metadata(), records)
        elif records:
            emitter.commit_batch([], [], offsets, consumer.consumer_group_metadata(), records)
    emitter.close()
    consumer.close()


if __name__ == "__main__":
    sys.exit(main())
