"""Emit stage: verdicts, dead letters and consumed offsets in one Kafka transaction.

Why it looks like this (the shape of confluent-kafka-python's ``eos_transactions.py``):

* One transactional producer per worker, ``transactional.id = <prefix>-<worker id>``.
  The worker id is stable across restarts, so a restarted worker's
  ``init_transactions`` fences its zombie predecessor and aborts whatever transaction
  the predecessor left open — that is what makes SIGKILL safe.
* ``send_offsets_to_transaction`` gets the consumer's group metadata (KIP-447), so the
  group coordinator also fences a worker that lost its partitions in a rebalance: its
  offset commit fails, its transaction aborts, and the new owner redoes the batch.
* Errors are branched on the ``KafkaError`` flags only: ``fatal()`` → this producer is
  dead (fenced): raise ``FatalKafkaError`` and let the process restart;
  ``txn_requires_abort()`` → abort and raise ``BatchAborted`` so the worker rewinds and
  redoes the batch; ``retriable()`` → retry the same call with backoff.
* One transaction per micro-batch: the cadence that meets the latency target. A verdict
  is invisible to a read_committed reader until its transaction commits, so a longer
  transaction (per N ms spanning several batches) adds its whole span to every
  event's latency; per batch, an event waits at most ``W`` ms + one decision + one
  commit round trip. Under load batches grow towards ``B`` by themselves (records
  queue while a commit is in flight), which amortises the commit at saturation.
* Every call that waits on the broker is bounded twice: the timeout librdkafka is
  given (``settings.worker.kafka_call_timeout_s``) and a watchdog
  (``settings.worker.kafka_call_bound_s``, ``engine.worker.watchdog.BoundedCaller``), because
  some calls ignore their timeout (librdkafka #5456, #5511). A call that overruns the
  watchdog raises ``CallOverran`` (fatal): the worker exits and is restarted.
* The worker runs ``commit_batch`` on a thread of its own and decides the next batch
  meanwhile; it passes the records already ``encode``d, so that thread only waits on
  the broker. Transactions still run one at a time, in batch order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, cast

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from engine.records import Verdict, VerdictBatch
from engine.settings import Settings
from engine.stages.consume import FatalKafkaError, LibrdkafkaLog
from engine.wire.codec import DeadLetter
from engine.worker.watchdog import BoundedCaller

log = logging.getLogger("tollgate.emit")

#: One record to produce: (topic, key, value, headers).
OutgoingRecord = tuple[str, bytes | None, bytes, list[tuple[str, bytes]] | None]


class BatchAborted(RuntimeError):
    """The batch's transaction was aborted; nothing of it is visible. Redo it."""


def producer_config(settings: Settings, worker_id: str) -> dict[str, Any]:
    """librdkafka producer configuration for the worker's transactional producer.

    >>> from engine.settings import Settings
    >>> producer_config(Settings(), "w1")["transactional.id"]
    'tollgate-engine-w1'
    """
    return settings.librdkafka(**{
        "transactional.id": f"{settings.kafka.transactional_id_prefix}-{worker_id}",
        "transaction.timeout.ms": settings.kafka.transaction_timeout_ms,
        "enable.idempotence": True,
        "acks": "all",
        # commit_transaction() flushes anyway; lingering would only add latency.
        "linger.ms": 0,
        # A transaction's AddOffsetsToTxn often reaches the coordinator while it is still
        # writing the previous commit's markers, and is answered CONCURRENT_TRANSACTIONS
        # (retriable) — in a steady stream, every few batches. librdkafka then waits
        # retry.backoff.ms (100 ms by default) before asking again, and that wait was
        # most of our p95/p99 (see KafkaSettings.producer_retry_backoff_ms).
        "retry.backoff.ms": settings.kafka.producer_retry_backoff_ms,
        "retry.backoff.max.ms": max(100, settings.kafka.producer_retry_backoff_ms),
        "compression.type": "none",
    })


def _kafka_error(exc: KafkaException) -> KafkaError | None:
    err = exc.args[0] if exc.args else None
    return err if isinstance(err, KafkaError) else None


class TransactionalEmitter:
    """Owns the worker's transactional producer; one ``commit_batch`` = one transaction."""

    def __init__(self, settings: Settings, worker_id: str, *,
                 encode_verdicts: Callable[[VerdictBatch], Sequence[bytes]],
                 encode_dead_letter: Callable[[DeadLetter], bytes],
                 verdicts_topic: str | None = None, dead_letters_topic: str | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.transactional_id = f"{settings.kafka.transactional_id_prefix}-{worker_id}"
        self.verdicts_topic = verdicts_topic or settings.topics.verdicts
        self.dead_letters_topic = dead_letters_topic or settings.topics.dead_letters
        self._encode_verdicts = encode_verdicts
        self._encode_dead_letter = encode_dead_letter
        self._sleep = sleep
        # Retriable errors (broker away, coordinator moving) are retried for as long as the
        # transaction could still commit; after that the broker has aborted it anyway.
        self._retry_for_s = settings.kafka.transaction_timeout_ms / 1000.0
        self._timeout_s = settings.worker.kafka_call_timeout_s
        self._bounded = BoundedCaller(settings.worker.kafka_call_bound_s)
        self._producer = Producer(producer_config(settings, worker_id), logger=LibrdkafkaLog(log))
        self._in_transaction = False

    @property
    def longest_commit_s(self) -> float:
        """The longest ``commit_batch`` can take: each of its broker calls (send offsets,
        commit, and an abort after a failure) retries for at most the retry window, and
        its last try is cut off by the watchdog bound. Waiting longer is never needed."""
        return 3 * (self._retry_for_s + self._bounded.bound_s) + 1.0

    def start(self) -> None:
        """Register the transactional id: fences a zombie with the same id, aborts its work."""
        self._call("init_transactions", lambda: self._producer.init_transactions(self._timeout_s))

    # -- one batch ------------------------------------------------------------------------

    def encode(self, verdicts: Sequence[Verdict], dead_letters: Sequence[DeadLetter]) -> list[OutgoingRecord]:
        """The records of one transaction, encoded: verdicts (key = customer id), then dead
        letters. Pure; the worker calls it on its main thread, so the commit thread only
        waits on the broker instead of competing for the GIL. The verdicts are written
        from the batch's columns (``VerdictBatch``; a list of records is made one first)."""
        batch = VerdictBatch.of(verdicts)
        values = self._encode_verdicts(batch)
        if len(values) != len(batch):
            raise ValueError(f"{len(values)} encoded verdicts for {len(batch)}")
        topic = self.verdicts_topic
        out: list[OutgoingRecord] = [(topic, customer_id.encode(), value, None)
                                     for customer_id, value in zip(batch.customer_ids, values)]
        out += [(self.dead_letters_topic, dl.original_key, self._encode_dead_letter(dl), dead_letter_headers(dl))
                for dl in dead_letters]
        return out

    def commit_batch(self, verdicts: Sequence[Verdict], dead_letters: Sequence[DeadLetter],
                     next_offsets: Mapping[tuple[str, int], int], group_metadata: Any,
                     encoded: Sequence[OutgoingRecord] | None = None) -> None:
        """Write verdicts + dead letters and commit ``next_offsets`` atomically.

        ``next_offsets`` maps (topic, partition) to the offset of the *next* record to
        read (last consumed + 1). ``encoded``: ``encode(verdicts, dead_letters)`` if the
        caller already has it. Raises ``BatchAborted`` (redo the batch) or
        ``FatalKafkaError`` (exit; a restart fences this instance).
        """
        records = encoded if encoded is not None else self.encode(verdicts, dead_letters)
        self.open_transaction(next_offsets, group_metadata)
        self.finish_transaction(records)

    def open_transaction(self, next_offsets: Mapping[tuple[str, int], int], group_metadata: Any) -> None:
        """The first half of ``commit_batch``: begin a transaction and add the batch's
        offsets to it. The worker may call it as soon as a quiet stream's batch is read,
        before it is decided (``engine.worker.commit.BatchCommitter.open_early``): the
        offsets are known then, and their round trips to the coordinator overlap the
        decision. ``finish_transaction`` or ``abort`` must follow. Raises as ``commit_batch``."""
        def begin_and_send_offsets() -> None:
            # One bounded call for both: each call is a hand-off to the watchdog's thread
            # and back; begin talks to no broker (a retry skips it once it succeeded).
            if not self._in_transaction:
                self._producer.begin_transaction()
                self._in_transaction = True
            self._producer.send_offsets_to_transaction(offsets, group_metadata, self._timeout_s)

        try:
            # Offsets first, records second: the first request of a transaction often
            # reaches the coordinator while it still writes the previous commit's markers
            # and is answered CONCURRENT_TRANSACTIONS. librdkafka retries AddOffsetsToTxn
            # after retry.backoff.ms (1 ms here) but AddPartitionsToTxn, which the first
            # produce triggers, after a fixed 20 ms; once the offsets are in, the
            # transaction is open and the partitions register at the first try. Within a
            # transaction the order is invisible: it all commits or none of it does.
            offsets = [TopicPartition(t, p, o) for (t, p), o in next_offsets.items()]
            self._call("send_offsets_to_transaction", begin_and_send_offsets)
        except _Abortable as exc:
            self.abort()
            raise BatchAborted(str(exc)) from exc

    def finish_transaction(self, records: Sequence[OutgoingRecord]) -> None:
        """The second half of ``commit_batch``: produce ``records`` into the open
        transaction and commit it. Raises as ``commit_batch``."""
        try:
            for topic, key, value, headers in records:
                self._produce(topic, key, value, headers)
            self._call("commit_transaction", lambda: self._producer.commit_transaction(self._timeout_s))
            self._in_transaction = False
        except _Abortable as exc:
            self.abort()
            raise BatchAborted(str(exc)) from exc

    def abort(self) -> None:
        """Abort the open transaction, if any (revocation, shutdown, abortable error)."""
        if not self._in_transaction:
            return
        try:
            self._call("abort_transaction", lambda: self._producer.abort_transaction(self._timeout_s))
        except _Abortable as exc:  # abort of an abort: the state is already unusable
            raise FatalKafkaError(f"abort_transaction failed: {exc}") from exc
        finally:
            self._in_transaction = False

    def close(self) -> None:
        """Abort what is open and flush. Raises ``FatalKafkaError`` when the producer is
        already dead (fenced): librdkafka reports that from ``flush`` too, and the caller
        must see the same error class whichever call noticed it first."""
        self.abort()
        try:
            self._bounded("flush", lambda: self._producer.flush(self._timeout_s))
        except KafkaException as exc:
            raise FatalKafkaError(f"flush on close: {exc}") from exc

    # -- helpers --------------------------------------------------------------------------

    def _produce(self, topic: str, key: bytes | None, value: bytes,
                 headers: list[tuple[str, bytes]] | None) -> None:
        while True:
            try:
                # list is invariant: our bytes-only headers are what produce's wider type accepts
                self._producer.produce(topic, value=value, key=key,
                                       headers=cast("list[tuple[str, str | bytes | None]] | None", headers))
                return
            except BufferError:
                self._producer.poll(0.05)  # local queue full: let deliveries drain
            except KafkaException as exc:
                self._raise_classified("produce", exc)

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        delay, attempt = 0.05, 0
        give_up_at = time.monotonic() + self._retry_for_s
        while True:
            try:
                return self._bounded(what, fn)
            except KafkaException as exc:
                err = _kafka_error(exc)
                if err is None or not err.retriable() or err.fatal() or err.txn_requires_abort():
                    self._raise_classified(what, exc)
                if time.monotonic() >= give_up_at:
                    raise _Abortable(f"{what}: still failing after {self._retry_for_s:g} s: {err.str()}") from exc
                attempt += 1
                log.warning("retrying transactional call",
                            extra={"call": what, "attempt": attempt, "error": err.str(), "backoff_s": delay})
                self._sleep(delay)
                delay = min(delay * 2, 2.0)

    @staticmethod
    def _raise_classified(what: str, exc: KafkaException) -> NoReturn:
        err = _kafka_error(exc)
        if err is None or err.fatal():
            raise FatalKafkaError(f"{what}: {exc}") from exc
        if err.txn_requires_abort() or err.retriable():
            raise _Abortable(f"{what}: {err.str()}") from exc
        # Neither abortable nor retriable (e.g. a state error after a rebalance race):
        # aborting is the only safe way back to a clean transaction.
        raise _Abortable(f"{what}: {err.name()} {err.str()}") from exc


def dead_letter_headers(dl: DeadLetter) -> list[tuple[str, bytes]]:
    """The codec's dead-letter headers plus the source position split into three, so a
    router can filter on topic or partition without parsing.

    >>> dl = DeadLetter(b"x", None, "tx.events", 3, 17, "decode", "ValueError", "bad", 0)
    >>> dict(dead_letter_headers(dl))["tollgate.dlq.source_offset"]
    b'17'
    """
    return dl.headers() + [
        ("tollgate.dlq.source_topic", dl.source_topic.encode()),
        ("tollgate.dlq.source_partition", str(dl.source_partition).encode()),
        ("tollgate.dlq.source_offset", str(dl.source_offset).encode()),
    ]


class _Abortable(Exception):
    """Internal: the open transaction must be aborted and the batch redone."""
