"""Simulator tests: handbook statistics, determinism, outcomes, extras, file output, CLI.

The statistics run the handbook core (``Simulator.handbook_days``) at the handbook's
own size (5,000 customers, 10,000 terminals) for nine weeks: ~1 s. The published
figures below were measured on the handbook file
(``../shared/data/handbook/transactions_2018-04-01_to_2018-08-07.parquet``) over the
same days 0–62; ``test_matches_the_handbook_file`` re-measures them from the file
itself when it is present.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from engine.offline.handbook import handbook_frame, handbook_outcomes, read_handbook_raw
from engine.offline.shared_data import handbook_file
from engine.offline.simulate.frames import TRUTH_COLUMNS, events_from_frame, outcomes_from_frame
from engine.offline.simulate.simulator import DAY_MS, SimConfig, Simulator
from engine.offline.simulate.sinks import outcome_path, read_event_file, read_outcome_file
from engine.records import Outcome, OutcomeKind, TransactionEvent

# ../shared/data beside the repository root (engine.offline.shared_data); None when truly absent.
HANDBOOK = handbook_file()
WEEKS = 9
# Measured on the handbook file, days 0..62 (9 weeks, ramp-up of scenarios 2 and 3 included).
PUBLISHED = {"tx_per_day": 9592.2, "fraud_rate": 0.00742, "amount_mean": 53.59,
             "scenario_share": {1: 0.070, 2: 0.591, 3: 0.339}}


def scenario_stats(raw: pd.DataFrame) -> dict:
    fraud = raw[raw.TX_FRAUD == 1]
    shares = fraud.TX_FRAUD_SCENARIO.value_counts(normalize=True)
    weekly = raw.groupby(raw.TX_TIME_DAYS // 7).TX_FRAUD.mean()
    return {"tx_per_day": len(raw) / raw.TX_TIME_DAYS.nunique(), "fraud_rate": raw.TX_FRAUD.mean(),
            "amount_mean": raw.TX_AMOUNT.mean(), "scenario_share": {s: shares.get(s, 0.0) for s in (1, 2, 3)},
            "weekly": weekly.to_numpy()}


@pytest.fixture(scope="module")
def nine_weeks() -> pd.DataFrame:
    return pd.concat(Simulator(SimConfig(days=7 * WEEKS, seed=0)).handbook_days(), ignore_index=True)


def assert_close_to(stats: dict, reference: dict) -> None:
    assert stats["tx_per_day"] == pytest.approx(reference["tx_per_day"], rel=0.03)
    assert stats["fraud_rate"] == pytest.approx(reference["fraud_rate"], rel=0.10)
    assert stats["amount_mean"] == pytest.approx(reference["amount_mean"], rel=0.04)
    for scenario in (1, 2, 3):
        assert stats["scenario_share"][scenario] == pytest.approx(reference["scenario_share"][scenario], abs=0.05)


def test_scenario_statistics_match_the_published_ones(nine_weeks):
    stats = scenario_stats(nine_weeks)
    assert_close_to(stats, PUBLISHED)
    weekly = stats["weekly"]
    # Scenarios 2 and 3 ramp up over their 28/14-day windows, then hold near 0.85-0.9 %.
    assert weekly[0] < 0.004 and np.all(np.diff(weekly[:4]) > 0)
    assert np.all((weekly[4:] > 0.0070) & (weekly[4:] < 0.0105)), weekly
    # Scenario 1 is exactly "amount > 220" (and nothing above 220 is genuine).
    genuine = nine_weeks[nine_weeks.TX_FRAUD == 0]
    assert genuine.TX_AMOUNT.max() <= 220
    assert (nine_weeks[nine_weeks.TX_FRAUD_SCENARIO == 1].TX_AMOUNT > 220).all()


@pytest.mark.skipif(HANDBOOK is None, reason="handbook parquet not available")
def test_matches_the_handbook_file(nine_weeks):
    reference = scenario_stats(read_handbook_raw(HANDBOOK, 0, 7 * WEEKS - 1))
    assert_close_to(scenario_stats(nine_weeks), reference)


def test_handbook_reader_gives_valid_events_and_delayed_labels():
    if HANDBOOK is None:
        pytest.skip("handbook parquet not available")
    frame = handbook_frame(read_handbook_raw(HANDBOOK, 10, 10))
    events = events_from_frame(frame)
    assert len(events) == len(frame) > 9000
    assert all(e.validate() is e for e in events)
    assert events[0].event_time_ms <= events[-1].event_time_ms  # the file is time ordered
    outcomes = outcomes_from_frame(handbook_outcomes(frame, delay_days=7))
    assert len(outcomes) == len(events)
    bad = {o.event_id for o in outcomes if o.kind.is_bad}
    assert bad == set(frame.event_id[frame.tx_fraud == 1])
    assert all(o.outcome_time_ms - e.event_time_ms == 7 * DAY_MS
               for o, e in zip(sorted(outcomes, key=lambda o: o.event_id), sorted(events, key=lambda e: e.event_id)))


SMALL = SimConfig(customers=500, terminals=1000, days=10, seed=7, compromised_terminals_per_day=1,
                  compromised_cards_per_day=2)


@pytest.fixture(scope="module")
def small_days():
    return list(Simulator(SMALL).days())


def test_same_seed_same_stream_and_core_independent_of_extras(small_days):
    again = list(Simulator(SMALL).days())
    for a, b in zip(small_days, again):
        pd.testing.assert_frame_equal(a.events, b.events)
        pd.testing.assert_frame_equal(a.outcomes, b.outcomes)
    other = next(Simulator(_with_seed(SMALL, 8)).days())
    assert not other.events["amount"].equals(small_days[0].events["amount"])
    core = list(Simulator(SMALL).handbook_days())
    for day, raw in zip(small_days, core):
        np.testing.assert_array_equal(day.events["amount"].to_numpy(), raw.TX_AMOUNT.to_numpy())
        np.testing.assert_array_equal(day.events["tx_fraud_scenario"].to_numpy(), raw.TX_FRAUD_SCENARIO.to_numpy())


def _with_seed(config: SimConfig, seed: int) -> SimConfig:
    from dataclasses import replace

    return replace(config, seed=seed)


def test_stream_is_in_time_order_and_truth_never_reaches_records():
    records = list(Simulator(_with_seed(SMALL, 3)).stream())
    times = [r.event_time_ms if isinstance(r, TransactionEvent) else r.outcome_time_ms for r in records]
    assert times == sorted(times)
    events = [r for r in records if isinstance(r, TransactionEvent)]
    assert all(e.validate() is e for e in events)
    assert not set(TRUTH_COLUMNS) & set(TransactionEvent.__dataclass_fields__)
    assert all(not set(TRUTH_COLUMNS) & set(e.attributes) for e in events)
    assert len({e.event_id for e in events}) == len(events)


def test_outcomes_arrive_later_and_match_the_truth(small_days):
    events = pd.concat([d.events for d in small_days], ignore_index=True).set_index("event_id")
    outcomes = pd.concat([d.outcomes for d in small_days], ignore_index=True)
    joined = outcomes.join(events[["event_time_ms", "tx_fraud"]], on="event_id", rsuffix="_of_event")
    assert joined["event_time_ms_of_event"].notna().all()
    # Each outcome names its transaction's time, as a chargeback notice carries its date.
    assert (joined["event_time_ms"] == joined["event_time_ms_of_event"]).all()
    delay_days = (joined.outcome_time_ms - joined.event_time_ms) / DAY_MS
    assert (delay_days > 0).all()
    for d in small_days[:-1]:  # each day's outcomes arrive that day, in order
        t = d.outcomes.outcome_time_ms
        assert t.is_monotonic_increasing and (t < SMALL.start_ms + (d.day + 1) * DAY_MS).all()
    chargebacks = joined[joined.kind.isin(["chargeback", "confirmed_fraud"])]
    assert (chargebacks.tx_fraud == 1).all()
    assert delay_days[chargebacks.index].between(1, 30).all()
    assert delay_days[chargebacks.index].mean() == pytest.approx(7, abs=1.5)
    legit = joined[joined.kind == "confirmed_legitimate"]
    assert (legit.tx_fraud == 0).all() and len(legit) > 0
    reviews = joined[joined.kind.str.startswith("review_")]
    assert len(reviews) > 0 and delay_days[reviews.index].max() <= 2.0
    reported = set(chargebacks.event_id) | set(joined.event_id[joined.kind == "review_rejected"])
    frauds = set(events.index[events.tx_fraud == 1])
    assert len(reported & frauds) >= 0.85 * len(frauds)


def test_extras_look_like_a_payment_stream(small_days):
    ev = pd.concat([d.events for d in small_days], ignore_index=True)
    channels = ev.channel.value_counts(normalize=True)
    assert set(channels.index) == {"card_present", "ecommerce", "mobile_app", "transfer"}
    assert channels["card_present"] > 0.6
    present = ev.channel == "card_present"
    assert ev.device_id[present].isna().all() and ev.device_id[~present].notna().all()
    assert ev.ip[~present].notna().all()
    transfers = ev[ev.channel == "transfer"]
    assert transfers.memo.notna().mean() > 0.7
    assert ev.country.nunique() >= 5 and set(ev.currency) >= {"EUR"}
    assert ev.merchant_category.nunique() >= 10 and ev.merchant_descriptor.notna().all()
    # Injections are rare, labelled, and only where there is a memo.
    labelled = ev.memo_injection.notna()
    assert 0 < labelled.sum() < 0.01 * len(ev)
    assert ev.memo[labelled].notna().all()
    # A leaked card is mostly used from a device its owner never used.
    cnp = ev[~present]
    seen = cnp[cnp.tx_fraud_scenario != 3].groupby("customer_id").device_id.agg(set)
    leaked = cnp[cnp.tx_fraud_scenario == 3]
    if len(leaked) >= 5:
        new = [d not in seen.get(c, set()) for c, d in zip(leaked.customer_id, leaked.device_id)]
        assert np.mean(new) > 0.5


def test_file_sinks_round_trip(tmp_path, small_days):
    from engine.offline.simulate.sinks import file_sink

    days = small_days[:3] + small_days[-1:]  # a few days and the final outcome drain
    for suffix in (".parquet", ".jsonl"):
        path = tmp_path / f"w{suffix}"
        sink = file_sink(path)
        for day in days:
            sink.write(day)
        sink.close()
        frame = read_event_file(path)
        expected = [e for d in days for e in events_from_frame(d.events)]
        assert events_from_frame(frame) == expected
        assert frame.tx_fraud.sum() == sum(int(d.events.tx_fraud.sum()) for d in days)
        assert set(TRUTH_COLUMNS) <= set(frame.columns)
        outcomes = outcomes_from_frame(read_outcome_file(outcome_path(path)))
        assert outcomes == [o for d in days for o in outcomes_from_frame(d.outcomes)]
    assert all(isinstance(o.kind, OutcomeKind) for o in outcomes)


def test_cli_writes_jsonl(tmp_path):
    import typer

    from engine.interfaces.commands import simulate as simulate_command

    app = typer.Typer()
    simulate_command.register(app)
    app.command("noop")(lambda: None)  # a second command keeps "simulate" a subcommand
    out = tmp_path / "sim.jsonl"
    result = CliRunner().invoke(app, ["simulate", "--days", "2", "--customers", "200", "--terminals", "400",
                                      "--seed", "5", "--start-date", "2024-03-01", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    assert TransactionEvent.from_dict(first).validate().event_time_ms >= 1_709_251_200_000
    assert f"{len(lines)} events" in result.output
    assert all(Outcome.from_dict(json.loads(x)) for x in (tmp_path / "sim.outcomes.jsonl").read_text().splitlines())
    bad = CliRunner().invoke(app, ["simulate", "--days", "1"])
    assert bad.exit_code == 2


def test_config_is_checked_and_tiny_worlds_work():
    with pytest.raises(ValueError, match="customers"):
        SimConfig(customers=0)
    with pytest.raises(ValueError, match="review_rate"):
        SimConfig(review_rate=1.5)
    days = list(Simulator(SimConfig(customers=2, terminals=2, days=3, seed=1, radius=200)).days())
    assert sum(len(d.events) for d in days) > 0


def test_cli_sets_the_confirmation_rate_and_the_outcome_delay(tmp_path):
    """``--confirm-rate`` decides how many good payments get confirmed, so the labels'
    bad share is no longer stuck near 80 %; ``--outcome-delay-days`` and
    ``--outcome-delay-min-days`` bound when fraud outcomes arrive."""
    import typer

    from engine.interfaces.commands import simulate as simulate_command

    app = typer.Typer()
    simulate_command.register(app)
    app.command("noop")(lambda: None)

    def kinds(*extra):
        out = tmp_path / f"sim{len(list(tmp_path.iterdir()))}.jsonl"
        result = CliRunner().invoke(app, ["simulate", "--days", "3", "--customers", "150", "--terminals", "300",
                                          "--seed", "2", "--out", str(out), "-q", *extra])
        assert result.exit_code == 0, result.output
        events = {e["event_id"]: e["event_time_ms"] for e in map(json.loads, out.read_text().splitlines())}
        outs = [json.loads(x) for x in out.with_suffix(".outcomes.jsonl").read_text().splitlines()]
        return events, outs

    _, none = kinds("--confirm-rate", "0")
    _, many = kinds("--confirm-rate", "0.5")
    assert sum(o["kind"] == "confirmed_legitimate" for o in none) == 0
    assert sum(o["kind"] == "confirmed_legitimate" for o in many) > 100
    events, quick = kinds("--outcome-delay-days", "1.5", "--outcome-delay-min-days", "1.0")
    fraud_delays = [o["outcome_time_ms"] - events[o["event_id"]] for o in quick
                    if o["source"] in ("issuer_chargeback", "fraud_desk")]
    assert fraud_delays and min(fraud_delays) >= 86_400_000 - 1


def test_an_outcome_frame_written_before_event_times_still_reads() -> None:
    old = pd.DataFrame({"event_id": ["e1"], "kind": ["chargeback"], "outcome_time_ms": [5], "source": ["issuer"],
                        "customer_id": ["c1"], "terminal_id": ["t1"]})
    (outcome,) = outcomes_from_frame(old)
    assert outcome.event_time_ms is None and outcome.terminal_id == "t1"
    (dated,) = outcomes_from_frame(old.assign(event_time_ms=[3]))
    assert dated.event_time_ms == 3
