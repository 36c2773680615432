"""Consume stage: read ``tx.events`` in a consumer group, read_committed, no auto-commit.

Why it looks like this:

* Offsets are never committed by the consumer itself (``enable.auto.commit=false``):
  they travel inside the emit stage's Kafka transaction, together with the verdicts,
  which is what makes the worker exactly-once (see ``engine/worker/loop.py``).
* ``isolation.level=read_committed`` so an upstream producer's aborted writes are never
  decided.
* Partition assignment is ``cooperative-sticky``: a rebalance revokes only the
  partitions that move, so the other partitions keep flowing. The worker is told about
  every assignment change through ``RebalanceListener``; no transaction is ever open
  while ``poll`` runs (the worker begins and commits a transaction around one batch,
  between polls), so a revoke only has to drop the records of revoked partitions that
  are buffered and not yet decided — their committed offsets bring them back to the
  new owner.
* Every record crosses into the next stage as a slotted ``RawRecord`` carrying its
  topic, partition and offset, so any later failure can name where it came from.
* Errors are branched on ``KafkaError.fatal()`` / ``retriable()``, never on strings.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from engine.records import SourcePosition
from engine.settings import Settings

log = logging.getLogger("tollgate.consume")

#: poll() never blocks longer than this: a SIGTERM's flag is seen only when the call
#: returns, and an idle worker's stop (a deploy) waits for it (ops/bench/restart.py --stops term).
MAX_POLL_TIMEOUT_S = 0.2


@dataclass(slots=True, frozen=True)
class RawRecord:
    """One Kafka record as read, before decoding. Bytes are kept as they came."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    #: Broker/producer timestamp of the record (epoch ms); 0 when the broker has none.
    timestamp_ms: int
    #: Wall-clock time (epoch ms, float) when this worker got the record from poll().
    arrival_ms: float

    @property
    def position(self) -> SourcePosition:
        return SourcePosition(self.topic, self.partition, self.offset)

    @classmethod
    def from_message(cls, msg: Message, arrival_ms: float) -> RawRecord:
        ts_type, ts = msg.timestamp()
        return cls(
            # a consumed message (not an error event) always has its topic, partition and offset
            topic=cast(str, msg.topic()), partition=cast(int, msg.partition()), offset=cast(int, msg.offset()),
            key=msg.key(), value=msg.value(),
            headers=tuple((k, v if v is not None else b"")
                          for k, v in cast("list[tuple[str, bytes | None]]", msg.headers() or ())),
            timestamp_ms=int(ts) if ts_type and ts > 0 else 0,
            arrival_ms=arrival_ms,
        )


class RebalanceListener(Protocol):
    def on_assigned(self, partitions: Sequence[TopicPartition]) -> None: ...
    def on_revoked(self, partitions: Sequence[TopicPartition], lost: bool) -> None: ...


class LibrdkafkaLog:
    """librdkafka's own log lines, never above WARNING.

    librdkafka logs every refused connection, disconnect and coordinator move at ERROR
    (``FAIL``), so a broker restart filled the logs with ERROR lines about an outage the
    client rides out by itself. What really fails reaches us through the API (a
    ``KafkaError`` with ``fatal()``/``retriable()``, an exception), and we log that at
    the level it deserves.

    >>> import logging; seen = []
    >>> class L:
    ...     def log(self, level, msg, *args): seen.append(level)
    >>> LibrdkafkaLog(L()).log(logging.ERROR, "%s", "FAIL"); seen
    [30]
    """

    def __init__(self, target: Any):
        self._target = target

    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        self._target.log(min(level, logging.WARNING), msg, *args, **kwargs)


class _NotSubscribed:
    """The listener before ``subscribe``: no rebalance can happen yet."""

    def on_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        pass

    def on_revoked(self, partitions: Sequence[TopicPartition], lost: bool) -> None:
        pass


class FatalKafkaError(RuntimeError):
    """librdkafka reported a fatal error: this client instance cannot continue."""


def consumer_config(settings: Settings, group_id: str | None = None,
                    instance_id: str | None = None) -> dict[str, Any]:
    """librdkafka consumer configuration for the engine worker. ``instance_id``: static
    group membership (KIP-345): a restarted worker with the same id takes its partitions
    back at once, without a rebalance and without waiting for the dead one's session to
    time out (``settings.worker.static_membership``; ``ops/bench/restart.py``).

    >>> from engine.settings import Settings
    >>> c = consumer_config(Settings())
    >>> c["isolation.level"], c["enable.auto.commit"], c["partition.assignment.strategy"]
    ('read_committed', False, 'cooperative-sticky')
    >>> consumer_config(Settings(), instance_id="w1")["group.instance.id"]
    'tollgate-engine-w1'
    """
    extra = {"group.instance.id": f"{settings.kafka.consumer_group}-{instance_id}"} if instance_id else {}
    return settings.librdkafka(**extra, **{
        "group.id": group_id or settings.kafka.consumer_group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "partition.assignment.strategy": "cooperative-sticky",
        # Latency: the broker answers a fetch as soon as one byte is there; cap the wait
        # so an idle partition never holds a batch back for long.
        "fetch.wait.max.ms": 10,
        "fetch.min.bytes": 1,
        "session.timeout.ms": 10_000,
        "heartbeat.interval.ms": 1_000,
        "max.poll.interval.ms": 60_000,
        "statistics.interval.ms": 0,
    })


class EventConsumer:
    """A confluent-kafka consumer that hands out ``RawRecord`` lists and tracks lag."""

    def __init__(self, settings: Settings, *,
                 group_id: str | None = None, topic: str | None = None, instance_id: str | None = None):
        self.topic = topic or settings.topics.events
        self._listener: RebalanceListener = _NotSubscribed()
        self._consumer = Consumer(consumer_config(settings, group_id, instance_id), logger=LibrdkafkaLog(log))
        self._static = instance_id is not None
        self._assigned: set[tuple[str, int]] = set()

    # -- group membership ---------------------------------------------------------------

    def subscribe(self, listener: RebalanceListener) -> None:
        """Join the group; ``listener`` (the worker) hears of every assignment and revocation."""
        self._listener = listener
        self._consumer.subscribe([self.topic], on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._assigned.update((tp.topic, tp.partition) for tp in partitions)
        log.info("partitions assigned", extra={"partitions": _names(partitions)})
        self._listener.on_assigned(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._assigned.difference_update((tp.topic, tp.partition) for tp in partitions)
        log.info("partitions revoked", extra={"partitions": _names(partitions)})
        self._listener.on_revoked(partitions, lost=False)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._assigned.difference_update((tp.topic, tp.partition) for tp in partitions)
        log.warning("partitions lost", extra={"partitions": _names(partitions)})
        self._listener.on_revoked(partitions, lost=True)

    @property
    def assignment(self) -> frozenset[tuple[str, int]]:
        return frozenset(self._assigned)

    def group_metadata(self) -> Any:
        """What ``send_offsets_to_transaction`` needs to fence a zombie (KIP-447)."""
        return self._consumer.consumer_group_metadata()

    # -- reading ------------------------------------------------------------------------

    def poll(self, max_records: int, timeout_s: float) -> list[RawRecord]:
        """Up to ``max_records`` records, waiting at most ``timeout_s`` (capped at 1 s).

        Partition EOF is ignored, retriable errors are logged (librdkafka retries them
        itself), fatal errors raise ``FatalKafkaError``.
        """
        timeout_s = max(0.0, min(timeout_s, MAX_POLL_TIMEOUT_S))
        messages = self._consumer.consume(num_messages=max(1, max_records), timeout=timeout_s)
        now_ms = time.time() * 1000.0
        out: list[RawRecord] = []
        for msg in messages:
            err = msg.error()
            if err is None:
                out.append(RawRecord.from_message(msg, now_ms))
                continue
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            # A fatal error reaches the consumer as an error event whose code is _FATAL and
            # whose fatal() is False (the cause is in its text: a static member fenced by
            # another instance with its group.instance.id, test_worker_scale.py).
            if err.fatal() or err.code() == KafkaError._FATAL:
                raise FatalKafkaError(str(err))
            log.warning("consumer error (librdkafka retries)",
                        extra={"code": err.name(), "retriable": err.retriable(), "error": err.str()})
        return out

    def rewind(self, first_offsets: dict[tuple[str, int], int]) -> None:
        """Seek each still-assigned partition back to ``offset`` (after an aborted batch)."""
        for (topic, partition), offset in first_offsets.items():
            if (topic, partition) not in self._assigned:
                continue  # the new owner re-reads it from the committed offset
            try:
                self._consumer.seek(TopicPartition(topic, partition, offset))
            except KafkaException as exc:
                # The partition is being revoked right now; the committed offset covers it.
                log.warning("seek failed", extra={"partition": partition, "error": str(exc)})

    def lag(self) -> dict[tuple[str, int], int]:
        """Records behind the high watermark per assigned partition (cached watermarks)."""
        assigned = [TopicPartition(t, p) for t, p in self._assigned]
        if not assigned:
            return {}
        out: dict[tuple[str, int], int] = {}
        try:
            positions = self._consumer.position(assigned)
        except KafkaException:
            return out
        for tp in positions:
            try:
                _low, high = self._consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            if high < 0 or tp.offset < 0:
                continue
            out[(tp.topic, tp.partition)] = max(0, high - tp.offset)
        return out

    def close(self, *, leave_group: bool = True, timeout_s: float = 3.0) -> None:
        """Close the consumer; ``leave_group`` hands our partitions to the rest of the group
        at once instead of after ``session.timeout.ms``.

        A dynamic member leaves on ``close`` by itself. A static member (KIP-345) does not:
        librdkafka skips the LeaveGroup on termination, so a worker stopped for good would
        keep its partitions idle for the session timeout. Unsubscribing first makes it
        leave (librdkafka sends the LeaveGroup once the revocation is served, which takes
        a poll). ``leave_group=False`` keeps a static member's place for a restart under
        the same id (the worker passes it after a fatal error, when a supervisor restarts
        it); ``timeout_s`` bounds the wait for the revocation (``test_worker_scale.py``).
        """
        if leave_group and self._static:
            try:
                self._consumer.unsubscribe()
                deadline = time.monotonic() + timeout_s
                # Records still fetched are dropped: their offsets were never committed,
                # so the partitions' next owner reads them again.
                while self._assigned and time.monotonic() < deadline:
                    self._consumer.consume(num_messages=1_000, timeout=0.05)
            except KafkaException as exc:
                log.warning("leaving the group failed; the session timeout moves our partitions",
                            extra={"error": str(exc)})
        self._consumer.close()


def _names(partitions: Sequence[TopicPartition]) -> list[str]:
    return [f"{tp.topic}[{tp.partition}]" for tp in partitions]
