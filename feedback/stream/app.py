"""The feedback worker: a faust-streaming app over ``tx.verdicts`` and ``tx.outcomes``.

faust gives us the consumer group, rebalancing, batching and offset commits; the join
itself is in Redis (``feedback.stream.joinstate``), because faust has no stream-to-stream
``join()`` and our inputs are keyed differently. Each agent:

1. takes a batch of messages (``take_events``: at most ``batch_size`` or ``within``
   seconds, whichever first);
2. decodes them with ``engine.wire.codec`` (Avro or JSON); an undecodable message is logged
   with its position and skipped — the engine already dead-letters bad *events*, and a
   bad verdict or outcome cannot be repaired here;
3. hands the batch to ``FeedbackProcessor.on_batch`` in a thread (blocking Redis calls
   stay off the event loop) — join update, pending sets and the delayed-label update
   are durable in Redis when it returns;
4. returns, and only then does faust ack the messages and later commit their offsets.
   A batch that still fails after ``BATCH_ATTEMPTS`` tries (Redis away, a bug) ends the
   process with ``EXIT_CANNOT_PROGRESS``, unacked: a crashed faust agent is restarted in
   place by its supervisor, which would leave the worker up, reporting healthy, and
   failing batch after batch; a restarted process re-reads the batch instead. A timed
   flush is retried the same way, then ends the process the same way (faust would crash
   the whole app on the first exception of a timer, a passing Redis blip included).

A timer flushes pending labelled examples and decisions to Parquet, and the worker
flushes once more when it stops. Killed at any step, a restarted worker re-reads from
the last committed offsets; every step is idempotent, so no outcome is lost and none
counts twice.

Internal topics: none — no faust tables and ``topic_disable_leader`` — so the broker's
disabled auto-create never bites; the input topics must exist (``tollgate topics create``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import faust

from engine.settings import Settings
from engine.wire.codec import Codec, DecodeError
from feedback.stream.feedback_metrics import FeedbackMetrics
from feedback.stream.process import FeedbackProcessor
from feedback.trust import stamp_source

log = logging.getLogger(__name__)

#: Tries per batch before the worker exits, and the waits between them (bounded: ~3.5 s).
BATCH_ATTEMPTS = 4
BATCH_RETRY_WAITS_S = (0.5, 1.0, 2.0)
#: The feedback worker's exit code when a batch or a flush could not be done.
EXIT_CANNOT_PROGRESS = 6  # the engine worker uses 1, 3, 4 and 5 (docs/operations.md)


def apply_with_retries(apply: Callable[[], Any], *, what: str = "feedback batch",
                       sleep: Callable[[float], None] | None = None) -> Any:
    """``apply()``, tried ``BATCH_ATTEMPTS`` times (the join and the flush are idempotent,
    so a retry after a partial one changes nothing twice); the last failure propagates."""
    sleep = sleep or time.sleep
    for attempt, wait_s in enumerate((*BATCH_RETRY_WAITS_S, None), start=1):
        try:
            return apply()
        except Exception as exc:  # noqa: BLE001 - any failure is retried, then the process exits
            if wait_s is None:
                raise
            log.warning("%s failed (try %d of %d), retrying in %.1f s: %s", what, attempt, BATCH_ATTEMPTS, wait_s, exc)
            sleep(wait_s)
    raise AssertionError("unreachable")


async def _retried_or_exit(apply: Callable[[], Any], what: str) -> Any:
    """``apply_with_retries`` on a thread; when it still fails, log and end the process
    (``_exit``), so the supervisor restarts the worker from its committed offsets.
    Returns ``None`` only if ``_exit`` returns (tests replace it)."""
    try:
        return await asyncio.to_thread(apply_with_retries, apply, what=what)
    except Exception:  # noqa: BLE001 - logged, then the process ends
        log.exception("%s failed %d times; exiting (code %d) so the supervisor restarts the worker "
                      "from its committed offsets", what, BATCH_ATTEMPTS, EXIT_CANNOT_PROGRESS)
        _exit(EXIT_CANNOT_PROGRESS)
        return None


def _exit(code: int) -> None:
    # Not sys.exit: faust would catch it in the agent and restart the agent in place.
    logging.shutdown()
    os._exit(code)


def broker_urls(bootstrap: str) -> list[str]:
    """``host:port,host:port`` → faust's ``kafka://`` URLs.

    >>> broker_urls("127.0.0.1:9092,10.0.0.2:9092")
    ['kafka://127.0.0.1:9092', 'kafka://10.0.0.2:9092']
    """
    return [f"kafka://{h.strip()}" for h in bootstrap.split(",") if h.strip()]


def faust_datadir(settings: Settings, app_id: str) -> Path:
    """Where faust keeps its per-app files: ``<state_dir>/faust/<app_id>``, created here
    because faust makes only the last level of it."""
    path = Path(settings.paths.state_dir) / "faust" / app_id
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_app(settings: Settings, processor: FeedbackProcessor, *, app_id: str | None = None,
              batch_size: int = 500, within_s: float = 0.5, flush_interval_s: float = 5.0,
              consume_events: bool = False, session_timeout_s: float = 10.0,
              metrics: FeedbackMetrics | None = None) -> faust.App:
    """The faust app with its agents and flush timer; run it with ``run_worker``."""
    name = app_id or settings.feedback.consumer_group
    app = faust.App(
        name,
        broker=broker_urls(settings.kafka.bootstrap),
        # faust's default data dir is "<name>-data" in the working directory: the repo
        # root in tests, a read-only /app in the image. Ours lives under the state dir.
        datadir=str(faust_datadir(settings, name)),
        value_serializer="raw", key_serializer="raw",
        store="memory://",
        topic_disable_leader=True,
        topic_allow_declare=False,
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        broker_commit_interval=1.0,
        # A SIGKILLed worker keeps its partitions until its session times out; faust's
        # 60 s default would stall a restarted worker for a minute.
        broker_session_timeout=session_timeout_s,
        broker_heartbeat_interval=min(3.0, session_timeout_s / 3),
        stream_wait_empty=True,
    )
    codec = Codec(settings)
    trust = settings.feedback.trust
    inputs = [("verdict", settings.topics.verdicts, codec.verdicts),
              ("outcome", settings.topics.outcomes, codec.outcomes)]
    if consume_events:
        inputs.append(("event", settings.topics.events, codec.events))
    if trust.trusted_topic:  # ACL-protected: only trusted sources may write it (docs/feedback.md)
        inputs.append(("outcome", trust.trusted_topic, codec.outcomes))

    for kind, topic_name, record_codec in inputs:
        topic = app.topic(topic_name, value_type=bytes, key_type=bytes)
        # Trust comes from the topic: an outcome claiming a trusted source elsewhere is demoted.
        stamp = (None if kind != "outcome" else functools.partial(
            stamp_source, from_trusted_topic=topic_name == trust.trusted_topic,
            trusted_sources=tuple(trust.trusted_sources)))
        name = "feedback-outcome-trusted" if kind == "outcome" and topic_name == trust.trusted_topic \
            else f"feedback-{kind}"
        app.agent(topic, name=name)(
            _make_agent(kind, record_codec, processor, batch_size, within_s, metrics, stamp))

    @app.timer(interval=flush_interval_s)
    async def flush_pending() -> None:
        await flush_once(processor, metrics)

    @app.on_before_shutdown.connect
    async def final_flush(app_: Any, **kwargs: Any) -> None:  # noqa: ARG001
        await asyncio.to_thread(processor.flush)

    return app


async def flush_once(processor: FeedbackProcessor, metrics: FeedbackMetrics | None) -> None:
    """One timed flush: retried like a batch; if it still fails, the process exits."""
    stats = await _retried_or_exit(processor.flush, "the flush to the decision and label stores")
    if stats is None:
        return
    if metrics is not None:
        metrics.labels_written.inc(stats.labels_written)
        metrics.decisions_written.inc(stats.decisions_written)
        metrics.last_flush.set_to_current_time()
        if stats.oldest_decision_ms is not None:
            metrics.decision_lag.set(max(0.0, time.time() - stats.oldest_decision_ms / 1000))
        try:  # what is left for the next flush; a gauge must not take the worker down
            backlog = await asyncio.to_thread(processor.backlog)
        except Exception as exc:  # noqa: BLE001
            log.warning("could not read the feedback backlog for /metrics: %s", exc)
        else:
            metrics.pending.labels("decisions").set(backlog["decisions"])
            metrics.pending.labels("labels").set(backlog["labels"])
            metrics.awaiting_verdict.set(backlog["awaiting_verdict"])
    if stats.labels_written or stats.decisions_written:
        log.info("flushed %d labelled examples, %d decisions", stats.labels_written, stats.decisions_written)


def _make_agent(kind: str, record_codec: Any, processor: FeedbackProcessor, batch_size: int,
                within_s: float, metrics: FeedbackMetrics | None,
                stamp: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None):
    async def agent(stream: Any) -> None:
        async for events in stream.take_events(batch_size, within=within_s):
            payloads = []
            for ev in events:
                msg = ev.message
                try:
                    record = record_codec.decode(msg.value, list(msg.headers or ()), key=msg.key)
                except DecodeError as exc:
                    log.warning("skipping undecodable %s at %s[%d]@%d: %s", kind, msg.topic,
                                msg.partition, msg.offset, exc)
                    if metrics is not None:
                        metrics.undecodable.labels(kind).inc()
                    continue
                payloads.append(record.to_dict() if stamp is None else stamp(record.to_dict()))
            if payloads:
                joined = await _retried_or_exit(functools.partial(processor.on_batch, kind, payloads),
                                                f"a {kind} batch of {len(payloads)}")
                if joined is None:
                    return
                if metrics is not None:
                    metrics.messages.labels(kind).inc(len(payloads))
                    metrics.joined.inc(sum(1 for r in joined if r.outcome is not None and r.verdict is not None))
    agent.__name__ = f"feedback_{kind}"
    return agent


def run_worker(settings: Settings, processor: FeedbackProcessor, **kwargs: Any) -> None:
    """Run the worker until SIGTERM/SIGINT (faust installs the handlers)."""
    # local: faust loads only in the feedback worker
    from faust.worker import Worker

    app = build_app(settings, processor, **kwargs)
    Worker(app, loglevel="info", quiet=True).execute_from_commandline()
