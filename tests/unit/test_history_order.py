"""The history window's two orders (``engine.features.history``): ``recent`` is the window
every model before the choice was trained on; ``relevance`` reads the customer's 30 days
through a pre-filter and orders the survivors by signal strength and time decay."""

from __future__ import annotations

import dataclasses
import math

import pytest

from engine.features.compute import CustomerState, context_for
from engine.features.history import KEEP_RECENT, relevant_history
from engine.features.memory import MemoryFeatureStore
from engine.features.spec import DAY_MS, HISTORY_LEN, HOUR_MS
from engine.model import InputSpec
from engine.model.card import SchemaMismatchError, check_schema, fresh_model
from engine.stages.encode import FeatureSchema, FieldIsolatedEncoder
from tests.support.events import event

T0 = 1_700_000_000_000 - (1_700_000_000_000 % DAY_MS)


def _state(amounts: list[float], terminals: list[str], step_ms: int = 6 * HOUR_MS) -> CustomerState:
    cust = CustomerState()
    for i, (amount, terminal) in enumerate(zip(amounts, terminals)):
        cust.add(f"e{i}", T0 + i * step_ms, amount, terminal, "BE")
    return cust


def _ev(i: int, amount: float = 20.0, terminal: str = "t-now", step_ms: int = 6 * HOUR_MS):
    return event(0, event_id=f"e{i}", event_time_ms=T0 + i * step_ms, customer_id="c1", terminal_id=terminal,
                 amount=amount, channel="card_present", country="BE")


def test_recent_is_the_last_events_most_recent_first():
    cust = _state([10.0] * 40, ["t1"] * 40)
    snap = context_for(_ev(40), cust, None)
    assert snap.history_times_ms == tuple(T0 + i * 6 * HOUR_MS for i in range(39, 39 - HISTORY_LEN, -1))
    assert snap == context_for(_ev(40), cust, None, "recent")


def test_relevance_keeps_the_recent_head_then_signals_before_ordinary_events():
    amounts = [20.0] * 60
    amounts[10] = 400.0  # 12.5 days back: twenty times the usual
    amounts[50] = 300.0  # 2.5 days back, also unusual, and fresher
    terminals = ["t-other"] * 60
    terminals[30] = "t-now"  # the terminal being paid at now, 7.5 days back
    cust = _state(amounts, terminals)
    picked = relevant_history(cust.times, cust.amounts, cust.terminals, 60, T0 + 60 * 6 * HOUR_MS,
                              "t-now", 25.0, HISTORY_LEN)
    assert picked[:KEEP_RECENT] == [59, 58, 57, 56]
    # the fresher unusual amount, then the older one (stronger, but decayed), then the terminal
    assert picked[KEEP_RECENT:KEEP_RECENT + 3] == [50, 10, 30]
    # the slots left take the most recent events not yet shown, newest first
    assert picked[KEEP_RECENT + 3:] == [55, 54, 53, 52, 51, 49, 48, 47, 46]
    assert len(set(picked)) == HISTORY_LEN


def test_relevance_never_reads_past_the_30_day_horizon_for_a_signal():
    amounts = [20.0] * 60
    amounts[0] = 5_000.0  # a huge amount, but 40 days before the event
    cust = _state(amounts, ["t1"] * 60, step_ms=16 * HOUR_MS)
    now = T0 + 60 * 16 * HOUR_MS
    assert now - cust.times[0] > 30 * DAY_MS
    picked = relevant_history(cust.times, cust.amounts, cust.terminals, 60, now, "t9", 20.0, HISTORY_LEN)
    assert 0 not in picked


def test_relevance_with_a_short_history_is_the_recent_window():
    cust = _state([10.0, 500.0, 10.0], ["t1", "t2", "t1"])
    assert (context_for(_ev(3), cust, None, "relevance").history_times_ms
            == context_for(_ev(3), cust, None, "recent").history_times_ms)


def test_an_unknown_order_is_refused():
    with pytest.raises(ValueError, match="history order"):
        MemoryFeatureStore(history_order="newest")
    with pytest.raises(ValueError, match="history order"):
        FeatureSchema.default("newest")


def test_the_order_is_part_of_the_schema_and_recent_keeps_the_old_hash():
    recent, relevance = FeatureSchema.default(), FeatureSchema.default("relevance")
    assert "history_order" not in recent.to_dict()  # models saved before the choice still load
    assert relevance.schema_hash() != recent.schema_hash()
    assert FeatureSchema.from_dict(relevance.to_dict()) == relevance
    _, card = fresh_model(InputSpec.from_schema(relevance), "rel-1")
    assert check_schema(card, relevance.schema_hash()) is card
    with pytest.raises(SchemaMismatchError, match="feature schema"):
        check_schema(card, recent.schema_hash())


def test_the_encoder_gives_each_entry_its_gap_to_the_next_older_one_shown():
    amounts = [20.0] * 40
    amounts[5] = 900.0
    store = MemoryFeatureStore(history_order="relevance")
    events = [_ev(i, amounts[i]) for i in range(40)]
    snaps = store.enrich(events)
    last = snaps[-1]
    assert last.history_times_ms[KEEP_RECENT] == events[5].event_time_ms  # the signal, out of time order
    batch = FieldIsolatedEncoder(FeatureSchema.default("relevance")).encode_arrays(events[-1:], snaps[-1:])
    gaps = dict(zip(last.history_times_ms, batch.history_numeric[0, :, 1]))
    shown = sorted(last.history_times_ms)
    for older, newer in zip(shown, shown[1:]):
        assert gaps[newer] == pytest.approx(math.log1p((newer - older) / 1000.0), rel=1e-6)
    # the same snapshots through the recent encoder would read consecutive entries instead
    assert dataclasses.replace(FeatureSchema.default(), history_order="relevance") == FeatureSchema.default("relevance")


def test_the_setting_serves_a_relevance_model_and_refuses_it_otherwise(tmp_path, monkeypatch):
    """The Python API (the pipeline every interface shares) serves a model trained on
    relevance windows when the deployment's setting says so, and refuses it otherwise."""
    from engine import load_model
    from engine.model import save_model_dir
    from engine.settings import Settings

    relevance = Settings(features={"history_order": "relevance"})
    model, card = fresh_model(InputSpec.from_schema(FeatureSchema.default("relevance")), "rel-1")
    model_dir = save_model_dir(model, card, tmp_path / "rel-1")
    served = load_model(model_dir, settings=relevance)
    assert served.pipeline.components.store.history_order == "relevance"
    amounts = [20.0] * 30 + [900.0]
    verdicts = served.decide([_ev(i, amounts[i]) for i in range(31)])
    assert len(verdicts) == 31
    with pytest.raises(SchemaMismatchError):
        load_model(model_dir, settings=Settings())
