"""The emit stage with a fake producer: one transaction holds verdicts, dead letters and
offsets; retriable errors are retried (until the transaction timeout), abortable ones
abort and ask for a redo, fatal ones end the producer. (The worker loop around it:
test_worker_loop.py; the real broker: tests/integration.)"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from engine.stages.consume import FatalKafkaError
from engine.stages.emit import BatchAborted, TransactionalEmitter
from engine.wire.codec import DeadLetter
from tests.unit.test_worker_loop import CODEC, SETTINGS, _event, _verdict


class FakeProducer:
    def __init__(self, fail: dict[str, list[BaseException]] | None = None):
        self.calls: list[str] = []
        self.produced: list[tuple[str, bytes | None, list | None]] = []
        self.offsets: list[list[TopicPartition]] = []
        self.fail = fail or {}

    def _maybe_fail(self, name: str) -> None:
        self.calls.append(name)
        queue = self.fail.get(name)
        if queue:
            raise queue.pop(0)

    def init_transactions(self, timeout): self._maybe_fail("init")
    def begin_transaction(self): self._maybe_fail("begin")
    def produce(self, topic, value=None, key=None, headers=None):
        self._maybe_fail("produce")
        self.produced.append((topic, key, headers))
    def send_offsets_to_transaction(self, offsets, meta, timeout):
        self._maybe_fail("send_offsets")
        self.offsets.append(offsets)
    def commit_transaction(self, timeout): self._maybe_fail("commit")
    def abort_transaction(self, timeout): self._maybe_fail("abort")
    def poll(self, timeout): self.calls.append("poll")
    def flush(self, timeout):
        self._maybe_fail("flush")
        return 0


def _emitter(producer: FakeProducer) -> TransactionalEmitter:
    em = TransactionalEmitter(SETTINGS, "w1", encode_verdicts=CODEC.encode_verdicts,
                              encode_dead_letter=CODEC.encode_dead_letter, sleep=lambda s: None)
    em._producer = producer
    return em


def _err(code: int, **flags) -> KafkaException:
    return KafkaException(KafkaError(code, "boom", **flags))


def test_one_transaction_holds_verdicts_dead_letters_and_offsets_in_order():
    p = FakeProducer()
    dl = DeadLetter(b"x", b"k", "tx.events", 0, 7, "decode", "ValueError", "bad", 0)
    _emitter(p).commit_batch([_verdict(_event(1))], [dl], {("tx.events", 0): 8}, object())
    assert p.calls == ["begin", "send_offsets", "produce", "produce", "commit"]  # offsets first: engine.stages.emit
    assert p.produced[0][:2] == ("tx.verdicts", b"c1")  # keyed by customer
    assert p.produced[1][0] == "tx.events.dlq" and dict(p.produced[1][2])["tollgate.dlq.stage"] == b"decode"
    assert [(tp.topic, tp.partition, tp.offset) for tp in p.offsets[0]] == [("tx.events", 0, 8)]


def test_retriable_commit_error_is_retried_not_aborted():
    p = FakeProducer({"commit": [_err(KafkaError._TIMED_OUT, retriable=True)]})
    _emitter(p).commit_batch([], [], {("tx.events", 0): 1}, object())
    assert p.calls.count("commit") == 2 and "abort" not in p.calls


def test_abortable_error_aborts_and_asks_for_a_redo():
    p = FakeProducer({"send_offsets": [_err(KafkaError.ILLEGAL_GENERATION, txn_requires_abort=True)]})
    with pytest.raises(BatchAborted):
        _emitter(p).commit_batch([_verdict(_event(1))], [], {("tx.events", 0): 1}, object())
    assert p.calls[-1] == "abort" and "commit" not in p.calls


def test_fatal_error_ends_the_producer():
    p = FakeProducer({"commit": [_err(KafkaError._FENCED, fatal=True)]})
    with pytest.raises(FatalKafkaError):
        _emitter(p).commit_batch([], [], {("tx.events", 0): 1}, object())


def test_a_fenced_producer_reports_fatal_from_close_too():
    # librdkafka can surface the fence from flush() rather than from the transactional call;
    # the worker must still see FatalKafkaError (exit 3, restart), not a bare KafkaException.
    p = FakeProducer({"flush": [_err(KafkaError._FENCED, fatal=True)]})
    with pytest.raises(FatalKafkaError):
        _emitter(p).close()


def test_retriable_errors_give_up_after_the_transaction_timeout(monkeypatch):
    p = FakeProducer({"commit": [_err(KafkaError._TIMED_OUT, retriable=True)] * 1000})
    em = _emitter(p)
    em._retry_for_s = 0.0
    with pytest.raises(BatchAborted):
        em.commit_batch([], [], {("tx.events", 0): 1}, object())
    assert "abort" in p.calls


def test_full_local_queue_waits_for_deliveries_then_produces():
    p = FakeProducer({"produce": [BufferError()]})
    _emitter(p).commit_batch([_verdict(_event(1))], [], {("tx.events", 0): 1}, object())
    assert p.calls[:5] == ["begin", "send_offsets", "produce", "poll", "produce"] and len(p.produced) == 1


# -- the loop ---------------------------------------------------------------------------------
