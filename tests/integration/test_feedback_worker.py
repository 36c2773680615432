"""The faust feedback worker against the real broker and Redis: killed with SIGKILL in
the middle of a run and restarted, it loses no outcome and counts none twice."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from confluent_kafka import Producer

from engine.features.redis_store import RedisFeatureStore
from engine.records import Decision, Outcome, OutcomeKind, TransactionEvent, Verdict
from engine.settings import KafkaSettings, PathSettings, RedisSettings, Settings, TopicSettings
from engine.wire.codec import Codec
from feedback.store import DecisionStore, LabelStore
from tests.support.events import event
from tests.support.feedback_sim import start_feedback_worker, stop_feedback_worker
from tests.support.worker_support import wait_until

pytestmark = pytest.mark.integration

T0 = 1_780_000_000_000
DAY = 86_400_000
N = 4000
FIRST = 200  # verdicts sent before the worker starts; the rest arrive while it runs


def _event(i: int) -> TransactionEvent:
    return event(i, event_id=f"w{i}", event_time_ms=T0 + i * 1000, customer_id=f"c{i % 17}", account_id="a",
                 terminal_id=f"T{i % 11}", amount=5.0 + i % 50)


def _verdict(ev: TransactionEvent) -> Verdict:
    return Verdict(ev.event_id, ev.customer_id, Decision.PASS, 0.9, {"pass": 0.9, "review": 0.05, "reject": 0.05},
                   0.1, (), "v1", "r1", 1.0, ev.event_time_ms + 3, ev.event_time_ms)


def _outcome(i: int, kind: OutcomeKind, at: int) -> Outcome:
    return Outcome(f"w{i}", kind, at, "issuer")


def test_worker_killed_mid_run_loses_no_outcome(stack, unique, kafka_topics, redis_client, tmp_path):
    verdicts_t, outcomes_t = kafka_topics("tx.verdicts", 3), kafka_topics("tx.outcomes", 2)
    prefix = f"tgfbw{unique}"
    s = Settings(kafka=KafkaSettings(bootstrap=stack.kafka_bootstrap),
                 topics=TopicSettings(verdicts=verdicts_t, outcomes=outcomes_t),
                 redis=RedisSettings(url=stack.redis_url, key_prefix=prefix),
                 paths=PathSettings(state_dir=tmp_path, examples_dir=tmp_path / "examples"))
    env = dict(os.environ, TOLLGATE_KAFKA_BOOTSTRAP=stack.kafka_bootstrap, TOLLGATE_REDIS_URL=stack.redis_url,
               TOLLGATE_TOPICS__VERDICTS=verdicts_t, TOLLGATE_TOPICS__OUTCOMES=outcomes_t,
               TOLLGATE_REDIS__KEY_PREFIX=prefix, TOLLGATE_PATHS__EXAMPLES_DIR=str(tmp_path / "examples"),
               TOLLGATE_PATHS__STATE_DIR=str(tmp_path),
               TOLLGATE_FEEDBACK__CONSUMER_GROUP=f"tollgate-feedback-{unique}", PYTHONUNBUFFERED="1",
               # the worker also reads the trusted outcome topic (analysts' reviews) by default
               TOLLGATE_FEEDBACK__TRUST__TRUSTED_TOPIC=kafka_topics("tx.outcomes.trusted", 1))
    events = [_event(i) for i in range(N)]
    RedisFeatureStore(redis_client, s).enrich(events)  # the engine's decision log
    codec = Codec(s)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 5})

    def send_verdicts(idx):
        for i in idx:
            producer.produce(verdicts_t, codec.encode_verdict(_verdict(events[i]), verdicts_t),
                             key=events[i].customer_id.encode())
        producer.flush(30)

    def send_outcomes(items):
        for o in items:
            producer.produce(outcomes_t, codec.encode_outcome(o, outcomes_t), key=o.event_id.encode())
        producer.flush(30)

    expected: dict[str, str] = {}
    # Half the outcomes arrive before their verdicts; every 5th is delivered twice.
    first = [_outcome(i, OutcomeKind.CHARGEBACK if i % 3 == 0 else OutcomeKind.CONFIRMED_LEGITIMATE, T0 + 7 * DAY + i)
             for i in range(0, N, 2)]
    send_outcomes(first + first[::5])
    expected.update({o.event_id: o.kind.value for o in first})
    send_verdicts(range(0, FIRST))

    log = tmp_path / "worker.log"
    proc = start_feedback_worker(env, log, flush_interval_s=0.5, batch_size=50)
    labels = LabelStore(tmp_path / "examples" / "labels")
    try:
        wait_until(lambda: len(labels.read()) > 0, 90, "the first labelled examples")
        wait_until(lambda: len(labels.read()) == FIRST // 2, 60, "the first verdicts to be joined")
        # More traffic while the worker runs; SIGKILL it as soon as it starts on it.
        corrections = [_outcome(i, OutcomeKind.CONFIRMED_FRAUD, T0 + 9 * DAY + i) for i in range(0, N, 8)]
        expected.update({o.event_id: o.kind.value for o in corrections})
        send_outcomes(corrections)
        send_verdicts(range(FIRST, N))
        # Polled closely: on a fast host the worker can finish the rest within one 0.3 s poll,
        # and the check below then fails the run rather than pass it vacuously.
        wait_until(lambda: len(labels.read()) > FIRST // 2, 60, "the worker to start on the rest", every_s=0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        got = labels.read()
        assert dict(zip(got["event_id"], got["outcome_kind"])) != expected, \
            "the worker finished before the kill; the test proves nothing"

        proc = start_feedback_worker(env, log, flush_interval_s=0.5, batch_size=50)
        wait_until(lambda: len(labels.read()) == len(expected) and
              dict(zip(labels.read()["event_id"], labels.read()["outcome_kind"])) == expected,
              120, f"all {len(expected)} outcomes after the restart")
    finally:
        stop_feedback_worker(proc)
    got = labels.read()
    assert dict(zip(got["event_id"], got["outcome_kind"])) == expected
    assert got["snapshot_json"].notna().all() and got["event_json"].notna().all()
    assert len(DecisionStore(tmp_path / "examples" / "decisions").read()) == N
    # Delayed-label state: one label per outcome event, none counted twice.
    assert sum(1 for _ in redis_client.scan_iter(f"{prefix}:lab:*")) == len(expected)
    # faust kept its files under the state dir, not in the working directory.
    group = env["TOLLGATE_FEEDBACK__CONSUMER_GROUP"]
    assert (tmp_path / "faust" / group).is_dir()
    assert not (Path.cwd() / f"{group}-data").exists()


def test_worker_on_a_redis_cluster_with_a_horizon_joins_every_outcome(stack, unique, kafka_topics, redis_cluster_url,
                                                                      tmp_path):
    """The process as `--profile cluster` runs it: context and join on a Redis Cluster,
    the decision log kept in Redis for an hour. Every outcome becomes one label with its
    inputs, and every decision reaches the decision store."""
    from engine.wire.redisconn import connect

    n = 400
    verdicts_t, outcomes_t = kafka_topics("tx.verdicts", 3), kafka_topics("tx.outcomes", 2)
    prefix = f"tgfbc{unique}"
    redis_settings = RedisSettings(url=redis_cluster_url, key_prefix=prefix, decision_log_redis_hours=1)
    s = Settings(kafka=KafkaSettings(bootstrap=stack.kafka_bootstrap),
                 topics=TopicSettings(verdicts=verdicts_t, outcomes=outcomes_t), redis=redis_settings,
                 paths=PathSettings(state_dir=tmp_path, examples_dir=tmp_path / "examples"))
    env = dict(os.environ, TOLLGATE_KAFKA_BOOTSTRAP=stack.kafka_bootstrap, TOLLGATE_REDIS_URL=redis_cluster_url,
               TOLLGATE_REDIS__DECISION_LOG_REDIS_HOURS="1",
               TOLLGATE_TOPICS__VERDICTS=verdicts_t, TOLLGATE_TOPICS__OUTCOMES=outcomes_t,
               TOLLGATE_REDIS__KEY_PREFIX=prefix, TOLLGATE_PATHS__EXAMPLES_DIR=str(tmp_path / "examples"),
               TOLLGATE_PATHS__STATE_DIR=str(tmp_path),
               TOLLGATE_FEEDBACK__CONSUMER_GROUP=f"tollgate-feedback-{unique}", PYTHONUNBUFFERED="1",
               TOLLGATE_FEEDBACK__TRUST__TRUSTED_TOPIC=kafka_topics("tx.outcomes.trusted", 1))
    client = connect(redis_cluster_url, socket_timeout_s=10)
    events = [_event(i) for i in range(n)]
    store = RedisFeatureStore(client, s)
    store.enrich(events)
    codec = Codec(s)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 5})
    expected = {}
    for i in range(0, n, 3):  # a third get an outcome, some before their verdict
        o = _outcome(i, OutcomeKind.CHARGEBACK if i % 2 else OutcomeKind.CONFIRMED_LEGITIMATE, T0 + 7 * DAY + i)
        producer.produce(outcomes_t, codec.encode_outcome(o, outcomes_t), key=o.event_id.encode())
        expected[o.event_id] = o.kind.value
    for ev in events:
        producer.produce(verdicts_t, codec.encode_verdict(_verdict(ev), verdicts_t), key=ev.customer_id.encode())
    producer.flush(30)

    proc = start_feedback_worker(env, tmp_path / "worker.log", flush_interval_s=0.5, batch_size=50)
    labels = LabelStore(tmp_path / "examples" / "labels")
    decisions = DecisionStore(tmp_path / "examples" / "decisions")
    try:
        wait_until(lambda: len(labels.read()) == len(expected) and len(decisions.read()) == n, 120,
                   f"{len(expected)} labels and {n} decisions")
    finally:
        stop_feedback_worker(proc)
        log_text = (tmp_path / "worker.log").read_text(errors="replace")
        for key in client.scan_iter(f"*{prefix}*", count=10_000):
            client.delete(key)
    got = labels.read()
    assert dict(zip(got["event_id"], got["outcome_kind"])) == expected
    assert got["snapshot_json"].notna().all() and got["verdict"].eq("pass").all()
    assert "CrossSlot" not in log_text
