"""A seeded card-payment simulator: events day by day, outcomes that arrive days later.

The core follows the simulator of the open *Reproducible Machine Learning for Credit
Card Fraud Detection — Practical Handbook* (Le Borgne et al., 2022), so statistics
measured on its published data carry over:

* customers on a 100×100 grid, mean spend U[5, 100] with σ = mean/2, U[0, 4]
  transactions per day; terminals on the same grid, each customer using the
  terminals within ``radius`` (5) of its home;
* per day and customer a Poisson number of transactions, time of day N(noon, 20 000 s)
  (kept only inside the day), amount N(mean, σ) with negative draws redrawn
  U[0, 2·mean], at a terminal drawn uniformly from the reachable ones;
* fraud scenario 1: amount > 220; scenario 2: two terminals a day are compromised
  for 28 days (all their transactions are fraud); scenario 3: three cards a day leak
  for 14 days, a third of their transactions are fraud with the amount ×5.

On top of that it adds what a real stream carries: the terminal's kind (POS, online
merchant, transfer payee) decides the channel; merchant category, country and
currency per terminal; a device and IP per customer for card-not-present channels
(a leaked card is mostly used from a new device and often a foreign IP; a cloned
card at a POS shows up as magstripe); multilingual memos and merchant descriptors,
a labelled few of which try a prompt injection (``engine.offline.simulate.text``).

Outcomes: reported fraud becomes a chargeback or a fraud-desk confirmation 1–30
days later (mean ``outcome_delay_mean_days``); a sample of genuine transactions is
confirmed legitimate; a sample goes to manual review and gets a review result
within two days (analysts miss a few frauds, which a chargeback later corrects).

Memory stays bounded: ``Simulator.days()`` yields one ``SimDay`` at a time, holding
that day's events and the outcomes *arriving* that day, both in time order. Ground
truth (``tx_fraud``, ``tx_fraud_scenario``, injection labels) lives in extra columns
of the day's frame, never in a ``TransactionEvent``.

>>> days = list(Simulator(SimConfig(customers=200, terminals=400, days=2, seed=1)).days())
>>> len(days), days[0].events.event_time_ms.is_monotonic_increasing
(3, True)
>>> {"tx_fraud", "tx_fraud_scenario"} <= set(days[0].events.columns)
True
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

import numpy as np
import pandas as pd

from engine.offline.simulate.frames import (
    EVENT_FRAME_DTYPES,
    OUTCOME_COLUMNS,
    OUTCOME_TIME_COLUMNS,
    events_from_frame,
    object_frame,
    outcomes_from_frame,
)
from engine.offline.simulate.text import descriptor_texts, injection_texts, memo_texts
from engine.offline.simulate.world import World, build_world, mix64
from engine.records import Outcome, TransactionEvent

DAY_MS = 86_400_000


@dataclass(frozen=True, slots=True)
class SimConfig:
    """Everything that shapes a simulated stream. The defaults are the handbook's scale
    and scenarios, so statistics measured on its published data apply; the delay and
    rate knobs exist because backtests of delayed-label learning need to vary them."""

    customers: int = 5_000
    terminals: int = 10_000
    days: int = 7
    seed: int = 0
    start_date: date = date(2018, 4, 1)
    radius: float = 5.0
    # Fraud scenarios 2 and 3 (the handbook's values).
    compromised_terminals_per_day: int = 2
    terminal_compromise_days: int = 28
    compromised_cards_per_day: int = 3
    card_compromise_days: int = 14
    # Delayed outcomes.
    outcome_delay_mean_days: float = 7.0
    outcome_delay_min_days: float = 1.0
    outcome_delay_max_days: float = 30.0
    fraud_report_rate: float = 0.97
    legit_confirm_rate: float = 0.01
    review_rate: float = 0.004
    review_miss_rate: float = 0.1
    # User text.
    injection_rate: float = 0.01
    fraud_injection_rate: float = 0.1
    #: After the last day, also emit outcomes that arrive later (one final ``SimDay``).
    drain_outcomes: bool = True

    def __post_init__(self) -> None:
        checks = {
            "customers": self.customers >= 1, "terminals": self.terminals >= 1, "days": self.days >= 0,
            "radius": self.radius > 0,
            "outcome_delay_*_days": 0 < self.outcome_delay_min_days <= self.outcome_delay_mean_days
            <= self.outcome_delay_max_days,
        }
        for name in ("fraud_report_rate", "legit_confirm_rate", "review_rate", "review_miss_rate",
                     "injection_rate", "fraud_injection_rate"):
            checks[name] = 0.0 <= getattr(self, name) <= 1.0
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"SimConfig: invalid {', '.join(bad)}")

    @property
    def start_ms(self) -> int:
        return int(datetime(self.start_date.year, self.start_date.month, self.start_date.day,
                            tzinfo=UTC).timestamp() * 1000)


@dataclass(slots=True)
class SimDay:
    """One simulated day: its events (with ground-truth columns) and the outcomes that
    arrive during it. The final drain day (``day == config.days``) has no events."""

    day: int
    events: pd.DataFrame
    outcomes: pd.DataFrame

    def records(self) -> Iterator[TransactionEvent | Outcome]:
        """Events and outcomes merged in time order (an outcome first on a tie)."""
        events = ((e.event_time_ms, 1, e) for e in events_from_frame(self.events))
        outcomes = ((o.outcome_time_ms, 0, o) for o in outcomes_from_frame(self.outcomes))
        for _, _, record in heapq.merge(outcomes, events, key=lambda item: (item[0], item[1])):
            yield record


@dataclass(slots=True)
class CoreDay:
    """The handbook part of one day, as arrays in time order (row i is one transaction)."""

    day: int
    customer: np.ndarray
    terminal: np.ndarray
    time_ms: np.ndarray
    amount: np.ndarray
    scenario: np.ndarray


class Simulator:
    """Generates ``SimDay``s. Same config (seed included) → same stream, byte for byte.

    Three independent random streams (spawned from the seed) drive the handbook core,
    the extras (channels, devices, text) and the outcomes, so the core transactions —
    and therefore the fraud statistics — are identical whether or not the extras are
    generated (``handbook_days`` skips them and is several times faster). Every call
    of ``days``/``handbook_days``/``stream`` starts the simulation afresh.
    """

    def __init__(self, config: SimConfig):
        self.config = config
        world_seq, self._core_seq, self._extra_seq, self._outcome_seq, text_seq = (
            np.random.SeedSequence(config.seed).spawn(5))
        self.world: World = build_world(config, np.random.default_rng(world_seq))
        text_rng = np.random.default_rng(text_seq)
        descriptors = descriptor_texts(text_rng, self.world.term_kind, self.world.term_country)
        self._descriptor_injection = np.full(config.terminals, None, dtype=object)
        # A few merchants (or payees named by users) put an injection in their descriptor.
        bad = np.flatnonzero(text_rng.random(config.terminals) < 0.002)
        texts, kinds = injection_texts(text_rng, bad.size)
        for i, text, kind in zip(bad.tolist(), texts, kinds):
            descriptors[i] = text
            self._descriptor_injection[i] = kind
        self._descriptors = np.array(descriptors, dtype=object)

    def _reset(self) -> None:
        cfg = self.config
        self.rng = np.random.default_rng(self._core_seq)
        self.extra_rng = np.random.default_rng(self._extra_seq)
        self.outcome_rng = np.random.default_rng(self._outcome_seq)
        self._terminal_until = np.full(cfg.terminals, -1, dtype=np.int64)
        self._card_until = np.full(cfg.customers, -1, dtype=np.int64)
        self._device_seq = np.zeros(cfg.customers, dtype=np.int64)
        self._pending: list[pd.DataFrame] = []

    def days(self) -> Iterator[SimDay]:
        self._reset()
        for day in range(self.config.days):
            events = self._decorate(self._core(day))
            self._pending.append(self._outcomes(events))
            yield SimDay(day, events, self._arrivals(until_ms=self.config.start_ms + (day + 1) * DAY_MS))
        if self.config.drain_outcomes:
            yield SimDay(self.config.days, _empty_events(), self._arrivals(until_ms=None))

    def handbook_days(self) -> Iterator[pd.DataFrame]:
        """The core transactions only, one frame a day in the handbook's raw layout
        (``TRANSACTION_ID, TX_DATETIME, CUSTOMER_ID, TERMINAL_ID, TX_AMOUNT, TX_TIME_SECONDS,
        TX_TIME_DAYS, TX_FRAUD, TX_FRAUD_SCENARIO``), so its analyses apply unchanged."""
        self._reset()
        start = np.datetime64(self.config.start_date.isoformat(), "ms")
        first_id = 0
        for day in range(self.config.days):
            core = self._core(day)
            n = core.customer.size
            offset_ms = core.time_ms - self.config.start_ms
            yield pd.DataFrame({
                "TRANSACTION_ID": np.arange(first_id, first_id + n, dtype=np.int64),
                "TX_DATETIME": (start + offset_ms.astype("timedelta64[ms]")),
                "CUSTOMER_ID": core.customer, "TERMINAL_ID": core.terminal, "TX_AMOUNT": core.amount,
                "TX_TIME_SECONDS": offset_ms // 1000, "TX_TIME_DAYS": np.full(n, day, dtype=np.int64),
                "TX_FRAUD": (core.scenario > 0).astype(np.int64),
                "TX_FRAUD_SCENARIO": core.scenario.astype(np.int64),
            })
            first_id += n

    def stream(self) -> Iterator[TransactionEvent | Outcome]:
        """Every event and outcome, in time order, as typed records."""
        for sim_day in self.days():
            yield from sim_day.records()

    # -- one day of transactions --------------------------------------------------------
    def _core(self, day: int) -> CoreDay:
        cfg, rng, w = self.config, self.rng, self.world
        counts = rng.poisson(w.mean_tx_per_day)
        counts[w.reach_count == 0] = 0
        cust = np.repeat(np.arange(cfg.customers), counts)
        secs = rng.normal(43_200, 20_000, cust.size).astype(np.int64)
        inside = (secs > 0) & (secs < 86_400)
        cust, secs = cust[inside], secs[inside]
        n = cust.size
        amount = rng.normal(w.mean_amount[cust], w.std_amount[cust])
        negative = amount < 0
        amount[negative] = rng.uniform(0, 2 * w.mean_amount[cust[negative]])
        amount = np.round(amount, 2)
        pick = (rng.random(n) * w.reach_count[cust]).astype(np.int64)
        term = w.reach_flat[w.reach_offset[cust] + pick]
        order = np.argsort(secs, kind="stable")
        cust, secs, amount, term = cust[order], secs[order], amount[order], term[order]
        time_ms = cfg.start_ms + day * DAY_MS + secs * 1000 + rng.integers(0, 1000, n)
        time_ms = np.maximum.accumulate(time_ms)  # keep the day in time order after adding ms

        # Fraud, in the handbook's order: 1, then 2 overrides, then 3 overrides.
        new_terms = rng.choice(cfg.terminals, min(cfg.compromised_terminals_per_day, cfg.terminals), replace=False)
        self._terminal_until[new_terms] = np.maximum(self._terminal_until[new_terms],
                                                     day + cfg.terminal_compromise_days)
        new_cards = rng.choice(cfg.customers, min(cfg.compromised_cards_per_day, cfg.customers), replace=False)
        self._card_until[new_cards] = np.maximum(self._card_until[new_cards], day + cfg.card_compromise_days)
        scenario = np.where(amount > 220, 1, 0).astype(np.int8)
        scenario[self._terminal_until[term] > day] = 2
        leaked = (self._card_until[cust] > day) & (rng.random(n) < 1 / 3)
        scenario[leaked] = 3
        amount[leaked] = np.round(amount[leaked] * 5, 2)
        return CoreDay(day, cust, term, time_ms, amount, scenario)

    def _decorate(self, core: CoreDay) -> pd.DataFrame:
        """Channel, device, IP, country, text: what the handbook does not model."""
        cfg, rng, w = self.config, self.extra_rng, self.world
        day, cust, term, time_ms, amount, scenario = (core.day, core.customer, core.terminal, core.time_ms,
                                                      core.amount, core.scenario)
        n = cust.size
        leaked = scenario == 3
        kind = w.term_kind[term]
        channel = np.where(kind == "pos", "card_present", np.where(kind == "payee", "transfer", "ecommerce"))
        in_app = (kind == "online") & w.app_user[cust] & (rng.random(n) < 0.7)
        channel[in_app] = "mobile_app"
        present = channel == "card_present"

        entry = np.where(present, np.where(rng.random(n) < 0.62, "contactless", "chip"), "")
        entry[present & (rng.random(n) < 0.03)] = "magstripe"
        entry[present & leaked & (rng.random(n) < 0.6)] = "magstripe"  # cloned card
        entry[channel == "ecommerce"] = "online"
        entry[channel == "mobile_app"] = "in_app"
        entry[channel == "transfer"] = "transfer"

        # Devices: customers occasionally switch phones for good; a leaked card is
        # mostly used from a device the customer never had.
        self._device_seq[rng.random(cfg.customers) < 0.002] += 1
        device = mix64(cust.astype(np.uint64) * np.uint64(1_000_003) + self._device_seq[cust].astype(np.uint64)
                       + np.uint64(cfg.seed) * np.uint64(0x9E3779B9))
        foreign_device = (leaked & (rng.random(n) < 0.8)) | (rng.random(n) < 0.01)
        device[foreign_device] = rng.integers(0, 2**63, int(foreign_device.sum()), dtype=np.int64).astype(np.uint64)
        device_ids = np.array([f"{d & 0xFFFFFFFFFFFF:012x}" for d in device.tolist()], dtype=object)
        device_ids[present] = None

        host = rng.integers(2, 255, n)
        foreign_ip = leaked & (rng.random(n) < 0.6)
        ips = np.array([f"{p}.{h}" for p, h in zip(w.ip_prefix[cust].tolist(), host.tolist())], dtype=object)
        if foreign_ip.any():
            octets = rng.integers(1, 255, (int(foreign_ip.sum()), 3))
            first = rng.choice([5, 41, 45, 102, 103, 185, 196, 197], int(foreign_ip.sum()))
            ips[foreign_ip] = [f"{a}.{b}.{c}.{d}" for a, (b, c, d) in zip(first.tolist(), octets.tolist())]
        ips[present] = None

        memo_p = np.select([channel == "transfer", channel == "mobile_app", channel == "ecommerce"],
                           [0.85, 0.15, 0.08], 0.0)
        has_memo = rng.random(n) < memo_p
        inj_p = np.where(leaked, cfg.fraud_injection_rate, cfg.injection_rate)
        injected = has_memo & (rng.random(n) < inj_p)
        memos = np.full(n, None, dtype=object)
        memo_kind = np.full(n, None, dtype=object)
        idx = np.flatnonzero(has_memo)
        if idx.size:
            month = (cfg.start_date + timedelta(days=day)).month - 1
            texts = memo_texts(rng, w.language[cust[idx]], np.zeros(idx.size, dtype=bool),
                               np.full(idx.size, month))
            memos[idx] = texts
            inj_idx = np.flatnonzero(injected)
            if inj_idx.size:
                texts, kinds = injection_texts(rng, inj_idx.size)
                memos[inj_idx] = texts
                memo_kind[inj_idx] = kinds

        ids = [f"sim{cfg.seed}-{day}-{i}" for i in range(n)]
        return object_frame({
            "event_id": ids,
            "event_time_ms": time_ms.astype(np.int64),
            "customer_id": w.customer_ids[cust],
            "account_id": w.account_ids[cust],
            "terminal_id": w.terminal_ids[term],
            "merchant_category": w.term_mcc[term],
            "amount": amount.astype(np.float64),
            "currency": w.term_currency[term],
            "channel": channel.astype(object),
            "country": w.term_country[term],
            "device_id": device_ids,
            "ip": ips,
            "memo": memos,
            "merchant_descriptor": self._descriptors[term],
            "attr_entry_mode": entry.astype(object),
            "tx_fraud": (scenario > 0).astype(np.int8),
            "tx_fraud_scenario": scenario,
            "memo_injection": memo_kind,
            "descriptor_injection": self._descriptor_injection[term],
        })

    # -- delayed outcomes ---------------------------------------------------------------
    def _outcomes(self, events: pd.DataFrame) -> pd.DataFrame:
        cfg, rng = self.config, self.outcome_rng
        n = len(events)
        fraud = events["tx_fraud"].to_numpy() == 1
        amount = events["amount"].to_numpy()
        t = events["event_time_ms"].to_numpy()
        reviewed = rng.random(n) < cfg.review_rate + 0.1 * (amount > 200)
        review_at = t + (rng.uniform(0.05, 2.0, n) * DAY_MS).astype(np.int64)
        missed = rng.random(n) < cfg.review_miss_rate
        review_kind = np.where(fraud & ~missed, "review_rejected", "review_approved")
        mean_extra = max(cfg.outcome_delay_mean_days - cfg.outcome_delay_min_days, 1e-6)
        delay = np.clip(cfg.outcome_delay_min_days + rng.gamma(2.0, mean_extra / 2.0, n),
                        cfg.outcome_delay_min_days, cfg.outcome_delay_max_days)
        fraud_at = np.maximum(t + (delay * DAY_MS).astype(np.int64), review_at + 3_600_000)
        # A fraud stopped at review never becomes a chargeback: the payment was declined.
        reported = fraud & (rng.random(n) < cfg.fraud_report_rate) & ~(reviewed & ~missed)
        fraud_kind = np.where(rng.random(n) < 0.6, "chargeback", "confirmed_fraud")
        confirmed = ~fraud & ~reviewed & (rng.random(n) < cfg.legit_confirm_rate)
        legit_at = t + (rng.uniform(1.0, 14.0, n) * DAY_MS).astype(np.int64)

        parts = []
        for mask, kind, at, source in (
            (reviewed, review_kind, review_at, "review_queue"),
            (reported, fraud_kind, fraud_at, None),
            (confirmed, "confirmed_legitimate", legit_at, "customer_confirmation"),
        ):
            if not mask.any():
                continue
            kinds = kind[mask] if isinstance(kind, np.ndarray) else np.full(int(mask.sum()), kind)
            sources = (np.where(kinds == "chargeback", "issuer_chargeback", "fraud_desk")
                       if source is None else np.full(kinds.size, source))
            parts.append(object_frame({
                "event_id": events["event_id"].to_numpy()[mask], "kind": kinds.astype(object),
                "outcome_time_ms": at[mask].astype(np.int64), "source": sources.astype(object),
                "customer_id": events["customer_id"].to_numpy()[mask],
                "terminal_id": events["terminal_id"].to_numpy()[mask],
                "event_time_ms": t[mask].astype(np.int64),
            }))
        return pd.concat(parts, ignore_index=True) if parts else _empty_outcomes()

    def _arrivals(self, until_ms: int | None) -> pd.DataFrame:
        pending = pd.concat(self._pending, ignore_index=True) if self._pending else _empty_outcomes()
        due = np.ones(len(pending), dtype=bool) if until_ms is None else \
            pending["outcome_time_ms"].to_numpy() < until_ms
        self._pending = [pending[~due]] if (~due).any() else []
        return pending[due].sort_values(["outcome_time_ms", "event_id"], kind="stable").reset_index(drop=True)


def _empty_outcomes() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype="int64" if c in OUTCOME_TIME_COLUMNS else object)
                         for c in OUTCOME_COLUMNS})


def _empty_events() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in EVENT_FRAME_DTYPES.items()})


def simulate(config: SimConfig) -> Iterator[TransactionEvent | Outcome]:
    """Shorthand for ``Simulator(config).stream()``."""
    return Simulator(config).stream()
