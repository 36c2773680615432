"""Bounds on the commit path (issue 20, item 1): a librdkafka call that ignores its
timeout, a commit thread that never answers, a stop that overruns and a worker that
makes no progress all end in a bounded time, never in a hang. Blocking calls are
simulated with events that the test releases afterwards; no wall-clock assertions."""

from __future__ import annotations

import threading

import pytest

from engine.observe.health import HealthState
from engine.observe.metrics import EngineMetrics
from engine.settings import KafkaSettings, Settings, WorkerSettings
from engine.stages.consume import FatalKafkaError
from engine.stages.decode import Decoded
from engine.stages.emit import TransactionalEmitter
from engine.worker.commit import BatchCommitter
from engine.worker.inflight import InFlight
from engine.worker.loop import WorkerOptions
from engine.worker.watchdog import (
    EXIT_STALLED,
    EXIT_STOP_OVERRAN,
    BoundedCaller,
    CallOverran,
    ExitDeadline,
    StallWatchdog,
)
from tests.unit.test_emit import FakeProducer
from tests.unit.test_worker_loop import (
    CODEC,
    FakeConsumer,
    FakeEmitter,
    FakePipeline,
    _event,
    _new_worker,
    _rec,
    _verdict,
)

#: Bounds short enough that a test waits for them, long enough that a loaded CI machine
#: answers an unblocked call well within them.
SHORT = Settings(kafka=KafkaSettings(transaction_timeout_ms=2000),
                 worker=WorkerSettings(kafka_call_timeout_s=0.05, kafka_call_bound_s=0.3, stop_timeout_s=0.2))


def test_a_call_that_returns_or_raises_is_passed_through():
    caller = BoundedCaller(5.0)
    assert caller("ok", lambda: 7) == 7
    with pytest.raises(KeyError):
        caller("bad", lambda: {}["x"])


def test_a_call_that_never_returns_is_abandoned_and_the_client_refused_afterwards():
    release = threading.Event()
    caller = BoundedCaller(0.2)
    try:
        with pytest.raises(CallOverran) as err:
            caller("send_offsets_to_transaction", lambda: release.wait(60))
        assert isinstance(err.value, FatalKafkaError)  # the worker exits on it
        ran = []
        with pytest.raises(CallOverran):  # the wedged call still holds the client
            caller("abort_transaction", lambda: ran.append(1))
        assert ran == []
    finally:
        release.set()


class BlockingProducer(FakeProducer):
    """``send_offsets_to_transaction`` ignores its timeout (librdkafka #5456)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def send_offsets_to_transaction(self, offsets, meta, timeout):
        self.calls.append("send_offsets")
        self.release.wait(60)


def test_send_offsets_ignoring_its_timeout_fails_the_commit_as_fatal_instead_of_hanging():
    producer = BlockingProducer()
    emitter = TransactionalEmitter(SHORT, "w1", encode_verdicts=CODEC.encode_verdicts,
                                   encode_dead_letter=CODEC.encode_dead_letter, sleep=lambda s: None)
    emitter._producer = producer
    try:
        with pytest.raises(CallOverran):
            emitter.commit_batch([_verdict(_event(1))], [], {("tx.events", 0): 1}, object())
        assert producer.calls == ["begin", "send_offsets"]  # no abort on a wedged client
    finally:
        producer.release.set()


class WedgedEmitter(FakeEmitter):
    longest_commit_s = 0.2

    def __init__(self):
        super().__init__()
        self.release = threading.Event()

    def commit_batch(self, *args, **kw):
        self.release.wait(60)


def test_the_main_thread_waits_for_the_commit_thread_at_most_the_longest_a_commit_can_take():
    emitter = WedgedEmitter()
    committer = BatchCommitter(emitter, EngineMetrics())
    batch = InFlight([_rec(0)], Decoded([_event(0)], [1.0], []), overlap_commit=True)
    batch.decided([_verdict(_event(0))], [_event(0)], [1.0])
    try:
        assert committer.begin(batch, lambda: "meta")
        with pytest.raises(CallOverran):
            committer.reap(block=True)
    finally:
        emitter.release.set()
        committer.shutdown()


def test_a_stop_that_overruns_its_deadline_exits_with_its_code():
    exited: list[int] = []
    done = threading.Event()
    deadline = ExitDeadline(exit=lambda code: (exited.append(code), done.set()))
    deadline.arm(0.05, EXIT_STOP_OVERRAN, "test")
    deadline.arm(0.05, 99, "a second arm is ignored")
    assert done.wait(30)
    assert exited == [EXIT_STOP_OVERRAN]


def test_sigterm_arms_the_stop_deadline_of_the_worker():
    exited: list[int] = []
    done = threading.Event()
    w = _new_worker(SHORT, FakePipeline(), WorkerOptions("w1"), codec=CODEC,
               exit_deadline=ExitDeadline(exit=lambda code: (exited.append(code), done.set())))
    w.request_stop()
    assert done.wait(30) and exited == [EXIT_STOP_OVERRAN]
    assert w.health.readiness() == (False, "stopping")


def test_no_progress_for_stall_after_s_makes_both_probes_fail_and_the_watchdog_exit():
    now = [100.0]
    health = HealthState(stall_after_s=60, clock=lambda: now[0])
    health.mark_ready()
    now[0] += 61
    health.beat()  # the loop turns, but nothing commits
    assert not health.liveness()[0] and not health.readiness()[0]
    exited: list[int] = []
    done = threading.Event()
    StallWatchdog(health, 60, every_s=0.01, exit=lambda code: (exited.append(code), done.set())).start()
    assert done.wait(30) and exited == [EXIT_STALLED]


def test_a_quiet_caught_up_worker_is_progressing_but_a_backlog_without_commits_is_not():
    now = [0.0]
    w = _new_worker(SHORT, FakePipeline(), WorkerOptions("w1"), codec=CODEC,
               health=HealthState(stall_after_s=10, clock=lambda: now[0]))
    w.consumer = FakeConsumer([])
    w.health.mark_ready()
    w._lag_total = 0
    now[0] = 50.0
    w.step()  # nothing to read, no lag
    assert w.health.stalled_for() == 0.0
    w._lag_total, w._next_lag_at = 5, float("inf")  # records behind, none arriving
    now[0] = 70.0
    w.step()
    assert w.health.stalled_for() == 20.0 and not w.health.liveness()[0]


def test_librdkafka_connection_failures_are_logged_below_error(caplog):
    """Issue 20 item 5: a refused connection (a broker restarting) is logged by
    librdkafka at ERROR; through ``LibrdkafkaLog`` it is a WARNING."""
    import logging
    import time

    from confluent_kafka import Producer

    from engine.stages.consume import LibrdkafkaLog

    logger = logging.getLogger("tollgate.test.librdkafka")
    producer = Producer({"bootstrap.servers": "127.0.0.1:1"}, logger=LibrdkafkaLog(logger))
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        deadline = time.monotonic() + 30
        while not caplog.records and time.monotonic() < deadline:
            producer.poll(0.2)
    assert caplog.records, "librdkafka logged nothing about the refused connection"
    assert max(r.levelno for r in caplog.records) <= logging.WARNING


def test_redis_down_holds_a_batch_until_its_oldest_event_used_its_budget_then_degrades():
    """Issue 20 item 4 with a fake store (the real Redis: test_worker_redis_outage.py)."""
    from engine.features.store import ContextUnavailable
    from engine.worker.redis_hold import ContextHeld, HoldingStore, RedisHold

    class DownStore:
        up = False

        def enrich(self, events):
            if not self.up:
                raise ContextUnavailable("connection refused")
            return ["ctx"] * len(events)

    now = [0.0]
    inner = DownStore()
    store = HoldingStore(inner, RedisHold(5.0, clock=lambda: now[0]))
    batch = [_event(1), _event(2)]
    with pytest.raises(ContextHeld):
        store.enrich(batch)
    now[0] = 4.9
    with pytest.raises(ContextHeld):
        store.enrich(batch + [_event(3)])  # a newcomer does not restart the oldest's clock
    now[0] = 5.0
    with pytest.raises(ContextUnavailable) as err:
        store.enrich(batch + [_event(3)])
    assert not isinstance(err.value, ContextHeld)  # budget used: degrade
    inner.up = True
    assert store.enrich(batch) == ["ctx", "ctx"] and store.hold.waiting == 0  # back: clocks reset
    inner.up = False
    with pytest.raises(ContextHeld):
        store.enrich(batch)  # a new outage: a fresh budget


def test_warm_up_with_redis_down_is_not_held():
    """A start while Redis is slow or down: the warm-up's synthetic batch is decided
    degraded, never held (a held warm-up failed the start)."""
    from engine.features.store import ContextUnavailable
    from engine.worker.redis_hold import HoldingStore, RedisHold

    class DownStore:
        def enrich(self, events):
            raise ContextUnavailable("timed out")

    hold = RedisHold(5.0, active=False)
    with pytest.raises(ContextUnavailable) as err:
        HoldingStore(DownStore(), hold).enrich([_event(1)])
    assert type(err.value) is ContextUnavailable
