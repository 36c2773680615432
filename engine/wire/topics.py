"""Create Tollgate's topics on the broker, idempotently; count what is in them.

The broker runs with automatic topic creation off (a typo in a topic name must fail
loudly, not silently create an empty topic), so every topic is created here, with
the partition counts from ``settings.topics``. A topic that already exists is fine —
``ensure_topics`` reports it as ``exists`` and compares its partition count, because a
worker group can never run more consumers than ``tx.events`` has partitions.

>>> [spec.name for spec in topic_specs(Settings())]
['tx.events', 'tx.verdicts', 'tx.outcomes', 'tx.events.dlq', 'tx.outcomes.trusted']
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from engine.settings import Settings


@dataclass(slots=True, frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    #: Topic-level configs; verdicts and outcomes are joined for weeks, so keep them longer.
    config: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True, frozen=True)
class TopicStatus:
    name: str
    #: "created", or "exists" when it was already there.
    state: str
    partitions: int
    wanted_partitions: int

    @property
    def partitions_match(self) -> bool:
        return self.partitions == self.wanted_partitions


_DAY_MS = 86_400_000


def topic_specs(settings: Settings) -> list[TopicSpec]:
    """The topics with partition counts from settings: four, and the trusted outcome
    topic when one is set (``feedback.trust.trusted_topic``)."""
    t = settings.topics
    rf = t.replication_factor
    # Set on the topic, not left to the broker default, so a topic keeps its guarantee
    # whichever cluster it is created on.
    isr = (("min.insync.replicas", str(t.min_insync_replicas)),)
    # Outcomes arrive up to ~30 days after the event; the DLQ must outlive a long
    # weekend of nobody looking. Events and verdicts keep the broker default (7 days).
    long_retention = (("retention.ms", str(45 * _DAY_MS)),)
    specs = [
        TopicSpec(t.events, t.events_partitions, rf, isr),
        TopicSpec(t.verdicts, t.verdicts_partitions, rf, isr),
        TopicSpec(t.outcomes, t.outcomes_partitions, rf, isr + long_retention),
        TopicSpec(t.dead_letters, t.dead_letters_partitions, rf, isr + long_retention),
    ]
    trusted = settings.feedback.trust.trusted_topic
    if trusted:
        specs.append(TopicSpec(trusted, t.outcomes_partitions, rf, isr + long_retention))
    return specs


def outcome_topic(settings: Settings, source: str, default: str | None = None) -> str:
    """Where an outcome from ``source`` is published: the ACL-protected trusted topic for
    a trusted source (analysts' reviews by default), else ``default`` or ``tx.outcomes``.
    The feedback worker trusts a source's name only on that topic (``feedback.trust``).

    >>> outcome_topic(Settings(), "review_queue"), outcome_topic(Settings(), "issuer_chargeback")
    ('tx.outcomes.trusted', 'tx.outcomes')
    """
    trust = settings.feedback.trust
    if trust.trusted_topic and source in trust.trusted_sources:
        return trust.trusted_topic
    return default or settings.topics.outcomes


#: librdkafka logs every failed connection attempt (20 lines a second while a broker is
#: down); the commands report the final error themselves, so they only want emergencies.
QUIET = {"log_level": 0}


def admin_client(settings: Settings, quiet: bool = False) -> AdminClient:
    return AdminClient(settings.librdkafka(**(QUIET if quiet else {})))


def existing_partitions(admin: AdminClient, timeout_s: float = 10.0) -> dict[str, int]:
    """Partition count of every topic on the cluster (internal ones excluded)."""
    metadata = admin.list_topics(timeout=timeout_s)
    return {name: len(meta.partitions) for name, meta in metadata.topics.items()
            if not name.startswith("__") and meta.error is None}


def ensure_topics(settings: Settings, specs: list[TopicSpec] | None = None,
                  timeout_s: float = 30.0, quiet: bool = False) -> list[TopicStatus]:
    """Create whichever of ``specs`` (default: the four topics) are missing.

    Raises ``KafkaException`` for anything but "already exists" (e.g. a replication
    factor larger than the cluster), naming the topic.
    """
    specs = topic_specs(settings) if specs is None else specs
    admin = admin_client(settings, quiet)
    before = existing_partitions(admin, timeout_s)
    missing = [s for s in specs if s.name not in before]
    created: set[str] = set()
    if missing:
        futures = admin.create_topics(
            [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor,
                      config=dict(s.config)) for s in missing],
            operation_timeout=timeout_s, request_timeout=timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout=timeout_s)
                created.add(name)
            except KafkaException as exc:
                # Another process created it between our listing and our request.
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise KafkaException(exc.args[0]) from exc
    after = existing_partitions(admin, timeout_s) if missing else before
    return [TopicStatus(s.name, "created" if s.name in created else "exists",
                        after.get(s.name, s.partitions), s.partitions) for s in specs]


@dataclass(slots=True, frozen=True)
class TopicCount:
    topic: str
    #: Committed messages read, per partition (transaction markers and aborted records excluded).
    per_partition: dict[int, int]
    #: Messages the decoder rejected; None when not decoding.
    undecodable: int | None = None

    @property
    def messages(self) -> int:
        return sum(self.per_partition.values())


def count_messages(settings: Settings, topic: str, decode: Callable[[Message], object] | None = None,
                   timeout_s: float = 60.0, quiet: bool = False) -> TopicCount:
    """Read ``topic`` from the beginning to its current end and count what is there.

    Offsets are no count on transactional topics (commit markers take offsets, aborted
    records stay in the log), so this really consumes, ``read_committed``. With
    ``decode``, every value is also decoded and failures (any exception) are counted.
    Raises ``LookupError`` for a missing topic and ``TimeoutError`` if the end is not
    reached within ``timeout_s``.
    """
    consumer = Consumer(settings.librdkafka(**{
        "group.id": f"tollgate-count-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "isolation.level": "read_committed", "enable.partition.eof": True, **(QUIET if quiet else {}),
    }))
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None:
            raise LookupError(f"topic {topic!r} does not exist")
        partitions = sorted(meta.partitions)
        counts = {p: 0 for p in partitions}
        undecodable = 0
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(at_end) < len(partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: end not reached in {timeout_s:.0f} s "
                                   f"({len(at_end)}/{len(partitions)} partitions)")
            for msg in consumer.consume(1000, 0.5):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        at_end.add(msg.partition())
                        continue
                    raise KafkaException(err)
                counts[msg.partition()] += 1
                if decode is not None:
                    try:
                        decode(msg)
                    except Exception:  # noqa: BLE001 - counting failures is the point
                        undecodable += 1
        return TopicCount(topic, counts, undecodable if decode is not None else None)
    finally:
        consumer.close()
