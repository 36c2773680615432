"""The engine worker: a short loop that drives consume → decode → decide → emit.

Everything between decode and emit (enrich → encode → infer → detect → decide →
guard) is ``engine.pipeline.DecisionPipeline``; this module only owns *when* things
happen, which is what exactly-once depends on.

One batch, in order — the commit protocol:

1. **Collect.** Poll until the micro-batch has B records, or W ms have passed since its
   first record, or (``settings.batch.close_when_idle``, the default) the consumer has
   nothing more fetched: a quiet stream then waits for no company, and under load
   batches fill by themselves while the previous ones are being decided
   (``engine.stages.batch``).
2. **Decode.** Undecodable, schema-invalid or out-of-range records become dead
   letters; the rest become events (``engine.stages.decode``). Re-sent event ids (another
   record owns the id) are dropped and counted (``engine.worker.dedupe``); their offsets
   still commit. Redis down: held like enrich (``engine.worker.redis_hold``).
3. **Decide**, in three phases (``DecisionPipeline.prepare`` / ``score`` /
   ``finish``): enrich from Redis (idempotent per event id, so a redone batch never
   counts twice; Redis down → degraded verdicts, not errors) and encode; one forward
   pass; detector, policy and rules. A transient error rewinds the batch and retries
   it with backoff; it is never dead-lettered.
4. **Begin** a Kafka transaction on the worker's transactional producer.
5. **Send offsets**: last offset + 1 of every partition in the batch — dead-lettered
   records included — with the consumer's group metadata, into the transaction.
6. **Produce** every verdict to ``tx.verdicts`` (key = customer id) and every dead
   letter to ``tx.events.dlq``. (Offsets first: ``engine.stages.emit`` says why.)
7. **Commit** the transaction. Verdicts, dead letters and offsets become visible to
   read_committed readers together, or not at all.
8. **Account**: metrics, lag, health beat; between batches, apply a ready hot-swapped
   model (batches already prepared finish with the model they started with).

**Overlap.** When a batch closes with records still arriving (a backlog), it is
prepared (enrich, encode) on a prepare thread and scored on an infer thread — the
forward pass in a model process by default (``settings.batch.infer_process``,
``engine.worker.infer_process``) — while the main thread finishes older batches, and its
transaction (4–7) runs on a commit thread while the main thread goes on
(``engine.worker.commit``). With ``settings.batch.backlog_depth`` = 2, batch N commits while
N+1 is finished, N+2 scored and N+3 prepared: Redis round trips and the model process
never wait for the main thread, which holds the GIL for decode, detect, decide, guard
and encoding verdicts and is the bottleneck at saturation. A quiet stream's batch is
prepared, finished and committed in line (scored on the infer thread only when large);
its transaction is begun and given its offsets (4–5) on the commit thread while it is
decided (``settings.batch.open_transaction_early``), since no poll, and so no rebalance,
comes between its read and its commit; a batch redone instead aborts that transaction.
Transactions commit strictly in batch order, one at a time. Preparing runs in batch
order (one prepare thread; an in-line prepare waits for it), so context is recorded in
arrival order — except that a batch whose prepare failed on a poison event is decided
one event at a time after later batches were prepared.

If a transaction fails with an abortable error it is aborted; the consumer is rewound
to the earliest offset of that batch *and every batch after it* (all uncommitted), and
they are redone. A fatal error (this producer was fenced by a newer instance with the
same worker id) ends the process: the newer instance owns the work. A SIGKILL anywhere
leaves committed transactions (done) and at most one open one that the restarted
worker's ``init_transactions`` aborts; either way its events are decided exactly once.

**Rebalances.** A rebalance callback runs inside ``poll`` on the main thread, and a
transaction may be committing then: the callback waits for it to finish, so offsets
are settled before partitions move. Records of a revoked partition in batches still in
flight are dropped from their transactions (neither verdict nor offset is written; the
new owner re-reads them from the committed offset), and buffered ones are discarded.

SIGTERM/SIGINT set a flag: the open batch is closed at once, everything in flight is
committed, and the consumer leaves the group before the process exits — within
``settings.worker.stop_timeout_s``, or the ``ExitDeadline`` ends the process anyway.

**Bounds.** Every wait on the commit path is bounded (``engine.stages.emit``,
``engine.worker.commit``, ``engine.worker.watchdog``); a librdkafka call that overruns its watchdog
is fatal, and the worker exits non-zero for its supervisor to restart it (the restarted
worker's ``init_transactions`` aborts what this one left open). The loop reports
progress — a committed transaction, or a poll with nothing to do and no lag — to
``HealthState``; without progress for ``stall_after_s`` /healthz and /readyz say 503 and
the composition root's ``StallWatchdog`` exits the process (``docs/operations.md``).
"""

from __future__ import annotations

import gc
import logging
import signal
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import redis.exceptions
from confluent_kafka import TopicPartition

from engine.features.memory import MemoryFeatureStore
from engine.features.spec import DAY_MS
from engine.features.store import ContextUnavailable
from engine.observe.health import HealthState
from engine.observe.metrics import EngineMetrics
from engine.pipeline import DecisionPipeline
from engine.records import Verdict
from engine.settings import Settings
from engine.stages.batch import MicroBatcher
from engine.stages.consume import MAX_POLL_TIMEOUT_S, EventConsumer, FatalKafkaError, RawRecord
from engine.stages.decode import Decoded, DecodeStage
from engine.wire.codec import Codec, DeadLetter
from engine.worker.commit import BatchCommitter, TransactionFailed
from engine.worker.dedupe import ReSendFilter
from engine.worker.hotswap import ModelWatcher
from engine.worker.inflight import InFlight, Started, first_offsets, run_now, score_when_prepared, worth_a_thread
from engine.worker.redis_hold import HOLD_RETRY_MAX_S, ContextHeld, RedisHold
from engine.worker.warmup import warm_up
from engine.worker.watchdog import EXIT_FATAL_KAFKA, EXIT_STOP_OVERRAN, ExitDeadline

log = logging.getLogger("tollgate.worker")

#: Errors that mean "a dependency is briefly away": retry the batch, never dead-letter.
TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError, TimeoutError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
LAG_EVERY_S = 1.0
#: Longest poll while a batch is being scored: finishing it must not wait for traffic.
SCORING_POLL_S = 0.001
#: Longest poll while only a transaction is committing (a failed one is redone this soon).
COMMITTING_POLL_S = 0.05


@dataclass(slots=True)
class WorkerOptions:
    worker_id: str
    group_id: str | None = None
    warmup_rounds: int = 2


class Worker:
    """One engine worker: a group member with one transactional producer."""

    def __init__(self, settings: Settings, pipeline: DecisionPipeline, options: WorkerOptions, *,
                 consumer: EventConsumer, committer: BatchCommitter, codec: Codec, metrics: EngineMetrics,
                 health: HealthState, hotswap: ModelWatcher | None = None,
                 exit_deadline: ExitDeadline | None = None,
                 resends: ReSendFilter | None = None, hold: RedisHold | None = None):
        """Collaborators come from the composition root (``engine.worker.main.build_worker``)."""
        self.settings = settings
        self.pipeline = pipeline
        self.options = options
        self.codec = codec
        self.metrics = metrics
        self.health = health
        self.hotswap = hotswap
        #: Ends the process if a stop (or the clean-up after a failure) overruns
        #: ``settings.worker.stop_timeout_s``; None in library use and unit tests.
        self.exit_deadline = exit_deadline
        self.resends = resends  # None: every record is decided, re-sent or not
        self.hold = hold  # shared with the pipeline's HoldingStore: one budget per event
        self.decode = DecodeStage(self.codec)
        self.batcher: MicroBatcher[RawRecord] = MicroBatcher(settings.batch.max_events,
                                                             settings.batch.max_wait_ms)
        self.close_when_idle = settings.batch.close_when_idle
        self.open_early = settings.batch.open_transaction_early
        # A model in a child process is waited for on the infer thread (engine.worker.infer_process).
        self.infer_thread = settings.batch.infer_thread or settings.batch.infer_process
        self.consumer = consumer
        self.committer = committer
        self._infer_thread = ThreadPoolExecutor(1, thread_name_prefix="tollgate-infer")
        self._prepare_thread = ThreadPoolExecutor(1, thread_name_prefix="tollgate-prepare")
        self.backlog_depth = settings.batch.backlog_depth
        self._pending = Started()
        self._stopping = False
        self._backlog = False  # the last batch closed with records still coming
        self._retry_delay_s = 0.0
        self._next_lag_at = 0.0
        self._lag_total = 0  # records behind, at the last lag reading
        #: Seconds per start-up phase, logged with "worker ready" and the first verdict
        #: (``ops/bench/restart.py`` reads them); ``note_startup`` adds the root's phases.
        self._startup: dict[str, float] = {}
        self._ready_at: float | None = None
        pipeline.on_batch = self._on_pipeline_batch

    # -- lifecycle -----------------------------------------------------------------------

    def request_stop(self, *_: Any) -> None:
        """Signal handler: finish the open batch, commit, leave the group."""
        self._stopping = True
        self.health.mark_stopping()
        if self.exit_deadline is not None:
            self.exit_deadline.arm(self.settings.worker.stop_timeout_s, EXIT_STOP_OVERRAN, "stop requested")

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self.request_stop)
        signal.signal(signal.SIGINT, self.request_stop)

    def run(self) -> None:
        """Fence the previous instance, join the group and warm up, all three at once;
        loop until stopped, drain, leave."""

        def fence() -> float:
            t = time.perf_counter()
            self.committer.emitter.start()  # init_transactions: fences a previous instance with our worker id
            return time.perf_counter() - t

        # A restart waits for the slowest of the three, not their sum: fencing is a
        # broker round trip and the join runs on librdkafka's threads, while the warm-up
        # batches use this one (ops/bench/restart.py times each). Nothing is consumed or
        # committed before the fence is done: the loop starts after it.
        with ThreadPoolExecutor(1, thread_name_prefix="tollgate-fence") as fencing:
            fenced = fencing.submit(fence)
            self.consumer.subscribe(self)
            t0 = time.perf_counter()
            self.warm_up()
            self._startup["warmup_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            # bounded without a timeout here: the emitter's calls retry for a while, then
            # its watchdog ends the process (engine.stages.emit, engine.worker.watchdog)
            self._startup["init_transactions_s"] = fenced.result()
            self._startup["fence_wait_after_warmup_s"] = time.perf_counter() - t0
        if self.hold is not None:
            self.hold.active = True  # real events from now on: hold them while Redis is down
        settle_collector(self.settings.worker.gc_young_threshold)
        self.metrics.set_versions(self.pipeline.model_version, self.pipeline.rules_version)
        self.health.mark_ready()
        self.metrics.ready.set(1)
        log.info("worker ready", extra={"worker_id": self.options.worker_id,
                                        "model_version": self.pipeline.model_version,
                                        **{k: round(v, 3) for k, v in self._startup.items()}})
        self._ready_at = time.perf_counter()
        stopped_cleanly = False
        try:
            while not self._stopping:
                self.step()
            self.flush()  # drain: commit everything we hold
            stopped_cleanly = True
        except BaseException:
            # Clean-up after a failure may block on the call that failed (a wedged
            # librdkafka call blocks close too): bound it like a stop.
            if self.exit_deadline is not None:
                self.exit_deadline.arm(self.settings.worker.stop_timeout_s, EXIT_FATAL_KAFKA, "worker failed")
            raise
        finally:
            self.metrics.ready.set(0)
            # A clean stop (a deploy, a scale-down) leaves the group: partitions move at
            # once. After a failure a static member keeps its place, so the restart its
            # supervisor makes under the same id takes the partitions back without a rebalance.
            self.consumer.close(leave_group=stopped_cleanly)
            try:
                self.committer.emitter.close()
            except FatalKafkaError as exc:  # fenced: nothing of ours is open any more
                log.warning("producer close after a fatal error", extra={"error": str(exc)})
            self._prepare_thread.shutdown(wait=True)
            self._infer_thread.shutdown(wait=True)
            self.committer.shutdown()
            if self.hotswap is not None:
                self.hotswap.stop()
            log.info("worker stopped", extra={"worker_id": self.options.worker_id})

    def note_startup(self, phase: str, seconds: float) -> None:
        """A start-up phase timed by the composition root (imports, model load)."""
        self._startup[phase] = seconds

    def warm_up(self) -> float:
        """Synthetic batches through the whole path, enriched from a throwaway in-memory
        store: warm-up never writes the live context store (no ``__warmup__`` keys in
        Redis) and never waits on it (a start while Redis is down still warms up)."""
        sizes = sorted({1, max(1, self.settings.batch.max_events // 2), self.settings.batch.max_events})
        live_store = self.pipeline.swap(store=MemoryFeatureStore(snapshot_retention_ms=DAY_MS)).store
        try:
            seconds = warm_up(self._decide_on_threads, self.codec, sizes, decode=self.decode,
                              rounds=self.options.warmup_rounds)
        finally:
            self.pipeline.swap(store=live_store)
        self.metrics.observe_stage("warmup", seconds)
        return seconds

    def _decide_on_threads(self, events: Sequence[Any], arrival_ms: Sequence[float]) -> Sequence[Verdict]:
        """One batch on the threads the loop uses for a backlog (warms their kernels)."""
        if not self.infer_thread:
            return self.pipeline.decide_batch(events, arrival_ms)
        preparing = self._prepare_thread.submit(self.pipeline.prepare, events, arrival_ms)
        return self.pipeline.finish(self._infer_thread.submit(score_when_prepared, self.pipeline, preparing).result())

    # -- the loop ------------------------------------------------------------------------

    def step(self) -> None:
        """One loop iteration: notice a committed (or failed) transaction; collect a
        little; decide a closed batch and commit it (with the infer thread: start scoring
        it and finish the previous one meanwhile), or, with nothing new, finish the batch
        being scored."""
        self.health.beat()
        self._reap_commit(block=False)
        records = self._collect()
        if records:
            self._start(records, backlog=self._backlog)
        elif self._pending:
            self._finish_oldest()
        elif self.committer.in_flight is None and not len(self.batcher) and self._lag_total == 0:
            self.health.progress()  # caught up with nothing to do: a quiet stream is no stall
        self._between_batches()

    def flush(self) -> None:
        """Decide and commit everything in flight and buffered, in order (drain; tests)."""
        if len(self.batcher):
            self._start(self.batcher.take())
        while self._pending:
            self._finish_oldest()
        self._reap_commit(block=True)

    def _collect(self) -> list[RawRecord] | None:
        """Poll into the batcher; return the batch if it closed."""
        b = self.batcher
        if not len(b):
            # Wait for the record that opens a batch: up to MAX_POLL_TIMEOUT_S when idle (so
            # SIGTERM is seen), briefly when work in flight needs the loop.
            wait_s = (SCORING_POLL_S if self._pending
                      else COMMITTING_POLL_S if self.committer.in_flight is not None else MAX_POLL_TIMEOUT_S)
            b.add(self.consumer.poll(1, wait_s))
            if not len(b):
                return None
        idle = False
        if not b.ready():
            wait_s = 0.0 if self.close_when_idle else b.remaining_s()
            if self._pending:
                wait_s = min(wait_s, SCORING_POLL_S)
            got = self.consumer.poll(b.room(), wait_s)
            b.add(got)
            idle = len(got) < 1
        if b.ready() or (self.close_when_idle and idle) or self._stopping:
            self._backlog = not idle and not self._stopping  # records were still coming
            return b.take()
        return None

    def _start(self, records: list[RawRecord], backlog: bool = False) -> None:
        """Decode a closed batch and start it: a backlog's (records were still arriving)
        on the prepare and infer threads, its transaction to overlap the next batch; a
        quiet stream's prepared here. Then finish older batches (ahead in commit order)
        until ``backlog_depth`` remain on the threads — none if this one is done."""
        if self._retry_delay_s:
            time.sleep(self._retry_delay_s)
        self.metrics.batch_size.observe(len(records))
        t0 = time.perf_counter()
        batch = InFlight(records, self.decode(records), overlap_commit=backlog)
        self.metrics.observe_stage("decode", time.perf_counter() - t0)
        if self.open_early and not backlog and not self._pending and self.committer.in_flight is None:
            # Committed next and in line, within this step (no poll, so no revocation,
            # comes between): its transaction can open while it is decided.
            self.committer.open_early(batch, self.consumer.group_metadata())
        if self.resends is not None and batch.decoded.events:
            try:
                self._drop_resends(batch)
            except TRANSIENT_ERRORS as exc:
                self._redo(batch, "decide", exc)
                return
        events, arrivals = batch.decoded.events, batch.decoded.arrival_ms
        on_thread = False
        if not events:
            batch.decided([], [], [])
        elif self.infer_thread and backlog:
            batch.preparing = self._prepare_thread.submit(self.pipeline.prepare, events, arrivals)
            batch.scoring = self._infer_thread.submit(score_when_prepared, self.pipeline, batch.preparing)
            on_thread = True
        else:
            self._pending.wait_for_prepares()  # enrich in batch order
            try:
                prepared = self.pipeline.prepare(events, arrivals)
            except TRANSIENT_ERRORS as exc:
                self._redo(batch, "decide", exc)
                return
            except Exception:  # noqa: BLE001 - isolate the poison event below
                log.exception("batch failed to prepare; deciding its events one by one")
                if not self._decide_one_by_one(batch):
                    return
            else:
                on_thread = self.infer_thread and worth_a_thread(prepared)
                batch.scoring = (self._infer_thread.submit(self.pipeline.score, prepared) if on_thread
                                 else run_now(self.pipeline.score, prepared))
        self._pending.append(batch)
        # A batch whose transaction is open is finished now, whatever thread scores it.
        while len(self._pending) > (self.backlog_depth if on_thread and batch.opening is None else 0):
            self._finish_oldest()

    def _drop_resends(self, batch: InFlight) -> None:
        """Keep the events whose record owns their id; drop and count re-sends. Redis
        down: hold the batch (``ContextHeld``) while inside its budget, then decide it
        unchecked rather than not at all."""
        events, arrivals = batch.decoded.events, batch.decoded.arrival_ms
        try:
            owners = self.resends.owners(events)  # type: ignore[union-attr]
        except ContextUnavailable as exc:
            if self.hold is not None and self.hold.should_hold([e.event_id for e in events]):
                raise ContextHeld(f"re-send check: {exc}") from exc
            self.metrics.resend_unchecked.inc(len(events))
            return
        if self.hold is not None:
            self.hold.recovered()
        if all(owners):
            return
        keep = [i for i, own in enumerate(owners) if own]
        self.metrics.resent_events.inc(len(events) - len(keep))
        log.info("re-sent events dropped", extra={"events": len(events) - len(keep)})
        batch.decoded = Decoded([events[i] for i in keep], [arrivals[i] for i in keep], batch.decoded.dead_letters)

    def _finish_oldest(self) -> None:
        batch = self._pending.pop_oldest()
        self._finish(batch, later=list(self._pending))

    def _finish(self, batch: InFlight, later: Sequence[InFlight] = ()) -> None:
        """detect → decide → guard for a scored batch, then commit it. A prepare or
        score that failed on the threads raises here, and is handled as in line."""
        if batch.scoring is not None:
            try:
                verdicts = self.pipeline.finish(batch.scoring.result())
                batch.decided(verdicts, batch.decoded.events, batch.decoded.arrival_ms)
            except TRANSIENT_ERRORS as exc:
                self._redo(batch, "decide", exc, later=later)
                return
            except Exception:  # noqa: BLE001
                log.exception("batch failed; retrying its events one by one")
                if not self._decide_one_by_one(batch, later):
                    return
        self._submit_commit(batch, later)

    def _decide_one_by_one(self, batch: InFlight, later: Sequence[InFlight] = ()) -> bool:
        """A deterministic failure on one event (a bug the validator does not catch) must
        not wedge its partition: the batch is decided one event at a time and only the
        events that still fail are dead-lettered (stage ``pipeline``). Enrich is
        idempotent per event id, so events already recorded get their stored context.
        False when a transient error sent the batch back to be redone."""
        verdicts: list[Verdict] = []
        events, arrivals, failed = [], [], []
        now_ms = int(time.time() * 1000)
        for event, arrived in zip(batch.decoded.events, batch.decoded.arrival_ms):
            try:
                verdicts.extend(self.pipeline.decide_batch([event], [arrived]))
                events.append(event)
                arrivals.append(arrived)
            except TRANSIENT_ERRORS as exc:
                self._redo(batch, "decide", exc, later=later)
                return False
            except Exception as exc:  # noqa: BLE001
                failed.append(DeadLetter.from_error(exc, now_ms, value=self.codec.encode_event(event),
                                                    source=event.source, stage="pipeline"))
        batch.preparing = batch.scoring = None  # decided here, not on the threads
        batch.decided(verdicts, events, arrivals, failed)
        return True

    # -- committing ------------------------------------------------------------------------

    def _submit_commit(self, batch: InFlight, later: Sequence[InFlight] = ()) -> None:
        """Begin ``batch``'s transaction once the previous one has committed; on a quiet
        stream (no overlap) it commits in line and is accounted for at once."""
        if not self._reap_commit(block=True, later=[batch, *later]):
            return  # the previous transaction failed: this batch was rewound with it
        if self.committer.begin(batch, self.consumer.group_metadata) and not batch.overlap_commit:
            self._reap_commit(block=True, later=later)

    def _reap_commit(self, block: bool, later: Sequence[InFlight] = ()) -> bool:
        """Account for the transaction in flight once it is done (waiting for it when
        ``block``). False when it failed: it and every later batch were rewound."""
        try:
            if self.committer.reap(block):
                self._retry_delay_s = 0.0
                self.health.progress()
                if self._ready_at is not None:  # the first transaction since start
                    log.info("first verdicts committed", extra={
                        "after_ready_s": round(time.perf_counter() - self._ready_at, 3)})
                    self._ready_at = None
        except TransactionFailed as failed:
            self._redo(failed.batch, "emit", failed.error, later=later)
            return False
        return True

    def _redo(self, failed: InFlight, stage: str, exc: BaseException, later: Sequence[InFlight] = ()) -> None:
        """Rewind to the first uncommitted offsets — ``failed``, every batch after it and
        the batcher's buffer — and redo them after a backoff. A transaction that was
        committing before ``failed`` is settled first: committed, it stays; failed, it
        is redone too."""
        self.metrics.transactions.labels("aborted" if stage == "emit" else "retried").inc()
        self._retry_delay_s = min(max(self._retry_delay_s * 2, 0.05), 5.0)
        if isinstance(exc, ContextHeld):  # Redis back must be noticed within the hold budget
            self._retry_delay_s = min(self._retry_delay_s, HOLD_RETRY_MAX_S)
        log.warning("batch will be redone", extra={"stage": stage, "error": str(exc),
                                                   "error_class": type(exc).__name__,
                                                   "backoff_s": self._retry_delay_s})
        uncommitted = [failed, *later]
        earlier = self.committer.settle_before(failed)
        if earlier is not None:  # its transaction failed too
            uncommitted.append(earlier)
        uncommitted += self._pending.take_all()
        for batch in uncommitted:
            self.committer.abandon(batch)  # a transaction opened early for it is aborted
        uncommitted_records = [b.records for b in uncommitted] + [self.batcher.take()]
        self.consumer.rewind(first_offsets(uncommitted_records))

    def _between_batches(self) -> None:
        now = time.monotonic()
        if now >= self._next_lag_at:
            self._next_lag_at = now + LAG_EVERY_S
            lag = self.consumer.lag()
            self._lag_total = sum(lag.values())
            self.metrics.set_lag(lag)
        if self.hotswap is not None:
            self.hotswap.apply_ready(self.pipeline, self.metrics)

    def _on_pipeline_batch(self, timings: Any) -> None:
        for stage, ms in timings.stage_ms.items():
            self.metrics.stage_latency.labels(stage).observe(ms)

    # -- RebalanceListener -----------------------------------------------------------------

    def on_assigned(self, partitions: Sequence[TopicPartition]) -> None:
        if partitions and self._ready_at is not None and "assigned_after_ready_s" not in self._startup:
            self._startup["assigned_after_ready_s"] = time.perf_counter() - self._ready_at
            log.info("first partitions assigned", extra={"after_ready_s": round(self._startup["assigned_after_ready_s"], 3)})

    def on_revoked(self, partitions: Sequence[TopicPartition], lost: bool) -> None:
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self.committer.settle()  # settle its offsets before the partitions move
        for batch in self._pending:
            batch.revoked |= gone
        dropped = self.batcher.drop(lambda r: (r.topic, r.partition) not in gone)
        if dropped:
            log.info("dropped buffered records of revoked partitions",
                     extra={"records": dropped, "lost": lost})


def settle_collector(young_threshold: int) -> None:
    """The garbage collector as the ready worker runs it. Everything alive now (the model,
    tokenizer, rules, imported modules) lives as long as the process: frozen, out of the
    collector's sight, so a full collection no longer walks it again (docs/performance.md,
    changes table). Then the youngest generation collected every ``young_threshold``
    allocations instead of 700 (``WorkerSettings.gc_young_threshold`` says why)."""
    gc.freeze()
    gc.set_threshold(young_threshold, *gc.get_threshold()[1:])
