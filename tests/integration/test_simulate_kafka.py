"""``tollgate simulate --kafka`` into the real broker, read back and counted.

The command runs as a user would run it (a subprocess, configured by the
environment); what comes back must be exactly the stream the same seed gives in
process: every event decodes to the same record, keyed by its customer, and every
outcome arrives after the event it judges.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

from engine.offline.simulate.simulator import SimConfig, Simulator
from engine.records import Outcome, TransactionEvent
from engine.settings import Settings
from engine.wire.codec import Codec
from engine.wire.topics import count_messages

pytestmark = pytest.mark.integration
TOLLGATE = str(Path(sys.executable).parent / "tollgate")
CONFIG = SimConfig(customers=400, terminals=800, days=2, seed=11)


def read_topic(bootstrap: str, topic: str, settle_s: float = 1.5, timeout: float = 45.0) -> list[Message]:
    """Everything in ``topic``: read until nothing new arrives for ``settle_s``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"count-{time.time_ns()}",
                         "enable.auto.commit": False})
    partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    out: list[Message] = []
    deadline, last_new = time.monotonic() + timeout, time.monotonic()
    try:
        while time.monotonic() < deadline and time.monotonic() - last_new < settle_s:
            batch = [m for m in consumer.consume(1000, 0.3) if m.error() is None]
            if batch:
                out.extend(batch)
                last_new = time.monotonic()
    finally:
        consumer.close()
    return out


def run_simulate(stack, *args: str, trusted_topic: str | None = None) -> str:
    env = dict(os.environ, TOLLGATE_KAFKA_BOOTSTRAP=stack.kafka_bootstrap)
    if trusted_topic:
        env["TOLLGATE_FEEDBACK__TRUST__TRUSTED_TOPIC"] = trusted_topic
    result = subprocess.run(
        [TOLLGATE, "simulate", "--days", str(CONFIG.days), "--customers", str(CONFIG.customers),
         "--terminals", str(CONFIG.terminals), "--seed", str(CONFIG.seed), "--kafka", "-q", *args],
        env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def expected() -> tuple[list[TransactionEvent], list[Outcome]]:
    records = list(Simulator(CONFIG).stream())
    return ([r for r in records if isinstance(r, TransactionEvent)],
            [r for r in records if isinstance(r, Outcome)])


def test_simulate_to_kafka_and_count_back(stack, kafka_topics, expected):
    events_topic, outcomes_topic = kafka_topics("tx.events", 3), kafka_topics("tx.outcomes", 2)
    trusted_topic = kafka_topics("tx.outcomes.trusted", 1)
    stdout = run_simulate(stack, "--events-topic", events_topic, "--outcomes-topic", outcomes_topic,
                          trusted_topic=trusted_topic)
    reported = re.search(r"(\d+) events .* (\d+) outcomes", stdout)
    assert reported, stdout

    codec = Codec(Settings())
    event_msgs = read_topic(stack.kafka_bootstrap, events_topic)
    outcome_msgs = read_topic(stack.kafka_bootstrap, outcomes_topic)
    trusted_msgs = read_topic(stack.kafka_bootstrap, trusted_topic)
    events, outcomes = expected
    # Analysts' reviews go to the trusted topic (the gate's held-out set), the rest to tx.outcomes.
    trusted = [codec.decode_outcome(m.value()) for m in trusted_msgs]
    assert trusted and {o.source for o in trusted} == {"review_queue"}
    assert len(trusted) == sum(o.source == "review_queue" for o in outcomes)
    outcome_msgs = outcome_msgs + trusted_msgs
    assert len(event_msgs) == int(reported.group(1)) == len(events)
    assert len(outcome_msgs) == int(reported.group(2)) == len(outcomes)

    decoded = [codec.decode_event(m.value(), m.headers(), None, m.key()) for m in event_msgs]
    assert all(m.key() == e.customer_id.encode() for m, e in zip(event_msgs, decoded))
    assert sorted(decoded, key=lambda e: e.event_id) == sorted(events, key=lambda e: e.event_id)
    got_outcomes = [codec.decode_outcome(m.value()) for m in outcome_msgs]
    assert sorted(got_outcomes, key=lambda o: (o.outcome_time_ms, o.event_id)) == \
        sorted(outcomes, key=lambda o: (o.outcome_time_ms, o.event_id))
    # `tollgate topics count` reads the same numbers back (committed messages, decoded).
    counted = count_messages(Settings(kafka={"bootstrap": stack.kafka_bootstrap}), events_topic,
                             lambda m: codec.decode_event(m.value(), m.headers()))
    assert (counted.messages, counted.undecodable) == (len(events), 0)
    # Within a partition the producer kept the time order of the stream.
    for partition in {m.partition() for m in event_msgs}:
        times = [e.event_time_ms for m, e in zip(event_msgs, decoded) if m.partition() == partition]
        assert times == sorted(times)


def test_simulate_json_events_decode_like_avro(stack, kafka_topics, expected):
    events_topic, outcomes_topic = kafka_topics("tx.events"), kafka_topics("tx.outcomes")
    run_simulate(stack, "--events-topic", events_topic, "--outcomes-topic", outcomes_topic, "--json",
                 "--no-outcomes")
    codec = Codec(Settings())
    msgs = read_topic(stack.kafka_bootstrap, events_topic)
    assert all(dict(m.headers())["content-type"] == b"application/json" for m in msgs)
    assert [codec.decode_event(m.value(), m.headers()) for m in msgs] == expected[0]
    assert read_topic(stack.kafka_bootstrap, outcomes_topic, settle_s=0.5) == []
