"""End to end, in accelerated event time: two weeks of a simulated card stream go
through Kafka with outcomes about seven days late; the faust feedback worker is killed
with SIGKILL in the middle and restarted; four-hourly cycles fine-tune, gate and
promote; a candidate trained on flipped labels is stopped by the gate.

Verdicts come from ``engine.pipeline.DecisionPipeline`` (the engine's own batch path,
with the Redis feature store and its decision log), produced to the verdict topic by
the test, since running the engine worker as well would double the test's cost without
exercising anything of the feedback loop's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
import torch
from confluent_kafka import Producer

from engine.codec import Codec
from engine.settings import KafkaSettings, PathSettings, RedisSettings, Settings, TopicSettings

from tests.integration.feedback_sim import (DAY, Streamer, build_world, evaluate_ap, label_ids, slices,
                                            start_feedback_worker, train_initial, wait_until)

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_feedback_loop_end_to_end(stack, unique, kafka_topics, redis_client, tmp_path):
    from engine.assemble import build_pipeline, load_model_components
    from engine.features.redis_store import RedisFeatureStore
    from feedback.finetune import FineTuneConfig
    from feedback.registry import ModelRegistry
    from feedback.scheduler import FineTuneScheduler, SchedulerConfig
    from feedback.store import DecisionStore, LabelStore

    torch.set_num_threads(1)
    verdicts_t, outcomes_t = kafka_topics("tx.verdicts", 3), kafka_topics("tx.outcomes", 2)
    prefix = f"tgfbe{unique}"
    s = Settings(kafka=KafkaSettings(bootstrap=stack.kafka_bootstrap),
                 topics=TopicSettings(verdicts=verdicts_t, outcomes=outcomes_t),
                 redis=RedisSettings(url=stack.redis_url, key_prefix=prefix),
                 paths=PathSettings(state_dir=tmp_path, models_dir=tmp_path / "models",
                                    reports_dir=tmp_path / "reports", examples_dir=tmp_path / "examples"))
    env = dict(os.environ, TOLLGATE_KAFKA_BOOTSTRAP=stack.kafka_bootstrap, TOLLGATE_REDIS_URL=stack.redis_url,
               TOLLGATE_TOPICS__VERDICTS=verdicts_t, TOLLGATE_TOPICS__OUTCOMES=outcomes_t,
               TOLLGATE_REDIS__KEY_PREFIX=prefix, TOLLGATE_PATHS__EXAMPLES_DIR=str(tmp_path / "examples"),
               TOLLGATE_FEEDBACK__CONSUMER_GROUP=f"tollgate-feedback-{unique}", PYTHONUNBUFFERED="1")

    world = build_world(days=17)
    t0 = world.start_ms
    registry = ModelRegistry(s, redis_client)
    v0 = train_initial(world, t0 + 7 * DAY, s, registry)
    store = RedisFeatureStore(redis_client, s)
    pipeline = build_pipeline(s, model=registry.path_of(v0), context=store, detector=False)

    codec = Codec(s)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "linger.ms": 5})

    def send_verdicts(vs):
        for v in vs:
            producer.produce(verdicts_t, codec.encode_verdict(v, verdicts_t), key=v.customer_id.encode())
        producer.flush(30)

    def send_outcomes(os_):
        for o in os_:
            producer.produce(outcomes_t, codec.encode_outcome(o, outcomes_t), key=o.event_id.encode())
        producer.flush(30)

    streamer = Streamer(world, pipeline, send_verdicts, send_outcomes)
    labels = LabelStore(tmp_path / "examples" / "labels")
    decisions = DecisionStore(tmp_path / "examples" / "decisions")

    def caught_up() -> bool:
        return (label_ids(labels) == streamer.sent_outcomes
                and len(decisions.read()) == len(streamer.sent_verdicts))

    log = tmp_path / "worker.log"
    worker = start_feedback_worker(env, log, flush_interval_s=0.3, batch_size=200)
    try:
        # Week 1-2 streamed while the worker runs; SIGKILL it in the middle of day 10.
        streamer.advance_to(t0 + 10 * DAY)
        wait_until(lambda: len(labels.read()) > 0, 90, "the worker's first labelled examples")
        streamer.advance_to(t0 + 10 * DAY + 12 * 3_600_000)
        worker.send_signal(signal.SIGKILL)
        worker.wait(30)
        assert not caught_up(), "the worker had finished before the kill: the test proves nothing"
        worker = start_feedback_worker(env, log, flush_interval_s=0.3, batch_size=200)
        streamer.advance_to(t0 + 14 * DAY)
        wait_until(caught_up, 120, "the restarted worker to catch up")

        pubsub = redis_client.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(registry.events_channel)
        scheduler = FineTuneScheduler(s, redis_client, progress=False, config=SchedulerConfig(
            min_train_examples=50, finetune=FineTuneConfig(seed=1)))
        results = []
        for now in slices(t0 + 14 * DAY, t0 + 15 * DAY - 1):  # six four-hour cycles
            streamer.advance_to(now)
            wait_until(caught_up, 60, f"the worker to catch up at {now}")
            result = scheduler.run_cycle(now)
            results.append(result)
            assert Path(result.report_dir or tmp_path).exists()
            if result.status == "promoted":  # what the engine's hot-swap watcher does
                parts = load_model_components(registry.path_of(result.candidate), pipeline.components.encoder)
                pipeline.swap(inference=parts["inference"], model_version=parts["model_version"])
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()

    # No outcome lost, none doubled, across the SIGKILL: one label per outcome, latest wins.
    assert label_ids(labels) == streamer.sent_outcomes
    assert sum(1 for _ in redis_client.scan_iter(f"{prefix}:lab:*")) == len(streamer.sent_outcomes)

    statuses = [r.status for r in results]
    assert "promoted" in statuses, [(r.status, r.reasons) for r in results]
    promoted = [r for r in results if r.status == "promoted"]
    for r in promoted:  # every promotion cleared every bar, and says so
        report = json.loads((Path(r.report_dir) / "gate_report.json").read_text())
        assert report["passed"] and all(c["passed"] for c in report["checks"])
        assert (Path(r.report_dir) / "migration_matrix.png").stat().st_size > 0
        assert (Path(r.report_dir) / "reliability.png").stat().st_size > 0
    published = []
    for _ in range(20):  # the subscribe confirmation reads as None too: poll a while
        message = pubsub.get_message(timeout=0.1)
        if message is not None:
            published.append(json.loads(message["data"]))
    assert [p["version"] for p in published] == [r.candidate for r in promoted]
    assert all(p["who"] == "feedback-scheduler" and p["why"] for p in published)
    assert registry.serving_version() == promoted[-1].candidate

    # A candidate fine-tuned on a week of flipped labels is stopped by the gate; serving
    # is unchanged. (A week, because on four hours of labels the bounded update is too
    # small to matter either way — and the gate rightly lets a harmless change through.)
    serving_before = registry.serving_version()
    bad = scheduler.run_cycle(t0 + 15 * DAY, train_since_ms=t0 + 8 * DAY, corrupt=lambda y: 1.0 - y)
    assert bad.status == "refused" and bad.reasons, bad
    assert registry.serving_version() == serving_before
    assert (Path(bad.report_dir) / "candidate" / "model.safetensors").is_file()

    # Average precision on the two following days (ground truth, every event): kept or improved.
    later = [e for e in world.events if e.event_time_ms >= t0 + 15 * DAY]
    ap_initial = evaluate_ap(world, store, registry.path_of(v0), 0, 0, events_after=later)
    ap_final = evaluate_ap(world, store, registry.serving_path(), 0, 0, events_after=later)
    print(f"AP initial {ap_initial:.4f} -> final {ap_final:.4f}; cycles {statuses}")
    assert ap_final >= ap_initial - 0.01
