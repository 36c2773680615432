"""The worker loop with fake Kafka clients: commit order, redo on an aborted transaction
(of that batch and every later one in flight), transient errors never dead-lettered, a
poison event isolated, revocation drops buffered and in-flight records of the revoked
partitions, SIGTERM drains, batches on the prepare and infer threads. (The emit stage:
test_emit.py; the real broker: tests/integration.)"""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import TopicPartition

from engine.observe.health import HealthState
from engine.observe.metrics import EngineMetrics
from engine.records import Decision, TransactionEvent, Verdict
from engine.settings import BatchSettings, KafkaSettings, Settings
from engine.stages.consume import RawRecord
from engine.stages.emit import BatchAborted
from engine.wire.codec import Codec
from engine.worker.commit import BatchCommitter
from engine.worker.loop import Worker, WorkerOptions, settle_collector
from tests.support.events import event

SETTINGS = Settings(batch=BatchSettings(max_events=4, max_wait_ms=1000.0, close_when_idle=False),
                    kafka=KafkaSettings(transaction_timeout_ms=2000))
CODEC = Codec(SETTINGS)


def _event(i: int, amount: float = 10.0) -> TransactionEvent:
    return event(i, amount=amount, customer_id=f"c{i}", account_id="a", terminal_id="t")


def _rec(i: int, partition: int = 0, value: bytes | None = None) -> RawRecord:
    return RawRecord("tx.events", partition, 100 + i, b"k",
                     value if value is not None else CODEC.encode_event(_event(i)), (), 0, 1.0)


def _verdict(e: TransactionEvent) -> Verdict:
    return Verdict(event_id=e.event_id, customer_id=e.customer_id, verdict=Decision.PASS, confidence=0.9,
                   probabilities={"pass": 0.9, "review": 0.05, "reject": 0.05}, risk_score=0.01, reasons=(),
                   model_version="m1", rules_version="r1", decision_latency_ms=1.0, decided_at_ms=0,
                   event_time_ms=e.event_time_ms)


class FakeConsumer:
    def __init__(self, batches: list[list[RawRecord]]):
        self.batches = batches
        self.rewinds: list[dict] = []

    def poll(self, max_records, timeout_s):
        if not self.batches:
            return []
        head = self.batches[0]
        out, self.batches[0] = head[:max_records], head[max_records:]
        if not self.batches[0]:
            self.batches.pop(0)
        return out

    def rewind(self, first):
        self.rewinds.append(first)

    def group_metadata(self):
        return "meta"

    def lag(self):
        return {("tx.events", 0): 3}


class FakeEmitter:
    """``TransactionalEmitter``'s protocol: ``commit_batch`` in one go, or
    ``open_transaction`` then ``finish_transaction`` (or ``abort``); one transaction open
    at a time. ``abort_times`` fails that many commits, ``open_abort_times`` that many
    openings (each aborts itself, as the real emitter does)."""

    longest_commit_s = 30.0

    def __init__(self, abort_times: int = 0, open_abort_times: int = 0):
        self.commits: list[tuple[list, list, dict]] = []
        self.abort_times, self.open_abort_times = abort_times, open_abort_times
        self.open: dict | None = None  # the offsets of the open transaction
        self.opened = self.aborts = 0
        self.opened_event = threading.Event()

    def encode(self, verdicts, dead_letters):
        return [("encoded", tuple(verdicts), tuple(dead_letters))]

    def commit_batch(self, verdicts, dead_letters, offsets, meta, encoded=None):
        assert encoded == self.encode(verdicts, dead_letters)  # encoded before the commit thread
        assert self.open is None, "a transaction is already open"
        self._commit(list(verdicts), list(dead_letters), dict(offsets))

    def open_transaction(self, offsets, meta):
        assert self.open is None, "a transaction is already open"
        self.opened += 1
        if self.open_abort_times:
            self.open_abort_times -= 1
            raise BatchAborted("coordinator moved")
        self.open = dict(offsets)
        self.opened_event.set()

    def finish_transaction(self, encoded):
        assert self.open is not None, "no transaction open"
        offsets, self.open = self.open, None
        [(_, verdicts, dead_letters)] = encoded
        self._commit(list(verdicts), list(dead_letters), offsets)

    def abort(self):
        if self.open is not None:
            self.aborts += 1
        self.open = None

    def _commit(self, verdicts, dead_letters, offsets):
        if self.abort_times:
            self.abort_times -= 1
            raise BatchAborted("coordinator moved")
        self.commits.append((verdicts, dead_letters, offsets))


class FakePipeline:
    """The three phases of ``DecisionPipeline``; ``prepared`` logs each batch's event ids."""

    model_version, rules_version = "m1", "r1"

    def __init__(self, fail_ids=(), transient: int = 0):
        self.on_batch = None
        self.fail_ids, self.transient = set(fail_ids), transient
        self.prepared: list[list[str]] = []

    def prepare(self, events, arrival_ms=None):
        if self.transient:
            self.transient -= 1
            raise ConnectionError("redis away")
        if any(e.event_id in self.fail_ids for e in events):
            raise RuntimeError("model blew up on this event")
        self.prepared.append([e.event_id for e in events])
        return list(events)

    def score(self, prepared):
        return prepared

    def finish(self, scored):
        return [_verdict(e) for e in scored]

    def decide_batch(self, events, arrival_ms=None):
        return self.finish(self.score(self.prepare(events, arrival_ms)))


def _new_worker(settings, pipeline, options, *, codec=CODEC, **collaborators) -> Worker:
    """A worker wired as the composition root (``engine.worker.main.build_worker``) does,
    with fake Kafka clients (each test then puts in the consumer and emitter it scripts)."""
    metrics = collaborators.pop("metrics", None) or EngineMetrics()
    health = collaborators.pop("health", None) or HealthState()
    return Worker(settings, pipeline, options, consumer=FakeConsumer([]),
                  committer=BatchCommitter(FakeEmitter(), metrics), codec=codec, metrics=metrics,
                  health=health, **collaborators)


def _worker(consumer, emitter, pipeline) -> Worker:
    w = _new_worker(SETTINGS, pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer, w.committer.emitter = consumer, emitter
    return w


def test_batch_closes_at_b_and_commits_offsets_of_every_record_including_dead_letters():
    records = [_rec(0), _rec(1, value=b"junk"), _rec(2), _rec(3, partition=1)]
    emitter = FakeEmitter()
    w = _worker(FakeConsumer([records]), emitter, FakePipeline())
    w.step()
    w.flush()
    [(verdicts, dls, offsets)] = emitter.commits
    assert [v.event_id for v in verdicts] == ["e0", "e2", "e3"]
    assert [d.source_offset for d in dls] == [101]
    assert offsets == {("tx.events", 0): 103, ("tx.events", 1): 104}
    assert w.metrics.registry.get_sample_value("tollgate_transactions_total", {"result": "committed"}) == 1


def test_aborted_transaction_rewinds_to_the_batch_start_and_redoes_it():
    records = [_rec(i) for i in range(4)]
    emitter = FakeEmitter(abort_times=1)
    consumer = FakeConsumer([records, list(records)])  # after the rewind the same records come back
    w = _worker(consumer, emitter, FakePipeline())
    w.step()
    w.flush()
    assert consumer.rewinds == [{("tx.events", 0): 100}] and emitter.commits == []
    w.step()
    w.flush()
    assert len(emitter.commits) == 1 and len(emitter.commits[0][0]) == 4


def test_transient_pipeline_error_is_retried_never_dead_lettered():
    records = [_rec(i) for i in range(4)]
    emitter = FakeEmitter()
    consumer = FakeConsumer([records, list(records)])
    w = _worker(consumer, emitter, FakePipeline(transient=1))
    w.step()
    w.flush()
    assert consumer.rewinds and emitter.commits == []
    w.step()
    w.flush()
    assert not emitter.commits[0][1] and len(emitter.commits[0][0]) == 4


def test_an_event_that_always_breaks_the_pipeline_is_isolated_and_dead_lettered():
    emitter = FakeEmitter()
    w = _worker(FakeConsumer([[_rec(i) for i in range(4)]]), emitter, FakePipeline(fail_ids={"e2"}))
    w.step()
    w.flush()
    [(verdicts, dls, offsets)] = emitter.commits
    assert [v.event_id for v in verdicts] == ["e0", "e1", "e3"]
    assert [(d.stage, d.source_offset, d.error_class) for d in dls] == [("pipeline", 102, "RuntimeError")]
    assert offsets == {("tx.events", 0): 104}


def test_revoke_drops_buffered_records_of_revoked_partitions_only():
    w = _worker(FakeConsumer([]), FakeEmitter(), FakePipeline())
    w.batcher.add([_rec(0, partition=0), _rec(1, partition=1)])
    w.on_revoked([TopicPartition("tx.events", 0)], lost=False)
    assert [(r.partition, r.offset) for r in w.batcher.take()] == [(1, 101)]


def test_stop_request_closes_the_open_batch_at_once():
    emitter = FakeEmitter()
    w = _worker(FakeConsumer([[_rec(0), _rec(1)]]), emitter, FakePipeline())  # B=4, W=1 s: not closed
    w.request_stop()
    w.step()
    w.flush()
    assert len(emitter.commits) == 1 and len(emitter.commits[0][0]) == 2
    assert w.health.readiness() == (False, "stopping")


def _settings(**batch) -> Settings:
    return Settings(batch=BatchSettings(**{"max_events": 4, "max_wait_ms": 1000.0, **batch}),
                    kafka=KafkaSettings(transaction_timeout_ms=2000))


def test_a_batch_closes_when_the_consumer_has_nothing_more_fetched():
    emitter, pipeline = FakeEmitter(), FakePipeline()
    w = _new_worker(_settings(), pipeline, WorkerOptions("w1"), codec=CODEC)  # close_when_idle by default
    w.consumer, w.committer.emitter = FakeConsumer([[_rec(0), _rec(1)]]), emitter
    w.step()  # 2 of B=4 records, well within W
    assert pipeline.prepared == []
    w.step()  # nothing more fetched: closed at once, not after W
    assert pipeline.prepared == [["e0", "e1"]]
    w.flush()
    assert [v.event_id for v in emitter.commits[0][0]] == ["e0", "e1"]


def _quiet_worker(consumer, emitter, pipeline, **batch) -> Worker:
    """A worker on a quiet stream: each batch closes when the consumer runs dry."""
    w = _new_worker(_settings(**batch), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer, w.committer.emitter = consumer, emitter
    return w


class OpenNotingPipeline(FakePipeline):
    """Notes, for each batch it prepares, the offsets of the emitter's open transaction;
    with ``wait_for_open`` it first waits (bounded) for one to open: a worker that opens
    the transaction only after deciding leaves it waiting, and the test fails."""

    def __init__(self, emitter, wait_for_open: bool, **kw):
        super().__init__(**kw)
        self.emitter, self.wait_for_open, self.open_while_preparing = emitter, wait_for_open, []

    def prepare(self, events, arrival_ms=None):
        if self.wait_for_open:
            assert self.emitter.opened_event.wait(10), "no transaction opened while the batch was prepared"
        self.open_while_preparing.append(self.emitter.open)
        return super().prepare(events, arrival_ms)


def test_a_quiet_batch_is_decided_while_its_transaction_opens():
    emitter = FakeEmitter()
    pipeline = OpenNotingPipeline(emitter, wait_for_open=True)
    w = _quiet_worker(FakeConsumer([[_rec(0), _rec(1, partition=1)]]), emitter, pipeline)
    w.step()
    w.step()  # closed (nothing more fetched), decided and committed in this step
    assert pipeline.open_while_preparing == [{("tx.events", 0): 101, ("tx.events", 1): 102}]
    assert emitter.opened == 1 and emitter.aborts == 0 and emitter.open is None
    [(verdicts, _, offsets)] = emitter.commits
    assert [v.event_id for v in verdicts] == ["e0", "e1"]
    assert offsets == {("tx.events", 0): 101, ("tx.events", 1): 102}
    assert w.metrics.registry.get_sample_value("tollgate_transactions_total", {"result": "committed"}) == 1


def test_a_quiet_batch_redone_aborts_the_transaction_opened_for_it():
    emitter = FakeEmitter()
    records = [_rec(0), _rec(1)]
    consumer = FakeConsumer([records, [], list(records)])
    w = _quiet_worker(consumer, emitter, FakePipeline(transient=1))
    for _ in range(4):
        w.step()
    assert consumer.rewinds == [{("tx.events", 0): 100}]
    assert emitter.opened == 2 and emitter.aborts == 1  # the first one, for the failed try
    [(verdicts, _, offsets)] = emitter.commits
    assert [v.event_id for v in verdicts] == ["e0", "e1"] and offsets == {("tx.events", 0): 102}


def test_a_failed_opening_redoes_the_batch():
    emitter = FakeEmitter(open_abort_times=1)
    records = [_rec(0), _rec(1)]
    consumer = FakeConsumer([records, [], list(records)])
    w = _quiet_worker(consumer, emitter, FakePipeline())
    for _ in range(4):
        w.step()
    assert consumer.rewinds == [{("tx.events", 0): 100}]
    assert emitter.opened == 2 and len(emitter.commits) == 1
    sample = w.metrics.registry.get_sample_value
    assert sample("tollgate_transactions_total", {"result": "aborted"}) == 1
    assert sample("tollgate_transactions_total", {"result": "committed"}) == 1


def test_opening_early_can_be_turned_off():
    emitter = FakeEmitter()
    pipeline = OpenNotingPipeline(emitter, wait_for_open=False)
    w = _quiet_worker(FakeConsumer([[_rec(0), _rec(1)]]), emitter, pipeline, open_transaction_early=False)
    w.step()
    w.step()
    assert emitter.opened == 0 and pipeline.open_while_preparing == [None] and len(emitter.commits) == 1


class GatedEmitter(FakeEmitter):
    """Transactions wait for ``gate``: a test decides what happens while one is in flight."""

    def __init__(self, abort_times: int = 0):
        super().__init__(abort_times)
        self.gate = threading.Event()

    def _commit(self, verdicts, dead_letters, offsets):
        assert self.gate.wait(10), "gate never opened"
        super()._commit(verdicts, dead_letters, offsets)


class GatedScorePipeline(FakePipeline):
    """A batch's forward pass ends only once ``after`` later batches have been prepared,
    or once the test calls ``release_all``: batches stay on the threads exactly as long as
    the test needs, with no timing. A worker that waits for a forward pass too early hangs
    on the gate, which fails the test after its bound instead of passing by luck."""

    def __init__(self, after: int = 1, bound_s: float = 30.0, **kw):
        super().__init__(**kw)
        self.after, self.bound_s, self._released = after, bound_s, False
        self._cond = threading.Condition()
        #: Batches whose forward pass the worker waited for too early (each test asserts none).
        self.too_early: list[int] = []

    def prepare(self, events, arrival_ms=None):
        out = super().prepare(events, arrival_ms)
        with self._cond:
            self._cond.notify_all()
        return out

    def score(self, prepared):
        number = self.prepared.index([e.event_id for e in prepared])
        with self._cond:
            if not self._cond.wait_for(lambda: self._released or len(self.prepared) > number + self.after,
                                       self.bound_s):
                self.too_early.append(number)
                raise RuntimeError(f"batch {number}'s forward pass was waited for before {self.after} later "
                                   "batch(es) were prepared")
        return prepared

    def release_all(self):
        with self._cond:
            self._released = True
            self._cond.notify_all()


class HookedPipeline(FakePipeline):
    """Calls ``on_prepare(event ids)`` when a batch is prepared."""

    def __init__(self, on_prepare, **kw):
        super().__init__(**kw)
        self.on_prepare = on_prepare

    def prepare(self, events, arrival_ms=None):
        out = super().prepare(events, arrival_ms)
        self.on_prepare([e.event_id for e in events])
        return out


@pytest.mark.parametrize("infer_thread", [False, True])
def test_batches_in_flight_commit_in_order_one_transaction_each(infer_thread):
    emitter = GatedEmitter()
    pipeline = HookedPipeline(lambda ids: emitter.gate.set() if ids[0] == "e4" else None)
    w = _new_worker(_settings(close_when_idle=False, infer_thread=infer_thread, infer_process=False), pipeline, WorkerOptions("w1"),
               codec=CODEC)
    w.consumer = FakeConsumer([[_rec(i) for i in range(4)], [_rec(i) for i in range(4, 8)]])
    w.committer.emitter = emitter
    w.step()
    w.step()  # batch 2 is prepared while batch 1 is still on its way to commit
    w.flush()
    assert pipeline.prepared == [["e0", "e1", "e2", "e3"], ["e4", "e5", "e6", "e7"]]
    assert [[v.event_id for v in c[0]] for c in emitter.commits] == [["e0", "e1", "e2", "e3"],
                                                                      ["e4", "e5", "e6", "e7"]]
    assert [c[2] for c in emitter.commits] == [{("tx.events", 0): 104}, {("tx.events", 0): 108}]


@pytest.mark.parametrize("infer_thread", [False, True])
def test_a_failed_transaction_rewinds_it_and_every_later_batch_in_flight(infer_thread):
    first, second = [_rec(i) for i in range(4)], [_rec(i, partition=1) for i in range(4, 8)]
    emitter = GatedEmitter(abort_times=1)
    pipeline = HookedPipeline(lambda ids: emitter.gate.set() if ids[0] == "e4" else None)
    consumer = FakeConsumer([first, second])
    w = _new_worker(_settings(close_when_idle=False, infer_thread=infer_thread, infer_process=False), pipeline, WorkerOptions("w1"),
               codec=CODEC)
    w.consumer, w.committer.emitter = consumer, emitter
    w.step()
    w.step()  # batch 2 is prepared (and scored) while batch 1's transaction fails
    w.flush()
    assert emitter.commits == []
    assert consumer.rewinds == [{("tx.events", 0): 100, ("tx.events", 1): 104}]


def test_revoked_partitions_leave_batches_in_flight_unemitted_and_uncommitted():
    emitter = FakeEmitter()
    records = [_rec(0, partition=0), _rec(1, partition=1), _rec(2, partition=0), _rec(3, partition=1)]
    pipeline = GatedScorePipeline()
    w = _new_worker(_settings(close_when_idle=False, infer_thread=True), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer, w.committer.emitter = FakeConsumer([records]), emitter
    w.step()  # on the infer thread, held there by the gate
    w.on_revoked([TopicPartition("tx.events", 0)], lost=False)
    pipeline.release_all()
    w.flush()
    assert pipeline.too_early == []
    [(verdicts, dls, offsets)] = emitter.commits
    assert [v.event_id for v in verdicts] == ["e1", "e3"]
    assert offsets == {("tx.events", 1): 104}


def test_a_transaction_that_commits_while_later_batches_are_redone_is_still_counted():
    """Batch 1 is committing on the commit thread when finishing batch 2 hits a transient
    error (batch 3 is being prepared and scored meanwhile): the redo waits for batch 1,
    which commits, and its transaction and verdicts are counted (readers see them);
    batches 2 and 3 are rewound."""
    emitter = GatedEmitter()

    class FailsOnceOnBatchTwo(FakePipeline):
        def finish(self, scored):
            if scored[0].event_id == "e4" and not self.transient_done:
                self.transient_done = True
                emitter.gate.set()  # batch 1's transaction may commit now
                raise ConnectionError("redis away")
            return super().finish(scored)

    pipeline = FailsOnceOnBatchTwo()
    pipeline.transient_done = False
    consumer = FakeConsumer([[_rec(i) for i in range(j, j + 4)] for j in (0, 4, 8)])
    w = _new_worker(_settings(close_when_idle=False), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer, w.committer.emitter = consumer, emitter
    # Batches 1 and 2 on the threads; batch 3 too, and batch 1 finished and committing;
    # nothing more to read: batch 2 is finished, and fails.
    for _ in range(4):
        w.step()
    assert [[v.event_id for v in c[0]] for c in emitter.commits] == [["e0", "e1", "e2", "e3"]]
    assert consumer.rewinds == [{("tx.events", 0): 104}]
    sample = w.metrics.registry.get_sample_value
    assert sample("tollgate_transactions_total", {"result": "committed"}) == 1
    assert sample("tollgate_transactions_total", {"result": "retried"}) == 1
    assert sample("tollgate_e2e_from_arrival_ms_count") == 4  # batch 1's verdicts, once


class ThreadNotingPipeline(FakePipeline):
    """Notes the thread each batch is prepared on. A batch holding a ``held`` event id is
    prepared only once the test calls ``release`` (``stuck`` records it if that never
    comes: the worker waited for it first), and no two batches may be prepared at once
    (``overlaps``)."""

    def __init__(self, held=(), **kw):
        super().__init__(**kw)
        self.held, self.threads, self.stuck, self.overlaps = set(held), [], [], []
        self._release, self._active, self._lock = threading.Event(), 0, threading.Lock()

    def release(self):
        self._release.set()

    def prepare(self, events, arrival_ms=None):
        with self._lock:
            self._active += 1
            if self._active > 1:
                self.overlaps.append(events[0].event_id)
        try:
            if self.held & {e.event_id for e in events} and not self._release.wait(30):
                self.stuck.append(events[0].event_id)
            self.threads.append(threading.current_thread().name)
            return super().prepare(events, arrival_ms)
        finally:
            with self._lock:
                self._active -= 1


def test_a_backlog_is_prepared_off_the_main_thread_in_batch_order():
    pipeline, emitter = ThreadNotingPipeline(held={"e0"}), FakeEmitter()
    w = _new_worker(_settings(close_when_idle=False), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer = FakeConsumer([[_rec(i) for i in range(j, j + 4)] for j in (0, 4, 8)])
    w.committer.emitter = emitter
    w.step()  # returns while the first batch is still held on the prepare thread
    w.step()  # the second queues behind it (backlog depth 2)
    pipeline.release()
    w.step()
    w.flush()
    assert pipeline.stuck == [] and pipeline.overlaps == []
    assert pipeline.prepared == [[f"e{i}" for i in range(j, j + 4)] for j in (0, 4, 8)]
    assert all(name.startswith("tollgate-prepare") for name in pipeline.threads)
    assert [len(c[0]) for c in emitter.commits] == [4, 4, 4]


def test_a_batch_prepared_in_line_waits_for_the_one_on_the_prepare_thread():
    """A full batch (a backlog: prepared on the thread, slowly) and then a lone record
    (a quiet stream: prepared in line): enrich still runs in batch order."""
    pipeline = ThreadNotingPipeline(held={"e0"})
    w = _new_worker(_settings(), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer = FakeConsumer([[_rec(i) for i in range(4)], [_rec(4)]])
    w.committer.emitter = FakeEmitter()
    w.step()  # returns while the full batch is still held on the prepare thread
    pipeline.release()
    w.step()
    w.flush()
    assert pipeline.stuck == [] and pipeline.overlaps == []
    assert pipeline.prepared == [["e0", "e1", "e2", "e3"], ["e4"]]
    assert pipeline.threads[0].startswith("tollgate-prepare") and pipeline.threads[1] == "MainThread"


def test_a_prepare_error_on_the_prepare_thread_is_handled_as_in_line():
    """Transient: the batch and the one after it are rewound, never dead-lettered.
    Deterministic: the poison event alone is dead-lettered."""
    emitter, consumer = FakeEmitter(), FakeConsumer([[_rec(i) for i in range(4)]])
    w = _new_worker(_settings(close_when_idle=False), FakePipeline(transient=1), WorkerOptions("w1"), codec=CODEC)
    w.consumer, w.committer.emitter = consumer, emitter
    w.step()
    w.flush()
    assert emitter.commits == [] and consumer.rewinds == [{("tx.events", 0): 100}]

    emitter = FakeEmitter()
    w = _new_worker(_settings(close_when_idle=False), FakePipeline(fail_ids={"e5"}), WorkerOptions("w1"), codec=CODEC)
    w.consumer = FakeConsumer([[_rec(i) for i in range(j, j + 4)] for j in (0, 4, 8)])
    w.committer.emitter = emitter
    for _ in range(3):
        w.step()
    w.flush()
    assert [[v.event_id for v in c[0]] for c in emitter.commits] == [
        ["e0", "e1", "e2", "e3"], ["e4", "e6", "e7"], ["e8", "e9", "e10", "e11"]]
    assert [(d.stage, d.source_offset) for d in emitter.commits[1][1]] == [("pipeline", 105)]


@pytest.mark.parametrize("depth", [1, 2])
def test_a_backlog_keeps_backlog_depth_batches_on_the_threads(depth):
    """While its forward pass runs, the main thread waits to finish (and commit) a batch
    only once ``depth`` later ones are being prepared or scored."""
    emitter = FakeEmitter()
    # a forward pass ends once `depth` later batches are prepared: what the worker needs, no sooner
    pipeline = GatedScorePipeline(after=depth)
    w = _new_worker(_settings(close_when_idle=False, backlog_depth=depth), pipeline, WorkerOptions("w1"), codec=CODEC)
    w.consumer = FakeConsumer([[_rec(i) for i in range(j, j + 4)] for j in (0, 4, 8, 12)])
    w.committer.emitter = emitter
    committed = []
    for _ in range(4):
        w.step()
        w.committer.settle()
        committed.append(len(emitter.commits))
    assert committed == ([0, 1, 2, 3] if depth == 1 else [0, 0, 1, 2])
    pipeline.release_all()
    w.flush()
    assert pipeline.too_early == []
    assert [c[2] for c in emitter.commits] == [{("tx.events", 0): 100 + 4 * k} for k in range(1, 5)]



def test_a_quiet_streams_small_batch_is_scored_in_line_and_a_large_one_on_the_infer_thread():
    """On the infer thread a quiet stream's batch stays pending until later batches push
    it out; a small one is scored in line and committed at once (engine.worker.inflight)."""
    from types import SimpleNamespace  # local: this test alone builds prepared-batch stand-ins

    from engine.worker.inflight import THREAD_MIN_ROWS, worth_a_thread

    def prepared(rows: int, inference: object) -> SimpleNamespace:
        return SimpleNamespace(components=SimpleNamespace(inference=inference), encoded=[None] * rows)

    remote_only = object()  # ProcessInference: no runs_remote
    assert not worth_a_thread(prepared(THREAD_MIN_ROWS - 1, remote_only))
    assert worth_a_thread(prepared(THREAD_MIN_ROWS, remote_only))
    split = SimpleNamespace(runs_remote=lambda rows: rows >= 16)  # SplitInference decides
    assert [worth_a_thread(prepared(r, split)) for r in (15, 16)] == [False, True]


def test_the_ready_worker_freezes_what_lives_and_collects_the_young_generation_less_often():
    import gc

    from engine.settings import WorkerSettings

    before = gc.get_threshold()
    try:
        gc.unfreeze()
        settle_collector(WorkerSettings().gc_young_threshold)
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (WorkerSettings().gc_young_threshold, *before[1:])
        assert gc.get_threshold()[0] > 700  # Python's default, which the setting replaces
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)

