"""Feature spec, snapshot records and the compute core (no servers; the backend contract
test lives in tests/integration/test_feature_store_contract.py and its memory half runs
without servers too)."""

from __future__ import annotations

import dataclasses
import json
import math
import random

import pytest

from engine.features.compute import BucketCounter
from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import CONTEXT_FEATURES, DAY_MS, FEATURE_SCALING, HOUR_MS, SPEC_FINGERPRINT
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival
from engine.records import Outcome, OutcomeKind, TransactionEvent
from engine.stages.enrich import EnrichStage
from tests.support.events import event

T0 = 1_700_000_000_000


def ev(eid, t, amount=10.0, customer="c1", terminal="t1", **kw):
    return event(0, event_id=eid, event_time_ms=t, customer_id=customer, terminal_id=terminal, amount=amount,
                 channel="card_present", **kw)


def test_feature_names_are_unique_and_documented():
    assert len(set(CONTEXT_FEATURES)) == len(CONTEXT_FEATURES) == 25
    assert set(FEATURE_SCALING) == set(CONTEXT_FEATURES)
    assert {"velocity_1h_count", "terminal_risk_7d", "device_is_new", "amount_to_mean_ratio"} <= set(CONTEXT_FEATURES)
    import engine.features.spec as spec

    for prefix in ("velocity_", "terminal_count_", "terminal_risk_", "terminal_labelled_", "device_is_new",
                   "country_changed", "seconds_since_prev", "customer_is_new", "amount_to_mean_ratio"):
        assert prefix in spec.__doc__, prefix
    assert len(SPEC_FINGERPRINT) == 16


def test_snapshot_attribute_access_rules_and_json_round_trip():
    snap = MemoryFeatureStore().enrich([ev("a", T0, device_id="d"), ev("b", T0 + 1000, 30.0)])[1]
    inputs = snap.as_rule_inputs()
    assert inputs["velocity_1h_count"] == snap.velocity_1h_count == 1.0
    assert inputs["context_available"] == 1.0 and inputs["history_length"] == 1.0
    assert all(isinstance(v, float) for v in inputs.values())
    with pytest.raises(AttributeError):
        snap.not_a_feature  # noqa: B018
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.event_id = "x"  # frozen
    wire = json.loads(json.dumps(snap.to_dict()))
    back = ContextSnapshot.from_dict(wire)
    assert back == snap and back.event == snap.event


def test_from_dict_tolerates_old_logs_and_scrubs_non_finite():
    d = ContextSnapshot.empty().to_dict()
    del d["features"]["terminal_risk_7d"]
    d["features"]["velocity_1h_count"] = float("nan")
    d["features"]["retired_feature"] = 3.0
    s = ContextSnapshot.from_dict(d)
    assert s.terminal_risk_7d == 0.0 and s.velocity_1h_count == 0.0
    assert all(math.isfinite(v) for v in s.values)


def test_empty_snapshot_for_degraded_mode():
    e = ev("a", T0)
    s = ContextSnapshot.empty(e)
    assert (s.event_id, s.available, s.as_rule_inputs()["context_available"]) == ("a", False, 0.0)


class _DownStore:
    def enrich(self, events):
        raise ContextUnavailable("redis down")

    def record_outcomes(self, labels):
        raise ContextUnavailable("redis down")

    def decision_log(self, event_ids):
        raise ContextUnavailable("redis down")


def test_enrich_stage_degrades_instead_of_failing():
    assert isinstance(MemoryFeatureStore(), FeatureStore)
    r = EnrichStage(_DownStore())([ev("a", T0), ev("b", T0)])
    assert r.degraded and "redis down" in r.error
    assert [s.event_id for s in r.snapshots] == ["a", "b"] and not r.snapshots[0].available


def test_label_from_outcome_joins_the_decision_log():
    store = MemoryFeatureStore()
    store.enrich([ev("a", T0, terminal="t7")])
    logged = store.decision_log(["a"])[0]
    out = Outcome("a", OutcomeKind.CHARGEBACK, T0 + 9 * DAY_MS, "bank")
    label = LabelArrival.from_outcome(out, logged)
    assert label == LabelArrival("a", "t7", T0, T0 + 9 * DAY_MS, True)
    with pytest.raises(ValueError):
        LabelArrival.from_outcome(Outcome("zz", OutcomeKind.CHARGEBACK, T0, "bank"), logged)


def test_bucket_counter_matches_a_dict_under_random_updates():
    rng = random.Random(5)
    counter, ref = BucketCounter(), {}
    for _ in range(2000):
        b = rng.choice([rng.randrange(0, 50), max(ref, default=0) + rng.randrange(0, 3)])
        delta = 1 if rng.random() < 0.8 or not ref.get(b) else -1
        counter.add(b, delta)
        ref[b] = ref.get(b, 0) + delta
        if not ref[b]:
            del ref[b]
        lo, hi = sorted(rng.randrange(0, 120) for _ in range(2))
        assert counter.total(lo, hi) == sum(n for k, n in ref.items() if lo <= k <= hi)
    counter.prune(40)
    assert all(b >= 40 for b in counter) and counter.total(40, 10**6) == sum(n for k, n in ref.items() if k >= 40)


def test_out_of_order_event_sees_only_earlier_events():
    store = MemoryFeatureStore()
    store.enrich([ev("a", T0), ev("c", T0 + 2 * HOUR_MS, 50.0)])
    late = store.enrich([ev("b", T0 + HOUR_MS, 20.0)])[0]  # arrives after "c" but happened before
    assert late.velocity_1d_count == 1.0 and late.history_amounts == (10.0,)
    after = store.enrich([ev("d", T0 + 3 * HOUR_MS)])[0]
    assert after.history_amounts == (50.0, 20.0, 10.0)


def test_customer_state_is_bounded_by_the_horizon():
    store = MemoryFeatureStore(snapshot_retention_ms=DAY_MS)
    for day in range(0, 90, 3):
        store.enrich([ev(f"e{day}-{i}", T0 + day * DAY_MS + i * 1000) for i in range(20)])
    cust = store.customers["c1"]
    assert cust.times[0] >= cust.times[-1] - 30 * DAY_MS
    assert len(store.snapshots) <= 20 * 2 + 256  # purged in strides
    s = store.enrich([ev("z", T0 + 200 * DAY_MS)])[0]
    assert s.velocity_30d_count == 0.0 and len(s.history_amounts) == 16  # history survives the horizon


def test_label_index_forgets_labels_older_than_every_window():
    store = MemoryFeatureStore()
    store.record_outcomes([LabelArrival(f"x{i}", "t1", T0, T0 + i * DAY_MS, i % 2 == 0) for i in range(100)])
    assert len(store.labels) < 40


def test_bad_events_are_refused_before_touching_state():
    from engine.records import EventValidationError

    store = MemoryFeatureStore()
    for bad in (ev("a", 12), ev("a", T0, float("nan")), ev("a", T0, -5.0), ev("a", T0, customer="")):
        with pytest.raises(EventValidationError):
            store.enrich([bad])
    assert not store.customers and not store.snapshots


# -- forgetting idle customers and terminals (memory bounded by the active keys) ----------

def _churning_stream(days: int = 110, seed: int = 4):
    """Events in event-time order (5% up to 2 h late) and delayed labels, with every kind
    of key the idle limit (31 days) must get right:

    - six busy customers and four sparse ones (an event every 10-29 days, so their
      history window reaches past the 30-day horizon); busy terminals t0..t3;
    - a new cohort of 'leavers' every 5 days, active for ten days at terminals of their
      own and never again (these must be forgotten);
    - a customer who comes back after 30 days and 22 hours (must not be forgotten);
    - a terminal whose last event is 34 days before its next, but which received a label
      22 days before it (the label is inside the next event's risk window)."""
    rng = random.Random(seed)
    keys: list[tuple[int, str, str]] = []  # (time, customer, terminal)

    def at(day: float, cust: str, term: str) -> None:
        keys.append((T0 + int(day * DAY_MS), cust, term))

    for c in range(6, 10):
        day = rng.randrange(0, 10)
        while day < days:
            at(day + rng.random() / 4, f"s{c}", f"t{c % 4}")
            day += rng.randrange(10, 30)
    for day in range(days):
        for c in range(6):
            if rng.random() < 0.9:
                at(day + rng.random(), f"s{c}", f"t{c % 4}")
        for cohort in {day // 5, day // 5 - 1} - {-1}:  # cohort k is active on days 5k..5k+9
            for k in range(8):
                if rng.random() < 0.7:
                    at(day + rng.random(), f"L{cohort}-{k}", f"lt{cohort}-{k % 3}")
    at(40 + 1 / 24, "back", "t0"), at(70 + 23 / 24, "back", "t1")
    at(50, "s0", "labelled"), at(84, "s1", "labelled")
    keys.sort()
    events = []
    for i, (t, cust, term) in enumerate(keys):
        late = -rng.randrange(0, 2 * HOUR_MS) if rng.random() < 0.05 else 0
        events.append(ev(f"e{i}", t + late, round(rng.uniform(1, 400), 2), customer=cust, terminal=term,
                         device_id=rng.choice([None, "d1", "d2", f"d-{cust}"])))
    labels = [LabelArrival(e.event_id, e.terminal_id, e.event_time_ms,
                           e.event_time_ms + rng.randrange(HOUR_MS, 12 * DAY_MS), rng.random() < 0.2)
              for e in events if rng.random() < 0.3 and e.terminal_id != "labelled"]
    first_at_labelled = next(e for e in events if e.terminal_id == "labelled")
    labels.append(LabelArrival(first_at_labelled.event_id, "labelled", first_at_labelled.event_time_ms,
                               T0 + 62 * DAY_MS, True))
    return events, sorted(labels, key=lambda lab: lab.arrival_time_ms)


def test_forgetting_idle_keys_changes_no_feature_of_a_later_event():
    from engine.features.spec import IDLE_STATE_TTL_MS

    events, labels = _churning_stream()
    keeper = MemoryFeatureStore(snapshot_retention_ms=DAY_MS)
    forgetter = MemoryFeatureStore(snapshot_retention_ms=DAY_MS, forget_idle_after_ms=IDLE_STATE_TTL_MS)
    most_customers = most_terminals = 0
    rng, next_label = random.Random(9), 0
    i = 0
    while i < len(events):
        batch = events[i:i + rng.randrange(1, 12)]  # under a day of events: sweeps come daily
        i += len(batch)
        assert keeper.enrich(batch) == forgetter.enrich(batch), f"events {i - len(batch)}..{i} differ"
        now = max(e.event_time_ms for e in batch)
        arrived = next_label
        while arrived < len(labels) and labels[arrived].arrival_time_ms <= now:
            arrived += 1
        keeper.record_outcomes(labels[next_label:arrived])
        forgetter.record_outcomes(labels[next_label:arrived])
        next_label = arrived
        most_customers = max(most_customers, len(forgetter.customers))
        most_terminals = max(most_terminals, len(forgetter.terminals))
    # It did forget: the store held the keys of the last ~7 cohorts (terminals a few days
    # longer, until their labels are 31 days old), the keeper holds all 22 cohorts.
    cohorts = len({e.customer_id.split("-")[0] for e in events if e.customer_id.startswith("L")})
    assert cohorts == 22 and forgetter.forgotten[0] >= 8 * 12 and forgetter.forgotten[1] >= 3 * 12
    assert len(keeper.customers) - len(forgetter.customers) == forgetter.forgotten[0]
    assert most_customers < len(keeper.customers) / 2 and most_terminals < len(keeper.terminals) * 0.6
    # The steady customers were all kept, sparse ones included.
    assert {f"s{c}" for c in range(10)} <= set(forgetter.customers)
    assert forgetter.snapshots.get(events[-1].event_id) is not None


def test_a_customer_back_after_the_idle_limit_is_new_like_in_redis():
    from engine.features.spec import IDLE_STATE_TTL_MS

    store = MemoryFeatureStore(snapshot_retention_ms=DAY_MS, forget_idle_after_ms=IDLE_STATE_TTL_MS)
    store.enrich([ev(f"a{i}", T0 + i * HOUR_MS, device_id="d1") for i in range(20)])

    def others(first_day: int, last_day: int, start: int) -> None:  # someone else moves the clock on
        for day in range(first_day, last_day + 1):
            store.enrich([ev(f"o{start}-{day}", start + day * DAY_MS, customer="other", terminal="t2")])

    others(1, 30, T0)
    # 30 idle days and a half: still inside the idle limit, everything is remembered
    within = store.enrich([ev("b", T0 + 19 * HOUR_MS + 30 * DAY_MS + 12 * HOUR_MS, device_id="d1")])[0]
    assert within.customer_is_new == 0.0 and len(within.history_amounts) == 16
    assert within.device_is_new == 0.0 and within.velocity_30d_count == 0.0
    others(1, 44, within.event_time_ms)
    assert "c1" not in store.customers and "t1" not in store.terminals and "other" in store.customers
    back = store.enrich([ev("c", within.event_time_ms + 44 * DAY_MS + HOUR_MS, device_id="d1")])[0]
    assert back.customer_is_new == 1.0 and back.history_amounts == () and back.device_is_new == 1.0
    with pytest.raises(ValueError, match="horizon"):
        MemoryFeatureStore(forget_idle_after_ms=DAY_MS)


def test_another_event_under_a_known_id_gets_its_own_context_never_the_stored_one():
    """The poisoning case (issue #20, item 7) on the memory store: the same id with another
    customer and amount is computed afresh and replaces the entry; a true retry reuses it;
    the replaced entry still expires at its own event time."""
    t0 = 1_700_000_000_000
    store = MemoryFeatureStore(snapshot_retention_ms=DAY_MS)
    forged = TransactionEvent("victim-42", t0, "attacker", "a", "t9", "5411", 1.0, "EUR", "ecommerce", "BE")
    real = TransactionEvent("victim-42", t0 + HOUR_MS, "victim", "a", "t1", "5411", 900.0, "EUR", "ecommerce", "BE")
    first = store.enrich([forged])[0]
    got = store.enrich([real])[0]
    assert got is not first and got.customer_id == "victim" and got.event == real
    assert store.enrich([real])[0] is got  # a retry of the real event: idempotent as before
    later = TransactionEvent("later", t0 + 3 * DAY_MS, "c", "a", "t1", "5411", 5.0, "EUR", "ecommerce", "BE")
    store.enrich([later])
    assert store.decision_log(["victim-42"]) == [None]  # retention still applies to the replaced entry
