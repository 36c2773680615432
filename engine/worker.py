"""The engine worker: a short loop that drives consume → decode → decide → emit.

Everything between decode and emit (enrich → encode → infer → detect → decide →
guard) is ``engine.pipeline.DecisionPipeline.decide_batch``; this module only owns
*when* things happen, which is what exactly-once depends on.

One batch, in order — the commit protocol:

1. **Collect.** Poll (≤ 1 s, so SIGTERM is seen) until the micro-batch has B records
   or W ms have passed since its first record (``engine.batch``). No Kafka
   transaction is open while polling, so a rebalance callback never meets one; a
   revoke only drops buffered records of the revoked partitions (their committed
   offsets hand them to the new owner untouched).
2. **Decode.** Undecodable, schema-invalid or out-of-range records become dead
   letters; the rest become events (``engine.decode``).
3. **Decide.** ``decide_batch`` enriches from Redis (idempotent per event id, so a
   redone batch never counts twice; Redis down → degraded verdicts, not errors),
   runs one forward pass and the rules. A transient error here rewinds the batch
   and retries it with backoff; it is never dead-lettered.
4. **Begin** a Kafka transaction on the worker's transactional producer.
5. **Produce** every verdict to ``tx.verdicts`` (key = customer id) and every dead
   letter to ``tx.events.dlq``.
6. **Send offsets**: last offset + 1 of every partition in the batch — dead-lettered
   records included — with the consumer's group metadata, into the transaction.
7. **Commit** the transaction. Verdicts, dead letters and offsets become visible to
   read_committed readers together, or not at all.
8. **Account**: metrics, lag, health beat; then, between batches only, apply a
   ready hot-swapped model.

If 4–7 fail with an abortable error the transaction is aborted, the consumer is
rewound to the batch's first offsets and the batch is redone. A fatal error (this
producer was fenced by a newer instance with the same worker id) ends the process:
the newer instance owns the work. A SIGKILL anywhere leaves either a committed
transaction (done) or an open one that the restarted worker's ``init_transactions``
aborts; either way its events are decided exactly once.

SIGTERM/SIGINT set a flag: the open batch is closed at once, committed, and the
consumer leaves the group before the process exits.
"""

from __future__ import annotations

import logging
import signal
import time
from dataclasses import dataclass
from typing import Any, Sequence

import redis.exceptions
from confluent_kafka import TopicPartition

from engine.batch import MicroBatcher
from engine.codec import Codec, DeadLetter
from engine.consume import EventConsumer, FatalKafkaError, RawRecord
from engine.decode import DecodeStage
from engine.emit import BatchAborted, TransactionalEmitter
from engine.health import HealthState
from engine.metrics import EngineMetrics
from engine.pipeline import DecisionPipeline
from engine.records import TransactionEvent, Verdict
from engine.settings import Settings
from engine.warmup import warm_up

log = logging.getLogger("tollgate.worker")

#: Errors that mean "a dependency is briefly away": retry the batch, never dead-letter.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError, TimeoutError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
LAG_EVERY_S = 1.0


@dataclass(slots=True)
class WorkerOptions:
    worker_id: str
    group_id: str | None = None
    warmup_rounds: int = 2


class Worker:
    """One engine worker: a group member with one transactional producer."""

    def __init__(self, settings: Settings, pipeline: DecisionPipeline, options: WorkerOptions, *,
                 codec: Codec | None = None, metrics: EngineMetrics | None = None,
                 health: HealthState | None = None, hotswap: Any | None = None):
        self.settings = settings
        self.pipeline = pipeline
        self.options = options
        self.codec = codec or Codec(settings)
        self.metrics = metrics or EngineMetrics()
        self.health = health or HealthState()
        self.hotswap = hotswap  # engine.hotswap.ModelWatcher or None
        self.decode = DecodeStage(self.codec)
        self.batcher: MicroBatcher[RawRecord] = MicroBatcher(settings.batch.max_events,
                                                             settings.batch.max_wait_ms)
        self.consumer = EventConsumer(settings, self, group_id=options.group_id)
        self.emitter = TransactionalEmitter(
            settings, options.worker_id,
            encode_verdict=self.codec.encode_verdict, encode_dead_letter=self.codec.encode_dead_letter)
        self._stopping = False
        self._retry_delay_s = 0.0
        self._next_lag_at = 0.0
        pipeline.on_batch = self._on_pipeline_batch

    # -- lifecycle -----------------------------------------------------------------------

    def request_stop(self, *_: Any) -> None:
        """Signal handler: finish the open batch, commit, leave the group."""
        self._stopping = True
        self.health.mark_stopping()

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

    def run(self) -> None:
        """Warm up, join the group, loop until stopped, drain, leave."""
        self.warm_up()
        self.emitter.start()  # fences a previous instance with our worker id
        self.consumer.subscribe()
        self.metrics.set_versions(self.pipeline.model_version, self.pipeline.rules_version)
        self.health.mark_ready()
        self.metrics.ready.set(1)
        log.info("worker ready", extra={"worker_id": self.options.worker_id,
                                        "model_version": self.pipeline.model_version})
        try:
            while not self._stopping:
                self.step()
            if len(self.batcher):
                self._process(self.batcher.take())  # drain: commit what we hold
        finally:
            self.metrics.ready.set(0)
            self.consumer.close()  # leaves the group: partitions move at once
            try:
                self.emitter.close()
            except FatalKafkaError as exc:  # fenced: nothing of ours is open any more
                log.warning("producer close after a fatal error", extra={"error": str(exc)})
            if self.hotswap is not None:
                self.hotswap.stop()
            log.info("worker stopped", extra={"worker_id": self.options.worker_id})

    def warm_up(self) -> float:
        sizes = sorted({1, max(1, self.settings.batch.max_events // 2), self.settings.batch.max_events})
        seconds = warm_up(self.pipeline.decide_batch, self.codec, sizes, decode=self.decode,
                          rounds=self.options.warmup_rounds)
        self.metrics.observe_stage("warmup", seconds)
        return seconds

    # -- the loop ------------------------------------------------------------------------

    def step(self) -> None:
        """One loop iteration: poll a little, and process the batch if it closed."""
        self.health.beat()
        if not len(self.batcher):
            # No open batch: wait (≤ 1 s) for the record that opens one.
            self.batcher.add(self.consumer.poll(1, 1.0))
        if len(self.batcher) and not self.batcher.ready():
            self.batcher.add(self.consumer.poll(self.batcher.room(), self.batcher.remaining_s()))
        if self.batcher.ready() or (self._stopping and len(self.batcher)):
            self._process(self.batcher.take())
        self._between_batches()

    def _process(self, records: list[RawRecord]) -> None:
        if self._retry_delay_s:
            time.sleep(self._retry_delay_s)
        self.metrics.batch_size.observe(len(records))
        t0 = time.perf_counter()
        decoded = self.decode(records)
        t1 = time.perf_counter()
        self.metrics.observe_stage("decode", t1 - t0)
        try:
            verdicts, arrivals, failed = self._decide(decoded.events, decoded.arrival_ms)
        except TRANSIENT_ERRORS as exc:
            self._redo(records, "decide", exc)
            return
        t2 = time.perf_counter()
        dead_letters = decoded.dead_letters + failed
        try:
            self.emitter.commit_batch(verdicts, dead_letters, _next_offsets(records),
                                      self.consumer.group_metadata())
        except BatchAborted as exc:
            self._redo(records, "emit", exc)
            return
        committed_ms = time.time() * 1000.0
        self.metrics.observe_stage("emit", time.perf_counter() - t2)
        self.metrics.transactions.labels("committed").inc()
        self.metrics.observe_committed(verdicts, arrivals, committed_ms)
        for dl in dead_letters:
            self.metrics.dead_letters.labels(dl.stage, dl.error_class).inc()
        self._retry_delay_s = 0.0

    def _decide(self, events: list[TransactionEvent], arrival_ms: list[float]
                ) -> tuple[list[Verdict], list[float], list[DeadLetter]]:
        """Decide a batch; if it fails for a non-transient reason, find the event(s) at fault.

        A deterministic failure on one event (a bug the validator does not catch) must
        not wedge its partition: the batch is retried one event at a time and only the
        events that still fail are dead-lettered (stage ``pipeline``).
        """
        if not events:
            return [], [], []
        try:
            return self.pipeline.decide_batch(events, arrival_ms), list(arrival_ms), []
        except TRANSIENT_ERRORS:
            raise
        except Exception:  # noqa: BLE001 - isolate the poison event below
            log.exception("batch failed; retrying its events one by one")
        verdicts: list[Verdict] = []
        arrivals: list[float] = []
        failed: list[DeadLetter] = []
        now_ms = int(time.time() * 1000)
        for event, arrived in zip(events, arrival_ms):
            try:
                verdicts.extend(self.pipeline.decide_batch([event], [arrived]))
                arrivals.append(arrived)
            except TRANSIENT_ERRORS:
                raise
            except Exception as exc:  # noqa: BLE001
                failed.append(DeadLetter.from_error(exc, now_ms, value=self.codec.encode_event(event),
                                                    source=event.source, stage="pipeline"))
        return verdicts, arrivals, failed

    def _redo(self, records: list[RawRecord], stage: str, exc: BaseException) -> None:
        """Rewind to the batch's first offsets; the next poll reads it again after a backoff."""
        self.metrics.transactions.labels("aborted" if stage == "emit" else "retried").inc()
        self._retry_delay_s = min(max(self._retry_delay_s * 2, 0.05), 5.0)
        log.warning("batch will be redone", extra={"stage": stage, "error": str(exc),
                                                   "error_class": type(exc).__name__,
                                                   "backoff_s": self._retry_delay_s})
        self.consumer.rewind(_first_offsets(records))

    def _between_batches(self) -> None:
        now = time.monotonic()
        if now >= self._next_lag_at:
            self._next_lag_at = now + LAG_EVERY_S
            self.metrics.set_lag(self.consumer.lag())
        if self.hotswap is not None:
            self.hotswap.apply_ready(self.pipeline, self.metrics)

    def _on_pipeline_batch(self, timings: Any) -> None:
        for stage, ms in timings.stage_ms.items():
            self.metrics.stage_latency.labels(stage).observe(ms)

    # -- RebalanceListener -----------------------------------------------------------------

    def on_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        pass

    def on_revoked(self, partitions: Sequence[TopicPartition], lost: bool) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        dropped = self.batcher.drop(lambda r: (r.topic, r.partition) not in gone)
        if dropped:
            log.info("dropped buffered records of revoked partitions",
                     extra={"records": dropped, "lost": lost})


def _next_offsets(records: Sequence[RawRecord]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for r in records:
        key = (r.topic, r.partition)
        if r.offset + 1 > out.get(key, -1):
            out[key] = r.offset + 1
    return out


def _first_offsets(records: Sequence[RawRecord]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for r in records:
        key = (r.topic, r.partition)
        if key not in out or r.offset < out[key]:
            out[key] = r.offset
    return out


if __name__ == "__main__":  # ``python -m engine.worker [options]`` == ``tollgate run [options]``
    import sys

    from engine.cli import main

    sys.argv = ["tollgate", "run", *sys.argv[1:]]
    main()
