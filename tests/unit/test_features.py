"""Feature spec, snapshot records and the compute core (no servers; the backend contract
test lives in tests/integration/test_feature_store_contract.py and its memory half runs
without servers too)."""

from __future__ import annotations

import json
import math
import random

import pytest

from engine.enrich import EnrichStage
from engine.features.compute import BucketCounter
from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import CONTEXT_FEATURES, DAY_MS, FEATURE_SCALING, HOUR_MS, SPEC_FINGERPRINT
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival
from engine.records import Outcome, OutcomeKind, TransactionEvent

T0 = 1_700_000_000_000


def ev(eid, t, amount=10.0, customer="c1", terminal="t1", **kw):
    return TransactionEvent(eid, t, customer, "a1", terminal, "5411", amount, "EUR", "card_present", "BE", **kw)


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
    with pytest.raises(Exception):
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
