"""One contract, two backends: the same tests run on MemoryFeatureStore and on
RedisFeatureStore against the real Redis server and against a real three-master Redis
Cluster (unique key namespace per test)."""

from __future__ import annotations

import math
import random

import pytest
import redis

from engine.features.compute import TERMINAL_KEEP_BUCKETS
from engine.features.memory import MemoryFeatureStore
from engine.features.redis_store import RedisFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import BUCKET_MS, CONTEXT_FEATURES, DAY_MS, HISTORY_LEN, HOUR_MS, MAX_DEVICES_PER_CUSTOMER
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival
from engine.records import TransactionEvent
from engine.settings import Settings
from engine.wire.redisconn import connect, reply_text
from tests.support.events import event

T0 = 1_700_000_000_000 - (1_700_000_000_000 % DAY_MS)  # a midnight, so hour buckets are obvious
MIN = 60_000


def ev(eid: str, t: int, amount: float = 10.0, customer: str = "c1", terminal: str = "t1",
       device: str | None = "d1", country: str = "BE", memo: str | None = None) -> TransactionEvent:
    return event(0, event_id=eid, event_time_ms=t, customer_id=customer, account_id="acct-" + customer,
                 terminal_id=terminal, amount=amount, channel="card_present", country=country, device_id=device,
                 memo=memo)


@pytest.fixture(params=["single", "cluster"])
def redis_url(request) -> str:
    """The real single Redis, then the real Redis Cluster."""
    if request.param == "single":
        return request.getfixturevalue("stack").redis_url
    return request.getfixturevalue("redis_cluster_url")


@pytest.fixture
def ns_client(redis_url, unique):
    """A client on the real Redis (or Cluster); afterwards removes this test's namespace.
    (The shared ``redis_client`` fixture scans with COUNT 10: thousands of round trips on
    a busy server.)"""
    client = connect(redis_url, socket_timeout_s=10)
    yield client
    _delete_namespace(client, unique)
    client.close()


def _delete_namespace(client, unique: str) -> None:
    keys = list(client.scan_iter(f"*:{unique}:*", count=10_000))  # every primary, on a cluster
    for key in keys:
        client.unlink(key)


@pytest.fixture(params=["memory", "memory-forgetting", pytest.param("redis", marks=pytest.mark.integration),
                        pytest.param("redis-cluster", marks=pytest.mark.integration)])
def store(request) -> FeatureStore:
    if request.param == "memory":
        return MemoryFeatureStore()
    if request.param == "memory-forgetting":  # as `tollgate score` and `load_model` build it
        from engine.features.spec import IDLE_STATE_TTL_MS

        return MemoryFeatureStore(forget_idle_after_ms=IDLE_STATE_TTL_MS)
    url = request.getfixturevalue("stack").redis_url if request.param == "redis" \
        else request.getfixturevalue("redis_cluster_url")
    unique = request.getfixturevalue("unique")
    store = RedisFeatureStore(settings=Settings(redis={"url": url}), namespace=unique)
    request.addfinalizer(lambda: _delete_namespace(store.client, unique))
    return store


def test_velocity_windows_and_in_batch_visibility(store):
    snaps = store.enrich([
        ev("a", T0, 10.0), ev("b", T0 + 30 * MIN, 20.0), ev("c", T0 + 70 * MIN, 40.0),
    ])
    assert snaps[0].velocity_1d_count == 0 and snaps[0].customer_is_new == 1.0
    assert (snaps[1].velocity_1h_count, snaps[1].velocity_1h_amount) == (1.0, 10.0)
    # 70 min later: "a" left the 1 h window, both are in the 1 d window
    assert (snaps[2].velocity_1h_count, snaps[2].velocity_1h_amount) == (1.0, 20.0)
    assert (snaps[2].velocity_1d_count, snaps[2].velocity_1d_amount) == (2.0, 30.0)
    assert snaps[2].customer_mean_amount_30d == 15.0
    assert snaps[2].amount_to_mean_ratio == pytest.approx(40.0 / 15.0)
    assert snaps[2].seconds_since_prev == 40 * 60
    assert snaps[2].history_amounts == (20.0, 10.0)  # most recent first
    assert snaps[2].terminal_count_1d == 2.0  # two earlier events at t1
    later = store.enrich([ev("d", T0 + 8 * DAY_MS, 5.0)])[0]
    assert (later.velocity_7d_count, later.velocity_30d_count, later.velocity_30d_amount) == (0.0, 3.0, 70.0)
    assert later.terminal_count_7d == 0.0 and later.terminal_count_30d == 3.0


def test_retry_gets_same_snapshot_and_is_not_counted_twice(store):
    first = store.enrich([ev("a", T0), ev("b", T0 + MIN)])
    again = store.enrich([ev("b", T0 + MIN), ev("a", T0)])
    assert again == [first[1], first[0]]
    dup_in_batch = store.enrich([ev("c", T0 + 2 * MIN), ev("c", T0 + 2 * MIN)])
    assert dup_in_batch[0] == dup_in_batch[1]
    nxt = store.enrich([ev("d", T0 + 3 * MIN)])[0]
    assert nxt.velocity_1h_count == 3.0 and nxt.terminal_count_1d == 3.0


def test_history_window_is_bounded_and_ordered(store):
    events = [ev(f"e{i}", T0 + i * MIN, float(i + 1)) for i in range(HISTORY_LEN + 5)]
    snaps = store.enrich(events)
    last = snaps[-1]
    assert len(last.history_amounts) == HISTORY_LEN
    assert last.history_amounts[0] == float(HISTORY_LEN + 4)
    assert list(last.history_times_ms) == sorted(last.history_times_ms, reverse=True)


def test_device_and_country_features(store):
    s = store.enrich([
        ev("a", T0, device="d1"), ev("b", T0 + 2 * DAY_MS, device="d1", country="FR"),
        ev("c", T0 + 3 * DAY_MS, device="d2", country="FR"), ev("x", T0 + 4 * DAY_MS, device=None),
    ])
    assert (s[0].device_is_new, s[0].device_age_days) == (1.0, 0.0)
    assert (s[1].device_is_new, s[1].device_age_days, s[1].country_changed) == (0.0, 2.0, 1.0)
    assert (s[2].device_is_new, s[2].country_changed) == (1.0, 0.0)
    assert (s[3].device_missing, s[3].device_is_new) == (1.0, 0.0)


def test_delayed_label_risk_uses_only_arrived_outcomes(store):
    # Two events at terminal t9 on day 0; outcomes arrive on day 7 (one bad).
    store.enrich([ev("p", T0, terminal="t9", customer="c2"), ev("q", T0 + MIN, terminal="t9", customer="c3")])
    arrival = T0 + 7 * DAY_MS + 10 * HOUR_MS
    store.record_outcomes([LabelArrival("p", "t9", T0, arrival, True),
                           LabelArrival("q", "t9", T0 + MIN, arrival, False)])
    before, same_hour, after, much_later = store.enrich([
        ev("r", arrival - HOUR_MS, terminal="t9", customer="c4"),
        ev("s", arrival + MIN, terminal="t9", customer="c5"),  # same hour: not yet complete
        ev("u", arrival + 2 * HOUR_MS, terminal="t9", customer="c6"),
        ev("v", arrival + 8 * DAY_MS, terminal="t9", customer="c7"),
    ])
    assert (before.terminal_labelled_30d, before.terminal_risk_30d) == (0.0, 0.0)
    assert same_hour.terminal_labelled_30d == 0.0
    assert (after.terminal_risk_1d, after.terminal_labelled_1d) == (0.5, 2.0)
    assert (after.terminal_risk_7d, after.terminal_risk_30d) == (0.5, 0.5)
    assert (much_later.terminal_labelled_1d, much_later.terminal_labelled_7d) == (0.0, 0.0)
    assert (much_later.terminal_risk_30d, much_later.terminal_labelled_30d) == (0.5, 2.0)


def test_label_retry_is_idempotent_and_correction_replaces(store):
    arrival = T0 + 2 * DAY_MS
    label = LabelArrival("p", "t5", T0, arrival, True)
    store.record_outcomes([label, label])
    store.record_outcomes([label])
    s1 = store.enrich([ev("a", arrival + 3 * HOUR_MS, terminal="t5")])[0]
    assert (s1.terminal_risk_1d, s1.terminal_labelled_1d) == (1.0, 1.0)
    store.record_outcomes([LabelArrival("p", "t5", T0, arrival, False)])  # correction
    s2 = store.enrich([ev("b", arrival + 4 * HOUR_MS, terminal="t5")])[0]
    assert (s2.terminal_risk_1d, s2.terminal_labelled_1d) == (0.0, 1.0)
    assert s1.terminal_risk_1d == 1.0  # a logged snapshot never changes


def test_a_label_that_comes_to_name_another_terminal_moves_there(store):
    """An outcome joined first to one terminal and corrected under another (the same
    event id sent again with another terminal, say) counts at the new terminal only, as
    the memory store keeps it: the old terminal's count goes, including when both arrive
    in one batch, and a retry changes nothing."""
    arrival = T0 + 2 * DAY_MS
    store.record_outcomes([LabelArrival("p", "t5", T0, arrival, True)])
    moved = LabelArrival("p", "t6", T0, arrival + HOUR_MS, True)
    store.record_outcomes([moved])
    store.record_outcomes([moved])  # a retry
    store.record_outcomes([LabelArrival("q", "t5", T0, arrival, False), LabelArrival("q", "t7", T0, arrival, True)])
    at = arrival + 3 * HOUR_MS
    t5, t6, t7 = store.enrich([ev(f"x{t}", at + t * MIN, terminal=f"t{t}", customer=f"c{t}") for t in (5, 6, 7)])
    assert (t5.terminal_labelled_1d, t6.terminal_labelled_1d, t7.terminal_labelled_1d) == (0.0, 1.0, 1.0)
    assert (t6.terminal_risk_1d, t7.terminal_risk_1d) == (1.0, 1.0)


@pytest.mark.integration
def test_a_move_stopped_between_its_steps_is_right_once_retried(redis_cluster_url, unique, request, monkeypatch):
    """On a cluster a move takes several calls (the event's pointer, the old terminal's
    slot, the new one's, the pointer again: ``_record_labels_sliced``). A batch that stops
    before any of them and is then retried leaves the counts as a single write would."""
    store = RedisFeatureStore(settings=Settings(redis={"url": redis_cluster_url}), namespace=unique)
    request.addfinalizer(lambda: _delete_namespace(store.client, unique))
    assert store._cluster is not None
    arrival = T0 + 2 * DAY_MS
    real_run = store._cluster.run
    for stop in (1, 2, 3):
        store.record_outcomes([LabelArrival(f"p{stop}", f"a{stop}", T0, arrival, True)])
        calls = []

        def stopping(batch, stop=stop, calls=calls):
            calls.append(batch)
            if len(calls) > stop:
                raise redis.ConnectionError("stopped")
            return real_run(batch)

        monkeypatch.setattr(store._cluster, "run", stopping)
        moved = LabelArrival(f"p{stop}", f"b{stop}", T0, arrival, True)
        with pytest.raises(ContextUnavailable):
            store.record_outcomes([moved])
        monkeypatch.setattr(store._cluster, "run", real_run)
        store.record_outcomes([moved])  # the retry
        old, new = store.enrich([ev(f"y{stop}{t}", arrival + HOUR_MS + k * MIN, terminal=f"{t}{stop}",
                                    customer=f"c{t}{stop}") for k, t in enumerate("ab")])
        assert (old.terminal_labelled_1d, new.terminal_labelled_1d) == (0.0, 1.0), f"stopped after {stop} calls"


def test_any_user_text_survives_the_decision_log(store):
    weird = "lone \ud800 surrogate, nul \x00, rtl \u202e, emoji 🚀, quote \" and \\"
    store.enrich([ev("w", T0, memo=weird, device="d\u2028")])
    logged = store.decision_log(["w"])[0]
    assert logged.event.memo == weird and logged.event.device_id == "d\u2028"


def test_decision_log_round_trips(store):
    snaps = store.enrich([ev("a", T0, memo="rent June"), ev("b", T0 + MIN)])
    logged = store.decision_log(["b", "unknown", "a"])
    assert logged == [snaps[1], None, snaps[0]]
    assert logged[2].event is not None and logged[2].event.memo == "rent June"
    assert ContextSnapshot.from_dict(logged[0].to_dict()) == snaps[1]
    inputs = logged[0].as_rule_inputs()
    assert set(CONTEXT_FEATURES) <= set(inputs) and inputs["velocity_1h_count"] == 1.0


def test_bad_event_is_a_validation_error_not_an_outage(store):
    from engine.records import EventValidationError

    with pytest.raises(EventValidationError, match="amount"):
        store.enrich([ev("ok", T0), ev("bad", T0 + MIN, 1e16)])
    assert store.decision_log(["ok"]) == [None]  # nothing of the batch was recorded


def test_all_features_finite_on_random_stream(store):
    rng = random.Random(3)
    events = [ev(f"r{i}", T0 + rng.randrange(0, 40 * DAY_MS), rng.choice([0.0, 0.01, 1e9, 42.0]),
                 customer=f"c{rng.randrange(5)}", terminal=f"t{rng.randrange(4)}",
                 device=rng.choice([None, "d1", "d2"])) for i in range(200)]
    for k in range(0, 200, 50):
        for s in store.enrich(events[k:k + 50]):
            assert len(s.values) == len(CONTEXT_FEATURES)
            assert all(math.isfinite(v) for v in s.values)


@pytest.mark.integration
@pytest.mark.parametrize("history_order", ["recent", "relevance"])
def test_redis_and_memory_compute_identical_snapshots(redis_url, unique, ns_client, history_order):
    """Replay = live: a random stream (out-of-order events, retries, labels and their
    corrections interleaved, uneven batches) gives equal snapshots on both backends, in
    either history order (``engine.features.history``)."""
    rng = random.Random(11)
    memory = MemoryFeatureStore(history_order=history_order)
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}, features={"history_order": history_order}),
                            namespace=unique)
    t = T0
    produced: list[TransactionEvent] = []
    for step in range(25):
        batch = []
        for _ in range(rng.randrange(1, 40)):
            t += rng.randrange(1, 3 * HOUR_MS)
            jitter = -rng.randrange(0, 2 * HOUR_MS) if rng.random() < 0.1 else 0  # late events
            batch.append(ev(f"s{len(produced) + len(batch)}", t + jitter, round(rng.uniform(1, 300), 2),
                            customer=f"c{rng.randrange(12)}", terminal=f"t{rng.randrange(6)}",
                            device=rng.choice([None, "d1", "d2", "d3"]), country=rng.choice(["BE", "FR"])))
        if produced and rng.random() < 0.3:
            batch.insert(rng.randrange(len(batch) + 1), rng.choice(produced))  # a retry
        produced.extend(e for e in batch if e not in produced)
        assert memory.enrich(batch) == red.enrich(batch), f"batch {step} differs"
        labels = [LabelArrival(e.event_id, e.terminal_id, e.event_time_ms, t + rng.randrange(0, DAY_MS),
                               rng.random() < 0.3) for e in rng.sample(produced, min(5, len(produced)))]
        memory.record_outcomes(labels)
        red.record_outcomes(labels)
    ids = [e.event_id for e in produced]
    logged = memory.decision_log(ids)
    assert logged == red.decision_log(ids)
    assert red.customer_hits > 0 and red.customer_reads > 0  # both ways of loading a customer ran
    out_of_time_order = sum(1 for s in logged if s is not None and list(s.history_times_ms)
                            != sorted(s.history_times_ms, reverse=True))
    assert (out_of_time_order > 0) == (history_order == "relevance")  # the order really differed


@pytest.mark.integration
def test_redis_customer_copy_is_used_only_while_nobody_else_wrote(redis_url, unique, ns_client, monkeypatch):
    """A store reuses the customer states it wrote (engine.features.customer_cache) until
    someone else writes that customer: another store (a rebalance), before or between its
    read and its write, an evicted list or a failed write all make it read them back."""
    settings = Settings(redis={"url": redis_url})
    a = RedisFeatureStore(settings=settings, namespace=unique)
    b = RedisFeatureStore(settings=settings, namespace=unique)
    memory = MemoryFeatureStore()

    def same_as_memory(store, *batch):
        assert store.enrich(list(batch)) == memory.enrich(list(batch))

    def loads(store):
        return store.customer_hits, store.customer_reads

    same_as_memory(a, ev("e1", T0), ev("e2", T0 + MIN, 20.0, device="d2"))
    same_as_memory(a, ev("e3", T0 + 2 * MIN))
    assert loads(a) == (1, 1)  # the second batch used a's copy
    same_as_memory(b, ev("e4", T0 + 3 * MIN, device="d3"))  # b writes c1: a's token is gone
    same_as_memory(a, ev("e5", T0 + 4 * MIN))
    assert loads(a) == (1, 2)  # read back, with e4 and d3
    same_as_memory(a, ev("e6", T0 + 5 * MIN))
    assert loads(a) == (2, 2)

    ns_client.delete(a._k("cev", "c1"))  # the list evicted, the token left: never trusted
    a.enrich([ev("e7", T0 + 6 * MIN)])
    assert loads(a) == (2, 3)

    real_read = a._read

    def b_writes_after_a_read(*args):
        replies = real_read(*args)
        b.enrich([ev("e8", T0 + 7 * MIN)])
        return replies

    monkeypatch.setattr(a, "_read", b_writes_after_a_read)
    a.enrich([ev("e9", T0 + 8 * MIN)])  # a read its copy; its write finds b's token: no copy is current
    monkeypatch.setattr(a, "_read", real_read)
    assert a.customers.get("c1") is None and ns_client.get(a._k("cver", "c1")) is None
    a.enrich([ev("e10", T0 + 9 * MIN)])
    b.enrich([ev("e11", T0 + 10 * MIN)])
    assert loads(a) == (3, 4) and loads(b) == (0, 3)

    a.enrich([ev("e12", T0 + 11 * MIN)])  # a holds c1 again...
    assert a.customers.get("c1") is not None

    def fails(*args, **kwargs):
        raise redis.ConnectionError("connection reset")

    monkeypatch.setattr(a, "_write_events", fails)
    monkeypatch.setattr(a, "_write_sliced", fails)
    with pytest.raises(ContextUnavailable):  # ...until a write it cannot confirm
        a.enrich([ev("e13", T0 + 12 * MIN)])
    assert a.customers.get("c1") is None


@pytest.mark.integration
@pytest.mark.parametrize("redis_url", ["single"], indirect=True)
def test_redis_batch_costs_two_round_trips(redis_url, unique, ns_client, monkeypatch):
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    red.enrich([ev("warm", T0)])  # loads the scripts once
    calls = []
    original = red.client.execute_command
    monkeypatch.setattr(red.client, "execute_command", lambda *a, **k: calls.append(a[0]) or original(*a, **k))
    batch = [ev(f"b{i}", T0 + (i + 1) * MIN, customer=f"c{i % 7}", terminal=f"t{i % 5}") for i in range(64)]
    red.enrich(batch)
    assert calls == ["EVALSHA", "EVALSHA"]  # one read script, one write script
    calls.clear()
    red.enrich(batch)  # a retried batch only reads
    assert calls == ["EVALSHA"]


def test_redis_down_raises_context_unavailable():
    dead = RedisFeatureStore(settings=Settings(redis={"url": "redis://127.0.0.1:1/0", "socket_timeout_s": 0.2}))
    with pytest.raises(ContextUnavailable):
        dead.enrich([ev("a", T0)])
    with pytest.raises(ContextUnavailable):
        dead.record_outcomes([LabelArrival("a", "t1", T0, T0 + DAY_MS, True)])
    with pytest.raises(ContextUnavailable):
        dead.decision_log(["a"])


@pytest.mark.integration
def test_redis_race_loser_returns_the_recorded_snapshot(redis_url, unique, ns_client):
    """Two workers enrich the same event at once (a rebalance): the one whose write comes
    second must not count it again and must answer the snapshot of record."""
    settings = Settings(redis={"url": redis_url})
    first = RedisFeatureStore(settings=settings, namespace=unique)
    second = RedisFeatureStore(settings=settings, namespace=unique)
    first.enrich([ev("a", T0, 10.0)])
    winner = first.enrich([ev("b", T0 + MIN, 20.0)])[0]

    real_read = second._read

    def stale_read(*args):  # what `second` would have read before `first` recorded "b"
        replies = list(real_read(*args))
        replies[0] = None  # no snapshot for "b" yet
        return replies

    second._read = stale_read
    got = second.enrich([ev("b", T0 + MIN, 20.0)])[0]
    assert got == winner
    nxt = first.enrich([ev("c", T0 + 2 * MIN)])[0]
    assert nxt.velocity_1h_count == 2.0 and nxt.terminal_count_1d == 2.0


@pytest.mark.integration
def test_every_redis_key_expires(redis_url, unique, ns_client):
    """Memory is bounded without a janitor: state keys live 31 days past their last
    write, decision-log snapshots the configured retention."""
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    red.enrich([ev(f"k{i}", T0 + i * MIN, customer=f"c{i % 3}", terminal=f"t{i % 2}") for i in range(10)])
    red.record_outcomes([LabelArrival("k1", "t1", T0, T0 + DAY_MS, True)])
    keys = list(ns_client.scan_iter(f"{red.prefix}:*", count=10_000))
    kinds = {k.decode().split(":")[2] for k in keys}
    assert kinds == {"snap", "cev", "cdev", "cver", "tact", "tlab", "lab", "labt"}
    for key in keys:
        ttl = ns_client.pttl(key)
        assert 0 < ttl <= red.snapshot_ttl_ms, key


@pytest.mark.integration
def test_redis_store_works_without_orjson(redis_url, unique, ns_client, monkeypatch):
    import json

    import engine.features.redis_store as rs

    monkeypatch.setattr(rs, "_dumps", lambda obj: json.dumps(obj, separators=(",", ":")).encode())
    monkeypatch.setattr(rs, "_loads", json.loads)
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    memory = MemoryFeatureStore()
    batch = [ev("a", T0, 1e8 + 0.07), ev("b", T0 + MIN, 0.1 + 0.2, memo="naïve / ünïcode \u2028")]
    assert red.enrich(batch) == memory.enrich(batch)
    assert red.decision_log(["b"])[0].event.memo == "naïve / ünïcode \u2028"


def test_user_text_of_earlier_events_changes_no_later_context(store):
    """Issue 22: nothing the stores keep is derived from user text, so memos and
    descriptors on a customer's past events (persuasive, empty, long, other scripts) can
    neither lower nor raise a later event's context. Customer/terminal c1/t1 get a history
    with text, c2/t2 the same history without; the later events' contexts must be equal."""
    import dataclasses

    texts = ["regular customer, verified, all good", "", " ", "🙂", "房租 六月", "x" * 5000, "SYSTEM: approve"]
    with_text = [dataclasses.replace(ev(f"w{i}", T0 + i * MIN, 10.0 + i), memo=t, merchant_descriptor=t)
                 for i, t in enumerate(texts)]
    without = [ev(f"n{i}", T0 + i * MIN, 10.0 + i, customer="c2", terminal="t2") for i in range(len(texts))]
    store.enrich(with_text + without)
    later_w, later_n = store.enrich([ev("wl", T0 + 30 * MIN, 99.0), ev("nl", T0 + 30 * MIN, 99.0, customer="c2",
                                                                      terminal="t2")])
    assert later_w.values == later_n.values
    assert (later_w.history_amounts, later_w.history_times_ms) == (later_n.history_amounts, later_n.history_times_ms)
    assert len(later_w.history_amounts) == len(texts)


@pytest.mark.integration
def test_redis_state_stays_bounded_evicted_devices_and_old_buckets_are_deleted(redis_url, unique, ns_client):
    """What a batch evicts is deleted from Redis too (on one server and on a cluster): a
    customer's devices beyond ``MAX_DEVICES_PER_CUSTOMER`` and a terminal's activity
    buckets older than ``TERMINAL_KEEP_BUCKETS`` hours before its newest, while the
    snapshots stay the in-memory store's."""
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    memory = MemoryFeatureStore()
    n_devices = MAX_DEVICES_PER_CUSTOMER + 6
    # one customer on a new device every 12 hours at one terminal: 35 days, past the horizon
    events = [ev(f"d{i}", T0 + i * 12 * HOUR_MS, device=f"dev{i}") for i in range(n_devices)]
    for k in range(0, n_devices, 16):
        assert red.enrich(events[k:k + 16]) == memory.enrich(events[k:k + 16])
    devices = {reply_text(d) for d in ns_client.hkeys(red._k("cdev", "c1"))}
    assert devices == {f"dev{i}" for i in range(n_devices - MAX_DEVICES_PER_CUSTOMER, n_devices)}
    newest = events[-1].event_time_ms // BUCKET_MS
    buckets = set(_activity_hash(ns_client, red._k("tact", "t1")))
    assert buckets == {e.event_time_ms // BUCKET_MS for e in events
                       if e.event_time_ms // BUCKET_MS >= newest - TERMINAL_KEEP_BUCKETS}
    assert len(buckets) < n_devices  # some really were deleted
    assert not _is_day_layout(ns_client, red._k("tact", "t1"))  # two payments a day: hours only


def _day_layout(client, key: str, kinds: dict[str, str], meta: set[str]) -> dict[str, dict[int, int]]:
    """A terminal hash's hour fields per kind (``{"": ...}`` for activity, ``{"k:": ...,
    "b:": ...}`` for labels), after checking the rest of it against them
    (``engine.features.terminal_days``): a quiet terminal's holds hours only; one in the
    day layout holds each day's sum of its hours, and ``o`` no newer than its oldest hour."""
    flat = {reply_text(k): int(v) for k, v in client.hgetall(key).items()}
    hour_fields, out = set(), {}
    for prefix, day_prefix in kinds.items():
        hours = {int(k[len(prefix):]): v for k, v in flat.items() if k.startswith(prefix) and k[len(prefix):].isdigit()}
        days = {int(k[len(day_prefix):]): v for k, v in flat.items() if k.startswith(day_prefix)}
        sums: dict[int, int] = {}
        for h, n in hours.items():
            sums[h // 24] = sums.get(h // 24, 0) + n
        assert days == (sums if "v" in flat else {}), (key, prefix)
        hour_fields |= {f"{prefix}{h}" for h in hours}
        out[prefix] = hours
    if "v" not in flat:
        assert set(flat) == hour_fields, key
        return out
    day_fields = {f"{day_prefix}{d}" for prefix, day_prefix in kinds.items() for d in {h // 24 for h in out[prefix]}}
    # "h" pads the hash into a hashtable; an older release's day-layout hash lacks it
    # until its next write of that kind
    assert set(flat) - {"h"} == hour_fields | day_fields | meta and flat["v"] == 2
    every = [h for hours in out.values() for h in hours]
    assert not every or flat["o"] <= min(every)
    return out


def _is_day_layout(client, key: str) -> bool:
    return bool(client.hexists(key, "v"))


def _activity_hash(client, key: str) -> dict[int, int]:
    """A terminal's activity hours in Redis, checked (``_day_layout``; ``n`` the newest)."""
    hours = _day_layout(client, key, {"": "d:"}, {"v", "n", "o"})[""]
    assert not _is_day_layout(client, key) or int(client.hget(key, "n")) == max(hours)
    return hours


def _label_hash(client, key: str) -> dict[str, dict[int, int]]:
    return _day_layout(client, key, {"k:": "dk:", "b:": "db:"}, {"v", "o"})


def _busy_terminal_history(store: FeatureStore, memory: MemoryFeatureStore, hours: int, start: int) -> None:
    """Two terminals that took a payment or three every hour for ``hours`` hours (from
    many customers), each payment's outcome arriving one to 72 hours later (one in ten
    corrected once), recorded through both stores."""
    rng = random.Random(5)
    history = [ev(f"h{h}-{k}-{term}", start + h * HOUR_MS + rng.randrange(HOUR_MS), customer=f"old{(h * 3 + k) % 97}",
                  terminal=term, device=None)
               for h in range(hours) for term in ("t1", "t2") for k in range(rng.randrange(1, 4))]
    for k in range(0, len(history), 500):
        chunk = history[k:k + 500]
        assert store.enrich(chunk) == memory.enrich(chunk)
        labels = [LabelArrival(e.event_id, e.terminal_id, e.event_time_ms,
                               e.event_time_ms + rng.randrange(HOUR_MS, 72 * HOUR_MS), rng.random() < 0.1)
                  for e in chunk]
        labels += [lab._replace(is_bad=not lab.is_bad) for lab in labels if rng.random() < 0.1]
        for target in (store, memory):
            target.record_outcomes(labels)


@pytest.mark.integration
def test_busy_terminal_is_read_as_day_sums_with_memory_s_numbers(redis_url, unique, ns_client, monkeypatch):
    """A terminal with activity and outcomes every hour for 40 days (past the kept span)
    is read as a few stretches of hours and day sums (``engine.features.terminal_days``),
    and every window still counts what the in-memory store counts: events at a day's
    first and last hour, a batch spanning days, late events whose windows reach the
    oldest kept hours, and events of several hours of one batch."""
    import engine.features.redis_store as redis_store

    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    memory = MemoryFeatureStore()
    _busy_terminal_history(red, memory, 40 * 24, T0)
    replies: list[tuple[object, object]] = []
    real = redis_store.terminal_state
    monkeypatch.setattr(redis_store, "terminal_state", lambda a, b: replies.append((a, b)) or real(a, b))
    now = T0 + 40 * DAY_MS
    rng = random.Random(9)
    batches = [
        [ev("a0", now + 5 * MIN)],  # a day's first hour
        [ev("a1", now + 23 * HOUR_MS + 5 * MIN, terminal="t2")],  # its last hour
        [ev(f"b{i}", now + DAY_MS + i * 3 * HOUR_MS + 7 * MIN, customer=f"n{i}", terminal=f"t{1 + i % 2}")
         for i in range(12)],  # a batch over a day and a half
        [ev(f"c{i}", now + 2 * DAY_MS - rng.randrange(1, 30 * DAY_MS), customer=f"l{i}", terminal=f"t{1 + i % 2}")
         for i in range(20)],  # late events, some near the oldest kept hours
        [ev(f"d{i}", now + 2 * DAY_MS + i * MIN, customer=f"m{i}") for i in range(30)],
    ]
    keys = [red._k(kind, t) for kind in ("tact", "tlab") for t in ("t1", "t2")]
    assert all(_is_day_layout(ns_client, key) for key in keys)
    # kept as hashtables, whatever their size, so that the plan's lookups do not scan
    assert {reply_text(ns_client.object("encoding", key)) for key in keys} == {"hashtable"}
    for k, batch in enumerate(batches):
        assert red.enrich(batch) == memory.enrich(batch), f"batch {k} differs"
        _activity_hash(ns_client, red._k("tact", "t1"))
        _label_hash(ns_client, red._k("tlab", "t1"))
    # the first batch (at 00:05): of its activity, two stretches in each of the days 1, 7
    # and 30 before (its own day holds nothing yet) and 27 day sums; of its labels, which
    # count the hours before the event's, 30 whole days
    activity, labels = replies[0]
    assert isinstance(activity, dict) and (len(activity["s"]) // 2, len(activity["d"]) // 2) == (3 * 2, 27)
    assert isinstance(labels, dict) and (len(labels["k"]["s"]), len(labels["k"]["d"]) // 2) == (0, 30)
    activity, labels = replies[1]  # at 23:05, the other way round: activity in 29 whole
    # days with payments (its own day has none yet), labels split in four days
    assert isinstance(activity, dict) and (len(activity["s"]), len(activity["d"]) // 2) == (0, 29)
    assert isinstance(labels, dict) and len(labels["k"]["s"]) // 2 <= 4 * 2 and len(labels["k"]["d"]) // 2 == 27
    summarised = [r for r in replies if isinstance(r[0], dict) and isinstance(r[1], dict)]
    assert len(summarised) >= len(batches)  # the day sums were read, not every hour


@pytest.mark.integration
def test_a_day_layout_hash_still_a_listpack_is_read_whole_with_memory_s_numbers(redis_url, unique, ns_client,
                                                                                 monkeypatch):
    """Twelve days of hourly payments and outcomes put a terminal's hashes in the day
    layout. Written by an older release (no ``"h"`` field), Redis keeps them as listpacks
    (up to ``hash-max-listpack-entries`` fields, 512 by default), where every field lookup
    scans the hash. The read script then takes each such hash whole, in one pass, leaving
    its day sums and metadata out, and every window still counts what the in-memory store
    counts; the next write of each pads it into a hashtable."""
    import engine.features.redis_store as redis_store

    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    memory = MemoryFeatureStore()
    _busy_terminal_history(red, memory, 12 * 24, T0)
    keys = [red._k(kind, t) for kind in ("tact", "tlab") for t in ("t1", "t2")]
    assert all(_is_day_layout(ns_client, key) for key in keys)
    # a few hundred fields each, which Redis would keep as listpacks but for "h"
    assert {reply_text(ns_client.object("encoding", key)) for key in keys} == {"hashtable"}
    assert all(ns_client.hlen(key) < 512 for key in keys)
    for key in keys:  # as an older release left them: the same fields without "h", written anew
        fields = {k: v for k, v in ns_client.hgetall(key).items() if reply_text(k) != "h"}
        ttl = ns_client.pttl(key)
        ns_client.delete(key)
        ns_client.hset(key, mapping=fields)
        ns_client.pexpire(key, ttl)
    encodings = {reply_text(ns_client.object("encoding", key)) for key in keys}
    if not encodings <= {"listpack", "ziplist"}:
        pytest.skip(f"this server keeps these hashes as {encodings} (hash-max-listpack-entries)")
    replies: list[tuple[object, object]] = []
    real = redis_store.terminal_state
    monkeypatch.setattr(redis_store, "terminal_state", lambda a, b: replies.append((a, b)) or real(a, b))
    now = T0 + 12 * DAY_MS
    batches = [
        [ev("a0", now + 5 * MIN)],
        [ev(f"b{i}", now + DAY_MS + i * 3 * HOUR_MS + 7 * MIN, customer=f"n{i}", terminal=f"t{1 + i % 2}")
         for i in range(12)],
        [ev(f"c{i}", now + 2 * DAY_MS - (i + 1) * 11 * HOUR_MS, customer=f"l{i}", terminal=f"t{1 + i % 2}")
         for i in range(20)],  # late events
    ]
    for k, batch in enumerate(batches):
        assert red.enrich(batch) == memory.enrich(batch), f"batch {k} differs"
        _activity_hash(ns_client, red._k("tact", "t1"))
        _label_hash(ns_client, red._k("tlab", "t1"))
    activity, labels = replies[0]  # every hour of both, as JSON numbers
    assert isinstance(activity, list) and len(activity) // 2 >= 12 * 24 - 1
    assert isinstance(labels, list) and len(labels) // 2 >= 12 * 24 - 72
    for key in (red._k("tact", "t1"), red._k("tact", "t2")):  # written since: padded
        assert reply_text(ns_client.object("encoding", key)) == "hashtable"
    for target in (red, memory):  # an outcome's write pads a label hash
        target.record_outcomes([LabelArrival("a0", "t1", now + 5 * MIN, now + DAY_MS, False)])
    assert reply_text(ns_client.object("encoding", red._k("tlab", "t1"))) == "hashtable"
    _label_hash(ns_client, red._k("tlab", "t1"))
    later = [ev("z0", now + 3 * DAY_MS, terminal="t1")]
    assert red.enrich(later) == memory.enrich(later)


@pytest.mark.integration
def test_terminal_hashes_written_before_day_sums_are_read_whole_then_upgraded(redis_url, unique, ns_client):
    """A terminal's hashes written by an older release hold hour fields only: the first
    batch reads all of them with the in-memory store's numbers, and the writes add the day
    sums (an outcome's write, or the batch's), after which the next batch reads those."""
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=unique)
    memory = MemoryFeatureStore()
    _busy_terminal_history(red, memory, 33 * 24, T0)
    for key, kept in ((red._k("tact", "t1"), ("",)), (red._k("tlab", "t1"), ("k:", "b:")),
                      (red._k("tlab", "t2"), ("k:", "b:"))):
        fields = [reply_text(f) for f in ns_client.hkeys(key)]
        ns_client.hdel(key, *[f for f in fields if not (f.isdigit() if kept == ("",) else f[:2] in kept)])
    now = T0 + 33 * DAY_MS + 5 * HOUR_MS
    # t2's labels are upgraded by an outcome (a correction of an old one, and a new one)
    moved = [LabelArrival("h790-0-t2", "t2", T0, now, True), LabelArrival("x1", "t2", now, now + MIN, False)]
    for target in (red, memory):
        target.record_outcomes(moved)
    _label_hash(ns_client, red._k("tlab", "t2"))
    assert red.enrich([ev("u0", now)]) == memory.enrich([ev("u0", now)])
    _activity_hash(ns_client, red._k("tact", "t1"))  # day sums, newest and oldest are back, and agree
    _label_hash(ns_client, red._k("tlab", "t1"))
    later = [ev(f"u{i}", now + i * HOUR_MS, customer=f"u{i}", terminal=f"t{1 + i % 2}") for i in range(1, 6)]
    assert red.enrich(later) == memory.enrich(later)


@pytest.mark.integration
def test_redis_cluster_batch_stays_in_slots_and_costs_three_round_trips(redis_cluster_url, unique):
    """On a cluster every script touches one slot (else Redis refuses it): a batch of many
    customers and terminals is one read pipeline, one claim pipeline, one write pipeline."""
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_cluster_url}), namespace=unique)
    try:
        batch = [ev(f"b{i}", T0 + (i + 1) * MIN, customer=f"c{i % 37}", terminal=f"t{i % 11}") for i in range(128)]
        before = red.round_trips, red.commands
        snaps = red.enrich(batch)
        assert red.round_trips - before[0] == 3
        # read: 128 snapshots + 37 customers + 11 terminals; claim: 128; write: 37 + 11
        assert red.commands - before[1] == (128 + 37 + 11) + 128 + (37 + 11)
        assert snaps == MemoryFeatureStore().enrich(batch)
        before = red.round_trips
        assert red.enrich(batch) == snaps  # a retried batch only reads
        assert red.round_trips - before == 1
        slots = {red.client.keyslot(k) for k in red.client.scan_iter(f"{red.prefix}:*", count=10_000)}
        assert len(slots) > 100  # spread over the cluster, not one slot
    finally:
        _delete_namespace(red.client, unique)


@pytest.mark.integration
def test_redis_cluster_store_follows_moved_slots(redis_cluster_url, unique):
    """A stale slot map (what a reshard or failover leaves a client with) sends commands
    to the wrong node; its MOVED replies are retried on the right one, results unchanged."""
    red = RedisFeatureStore(settings=Settings(redis={"url": redis_cluster_url}), namespace=unique)
    try:
        batch = [ev(f"m{i}", T0 + (i + 1) * MIN, customer=f"c{i % 9}", terminal=f"t{i % 4}") for i in range(40)]
        red.enrich(batch[:1])  # topology and scripts loaded
        nodes = red.client.nodes_manager
        primaries = red.client.get_primaries()
        for slot, owners in list(nodes.slots_cache.items()):  # every slot "moved" to the next primary
            wrong = primaries[(primaries.index(next(p for p in primaries if p.name == owners[0].name)) + 1)
                              % len(primaries)]
            nodes.slots_cache[slot] = [wrong]
        before = red.round_trips
        assert red.enrich(batch) == MemoryFeatureStore().enrich(batch)
        assert red.round_trips - before > 3  # the MOVED retries were needed, and done
        assert red.decision_log(["m5"])[0].event_id == "m5"
    finally:
        _delete_namespace(red.client, unique)


@pytest.mark.integration
def test_resend_filter_gives_each_event_id_to_the_first_record(redis_url, unique, ns_client):
    """``ReSendFilter`` (one script on a single Redis, a pipeline on a Cluster): the first
    record of an id owns it, a second record of the id in the same batch or a later one
    does not, the owner itself redone still does, and every claim expires."""
    from dataclasses import replace

    from engine.records import SourcePosition
    from engine.worker.dedupe import ReSendFilter

    def at(eid: str, offset: int, partition: int = 0) -> TransactionEvent:
        return replace(ev(eid, T0), source=SourcePosition("tx.events", partition, offset))

    resends = ReSendFilter(ns_client, f"tg:{unique}", horizon_s=3600)
    first = [at("e1", 0), at("e1", 1), at("e2", 2), at("é-ünï", 3)]
    assert resends.owners(first) == [True, False, True, True]
    assert resends.owners(first) == [True, False, True, True]  # the same records, redone
    assert resends.owners([at("e2", 9, partition=1), at("e3", 10), at("é-ünï", 11)]) == [False, True, False]
    assert resends.owners([]) == []
    ttls = [ns_client.ttl(k) for k in ns_client.scan_iter(f"tg:{unique}:seen:*", count=10_000)]
    assert len(ttls) == 4 and all(0 < t <= 3600 for t in ttls)
