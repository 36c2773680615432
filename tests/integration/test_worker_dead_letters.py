"""Poison messages interleaved with good ones: every good event gets one verdict, every
poison record lands once on the DLQ with its original bytes and headers naming stage,
error and source position, and the worker keeps going."""

from __future__ import annotations

from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from engine.wire.codec import JSON_HEADERS, Codec
from tests.support.worker_support import (
    WorkerProcess,
    make_events,
    produce,
    read_committed,
    read_verdicts,
)

pytestmark = pytest.mark.integration


def _poison(codec: Codec, unique: str) -> list[tuple[bytes | None, bytes | None, str]]:
    """(key, value, expected stage) for each kind of bad input."""
    [negative] = make_events(unique, 1, start=90_000)
    import dataclasses
    negative = dataclasses.replace(negative, amount=-12.0)
    [future] = make_events(unique, 1, start=90_001)
    future = dataclasses.replace(future, event_time_ms=9_999_999_999_999)
    good_bytes = codec.encode_event(make_events(unique, 1, start=90_002)[0])
    return [
        (b"k-garbage", b"not avro at all", "decode"),
        (b"k-truncated", good_bytes[:12], "decode"),
        (b"k-unknown-schema", b"\x00\x00\x00\x03\xe7" + good_bytes[5:], "decode"),
        (b"k-negative", codec.events.encode(negative, validate=False), "validate"),
        (b"k-future", codec.events.encode(future, validate=False), "validate"),
        (b"k-empty", b"", "decode"),
    ]


def test_poison_messages_go_to_the_dlq_with_headers_and_the_worker_keeps_going(wenv, tmp_path):
    codec = Codec()
    good = make_events(wenv.unique, 600)
    poison = _poison(codec, wenv.unique)
    stream: list[tuple[bytes | None, bytes]] = []
    for i, e in enumerate(good):
        stream.append((e.customer_id.encode(), codec.encode_event(e)))
        if i % 100 == 50:
            key, value, _ = poison[(i // 100) % len(poison)]
            stream.append((key, value))
    n_poison = len(stream) - len(good)
    worker = WorkerProcess(wenv, "w1", tmp_path)
    try:
        worker.wait_for("worker ready")
        produce(wenv.bootstrap, wenv.events, stream)
        # JSON input with a missing field is schema-invalid too (sent with JSON headers).
        produce_json_missing_field(wenv, codec)
        verdicts = read_verdicts(wenv.bootstrap, wenv.verdicts, len(good), codec, timeout=90)
        dlq = read_committed(wenv.bootstrap, wenv.dead_letters, n_poison + 1, timeout=30)
        assert worker.proc.poll() is None, "the worker must keep running"
    finally:
        worker.terminate()

    counts = Counter(v.event_id for v in verdicts)
    assert set(counts) == {e.event_id for e in good} and sum(counts.values()) == len(good)

    assert len(dlq) == n_poison + 1
    expected_stage = {key: stage for key, _, stage in poison}
    expected_stage[b"k-json"] = "validate"
    for msg in dlq:
        headers = dict(msg.headers())
        dl = codec.decode_dead_letter(msg.value())
        assert headers["tollgate.dlq.stage"].decode() == dl.stage == expected_stage[msg.key()]
        assert headers["tollgate.dlq.error_class"].decode() == dl.error_class and dl.error_class
        assert headers["tollgate.dlq.error_message"] and dl.error_message
        src = (headers["tollgate.dlq.source_topic"].decode(), int(headers["tollgate.dlq.source_partition"]),
               int(headers["tollgate.dlq.source_offset"]))
        assert src == (dl.source_topic, dl.source_partition, dl.source_offset)
        assert src[0] == wenv.events
        # The original bytes are exactly what sits at the named source position.
        assert _value_at(wenv.bootstrap, *src) == (dl.original_value or b"")
        assert dl.original_key == msg.key()
    errors = Counter(codec.decode_dead_letter(m.value()).error_class for m in dlq)
    assert "EventValidationError" in errors


def produce_json_missing_field(wenv, codec: Codec) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": wenv.bootstrap})
    p.produce(wenv.events, key=b"k-json", value=b'{"event_id": "x", "amount": 3.0}', headers=list(JSON_HEADERS))
    assert p.flush(30) == 0


def _value_at(bootstrap: str, topic: str, partition: int, offset: int) -> bytes:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlq-check", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, partition, offset)])
        for _ in range(50):
            msg = c.poll(0.5)
            if msg is not None and msg.error() is None:
                assert msg.offset() == offset
                return msg.value() or b""
        raise AssertionError(f"nothing at {topic}[{partition}]@{offset}")
    finally:
        c.close()
