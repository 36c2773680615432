"""Backtest: train on a window, then replay the following days in event time with labels
revealed only ``delay_days`` after each transaction, through the stream's own code.

The handbook's protocol (Le Borgne et al., 2022, ch. 3-5), step by step:

1. Replay every event from ``history_days`` before the training window up to its end
   through ``MemoryFeatureStore.enrich`` and ``FieldIsolatedEncoder.encode``, in event
   order, revealing each outcome (good or bad) ``delay_days`` after its transaction
   through ``record_outcomes``. The training window's encoded events are kept.
2. Train on them (``engine.offline.train.fit``, or LightGBM on the same features).
3. Keep replaying, delay period then test days, micro-batch by micro-batch, now also
   through ``Inference`` (the infer stage); the same store keeps learning outcomes as
   they arrive. Every test-window event is scored.
4. Metrics on the test window with the book's definitions: cards already known to be
   compromised (a fraud of theirs in the training window, or labelled by the day's start)
   are removed from each day (``assessed_mask``, computed over the whole replayed frame);
   AUC ROC, AP and card precision@100 (``engine.offline.quality``).

Features never see a label early: ``record_outcomes`` only receives arrivals whose
arrival time is before the micro-batch being enriched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from engine.features.memory import MemoryFeatureStore
from engine.features.store import LabelArrival
from engine.offline.backtest.cache import EncodedWindow, cache_key
from engine.offline.backtest.families import FITTERS, schema_for
from engine.offline.quality import quality_report
from engine.offline.simulate.frames import events_from_frame
from engine.records import DECISIONS, OutcomeKind, TransactionEvent
from engine.stages.encode import EncodedBatch, FeatureSchema, FieldIsolatedEncoder

if TYPE_CHECKING:
    from engine.offline.backtest.cache import EncodedWindow

DAY_MS = 86_400_000
HANDBOOK_COLUMNS = ("TRANSACTION_ID", "TX_DATETIME", "CUSTOMER_ID", "TERMINAL_ID", "TX_AMOUNT", "TX_FRAUD")


def read_handbook_frame(path: str | Path, start_ms: int | None = None, end_ms: int | None = None) -> pd.DataFrame:
    """The handbook's raw Parquet layout -> an event frame (``simulate_frames`` layout) with
    ``tx_fraud`` as ground truth. The handbook has no channel, country or merchant data:
    those get constant values, so the model sees only what the book's models see."""
    raw = pd.read_parquet(path, columns=list(HANDBOOK_COLUMNS) + ["TX_FRAUD_SCENARIO"])
    t = pd.to_datetime(raw["TX_DATETIME"])
    t = t.dt.tz_localize("UTC") if t.dt.tz is None else t.dt.tz_convert("UTC")
    # as_unit: a file written by pandas >= 3 (or Spark) may hold us or ms, not ns.
    times = t.dt.as_unit("ms").astype("int64").to_numpy()
    keep = np.ones(len(raw), dtype=bool)
    if start_ms is not None:
        keep &= times >= start_ms
    if end_ms is not None:
        keep &= times < end_ms
    raw, times = raw[keep], times[keep]
    customer = raw["CUSTOMER_ID"].astype(str).to_numpy()
    frame = pd.DataFrame({
        "event_id": raw["TRANSACTION_ID"].astype(str).to_numpy(), "event_time_ms": times,
        "customer_id": customer, "account_id": customer,
        "terminal_id": raw["TERMINAL_ID"].astype(str).to_numpy(), "merchant_category": "0000",
        "amount": raw["TX_AMOUNT"].astype(float).to_numpy(), "currency": "EUR",
        "channel": "card_present", "country": "BE",
        "tx_fraud": raw["TX_FRAUD"].astype("int8").to_numpy(),
        "tx_fraud_scenario": raw["TX_FRAUD_SCENARIO"].astype("int8").to_numpy(),
    })
    return frame.sort_values("event_time_ms", kind="stable").reset_index(drop=True)


def read_simulated(path: str | Path) -> pd.DataFrame:
    """An event frame written by ``tollgate simulate`` (Parquet or CSV, with ``tx_fraud``)."""
    p = Path(path)
    frame = pd.read_parquet(p) if p.suffix == ".parquet" else pd.read_csv(p)
    if "tx_fraud" not in frame.columns:
        raise ValueError(f"{p} has no tx_fraud column: a backtest needs ground truth")
    return frame.sort_values("event_time_ms", kind="stable").reset_index(drop=True)


@dataclass(slots=True)
class Window:
    """[train_start, train_end) train, [train_end, test_start) delay, [test_start, test_end) test."""

    train_start_ms: int
    train_days: int
    delay_days: int
    test_days: int
    history_days: int = 30

    @classmethod
    def from_date(cls, train_start: str, train_days: int = 7, delay_days: int = 7, test_days: int = 7,
                  history_days: int = 30) -> Window:
        t = datetime.fromisoformat(train_start).replace(tzinfo=UTC)
        return cls(int(t.timestamp() * 1000), train_days, delay_days, test_days, history_days)

    @property
    def history_start_ms(self) -> int:
        return self.train_start_ms - self.history_days * DAY_MS

    @property
    def train_end_ms(self) -> int:
        return self.train_start_ms + self.train_days * DAY_MS

    @property
    def test_start_ms(self) -> int:
        return self.train_end_ms + self.delay_days * DAY_MS

    @property
    def test_end_ms(self) -> int:
        return self.test_start_ms + self.test_days * DAY_MS

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` from the history start to the test end, renumbered: the
        frame every replay of this window indexes (``EncodedWindow.train_rows`` and
        ``test_rows``)."""
        return frame[(frame["event_time_ms"] >= self.history_start_ms)
                     & (frame["event_time_ms"] < self.test_end_ms)].reset_index(drop=True)


def delayed_truth_arrivals(frame: pd.DataFrame, delay_ms: int) -> pd.DataFrame:
    """Every event's ground truth (good or bad) arriving ``delay_ms`` after it (the handbook
    protocol: all labels of a day are known a fixed delay later)."""
    return pd.DataFrame({"event_id": frame["event_id"].to_numpy(), "terminal_id": frame["terminal_id"].to_numpy(),
                         "event_time_ms": frame["event_time_ms"].to_numpy(),
                         "arrival_time_ms": frame["event_time_ms"].to_numpy() + delay_ms,
                         "is_bad": frame["tx_fraud"].to_numpy().astype(bool)})


def outcome_arrivals(frame: pd.DataFrame, outcomes: pd.DataFrame) -> pd.DataFrame:
    """Real outcomes (``tollgate simulate`` writes them) joined to their events by event id;
    each arrives at its ``outcome_time_ms``. A later outcome for an event replaces an earlier one."""
    joined = outcomes.merge(frame[["event_id", "terminal_id", "event_time_ms"]], on="event_id",
                            how="inner", suffixes=("_outcome", ""))
    bad = joined["kind"].map(lambda k: OutcomeKind(k).is_bad)
    return pd.DataFrame({"event_id": joined["event_id"].to_numpy(), "terminal_id": joined["terminal_id"].to_numpy(),
                         "event_time_ms": joined["event_time_ms"].to_numpy(),
                         "arrival_time_ms": joined["outcome_time_ms"].to_numpy().astype(np.int64),
                         "is_bad": bad.to_numpy().astype(bool)})


@dataclass
class Replay:
    """Drives enrich -> encode (-> infer) over a time-ordered event frame, revealing each
    label (``arrivals``: event_id, terminal_id, event_time_ms, arrival_time_ms, is_bad)
    once stream time passes its arrival. One instance = one pass of one stream."""

    frame: pd.DataFrame
    arrivals: pd.DataFrame
    encoder: Any
    store: MemoryFeatureStore = field(default_factory=lambda: MemoryFeatureStore(snapshot_retention_ms=DAY_MS))
    batch_size: int = 512
    _pos: int = 0
    _next_label: int = 0

    def __post_init__(self) -> None:
        self.arrivals = self.arrivals.sort_values("arrival_time_ms", kind="stable").reset_index(drop=True)
        self._arrival_times = self.arrivals["arrival_time_ms"].to_numpy()

    def run_until(self, end_ms: int, on_batch: Callable[[np.ndarray, list[TransactionEvent], Any], None] | None,
                  desc: str = "replay",
                  on_context: Callable[[np.ndarray, list[TransactionEvent], list[Any]], None] | None = None) -> None:
        """Process events with time < ``end_ms``; ``on_batch(row_idx, events, encoded)``, and
        ``on_context(row_idx, events, snapshots)`` with the enrich stage's context snapshots
        (what hard rules read as ``ctx.*``)."""
        times = self.frame["event_time_ms"].to_numpy()
        stop = int(np.searchsorted(times, end_ms, side="left"))
        with tqdm(total=stop - self._pos, desc=desc, unit="ev", mininterval=5.0, unit_scale=True) as bar:
            while self._pos < stop:
                hi = min(stop, self._pos + self.batch_size)
                rows = np.arange(self._pos, hi)
                self._reveal(int(times[self._pos]))
                events = events_from_frame(self.frame.iloc[self._pos:hi])
                snapshots = self.store.enrich(events)
                encoded = self.encoder.encode(events, snapshots)
                if on_context is not None:
                    on_context(rows, events, snapshots)
                if on_batch is not None:
                    on_batch(rows, events, encoded)
                bar.update(hi - self._pos)
                self._pos = hi

    def _reveal(self, now_ms: int) -> None:
        """Record every label that arrived at or before ``now_ms`` (and no other)."""
        upto = int(np.searchsorted(self._arrival_times, now_ms, side="right"))
        if upto > self._next_label:
            chunk = self.arrivals.iloc[self._next_label:upto]
            self.store.record_outcomes([
                LabelArrival(str(e), str(t), int(et), int(at), bool(b)) for e, t, et, at, b in zip(
                    chunk["event_id"], chunk["terminal_id"], chunk["event_time_ms"],
                    chunk["arrival_time_ms"], chunk["is_bad"])])
            self._next_label = upto


def assessed_report(assessed: pd.DataFrame, risk: Any) -> dict[str, float]:
    """``quality_report`` of assessed rows (columns ``tx_fraud``, ``event_time_ms``,
    ``customer_id``) and their risk, with the day and card that card precision@100 counts."""
    return quality_report(assessed["tx_fraud"].to_numpy(), np.asarray(risk),
                          days=(assessed["event_time_ms"] // DAY_MS).to_numpy(), cards=assessed["customer_id"].to_numpy())


def assessed_mask(frame: pd.DataFrame, window: Window) -> np.ndarray:
    """True for the rows of ``frame`` the book assesses: in the test window, and of a card
    not yet known to be compromised on the row's day (the book's ``get_train_delay_test_set``).

    Known on test day d = every card with a fraud in the training window, plus every card
    with a fraud on a day whose label has arrived by day d's start (the first d delay days
    when the delay is a week). The frauds are read from ``frame`` itself, so it must hold
    the training and delay windows: the whole file or the backtest's cut, never only the
    test rows (with those alone no card is ever known and none is removed).
    """
    t = frame["event_time_ms"].to_numpy()
    if not (t < window.train_end_ms).any():
        raise ValueError("assessed_mask needs the training window's rows: known-compromised cards come "
                         "from the training and delay days, not from the test rows")
    fraud = frame["tx_fraud"].to_numpy() == 1
    customer = pd.factorize(frame["customer_id"])[0]  # integer codes: isin on ints, not strings
    out = np.zeros(len(frame), dtype=bool)
    for day in range(window.test_days):
        day_start = window.test_start_ms + day * DAY_MS
        known_until = day_start - window.delay_days * DAY_MS
        known = np.unique(customer[fraud & (t >= window.train_start_ms) & (t < known_until)])
        in_day = (t >= day_start) & (t < day_start + DAY_MS)
        out |= in_day & ~np.isin(customer, known)
    return out


@dataclass(slots=True)
class BacktestResult:
    scores: pd.DataFrame
    metrics: dict[str, Any]


def encode_window(frame: pd.DataFrame, window: Window, batch_size: int = 512,
                  schema: FeatureSchema | None = None) -> EncodedWindow:
    """Steps 1 and 3's replay: every event from the history start to the test end through
    enrich and encode, in event order with delayed labels; keeps the training window's
    encoded events and the test window's micro-batches. ``frame`` is already cut to
    [history start, test end). ``schema``: the feature schema (default
    ``FeatureSchema.default()``); the store fills history windows in its order."""
    schema = schema or FeatureSchema.default()
    times = frame["event_time_ms"].to_numpy()
    store = MemoryFeatureStore(snapshot_retention_ms=DAY_MS, history_order=schema.history_order)
    replay = Replay(frame, delayed_truth_arrivals(frame, window.delay_days * DAY_MS), FieldIsolatedEncoder(schema),
                    store=store, batch_size=batch_size)
    rows: dict[str, list[np.ndarray]] = {"train": [], "test": []}
    batches: dict[str, list[Any]] = {"train": [], "test": []}

    def keep(part: str, start_ms: int) -> Callable[[np.ndarray, list[TransactionEvent], Any], None]:
        def on_batch(r: np.ndarray, events: list[TransactionEvent], encoded: Any) -> None:
            sel = times[r] >= start_ms
            if sel.any():
                rows[part].append(r[sel])
                batches[part].append(encoded[torch.from_numpy(sel)])
        return on_batch

    replay.run_until(window.train_end_ms, keep("train", window.train_start_ms), desc="replay history+train")
    replay.run_until(window.test_end_ms, keep("test", window.test_start_ms), desc="replay delay+test")
    return EncodedWindow(np.concatenate(rows["train"]), EncodedBatch.concat(batches["train"]),
                         np.concatenate(rows["test"]), batches["test"])


def cached_encode_window(frame: pd.DataFrame, window: Window, cache_dir: str | Path | None,
                         batch_size: int = 512, schema: FeatureSchema | None = None) -> EncodedWindow:
    """``encode_window``, reusing ``cache_dir/<key>.safetensors`` when the same events,
    window and feature schema were replayed before (``engine.offline.backtest.cache``)."""
    schema = schema or FeatureSchema.default()
    if cache_dir is None:
        return encode_window(frame, window, batch_size, schema)
    path = Path(cache_dir) / f"window-{cache_key(frame, window, batch_size, schema.schema_hash())}.safetensors"
    if path.is_file():
        return EncodedWindow.load(path)
    encoded = encode_window(frame, window, batch_size, schema)
    encoded.save(path)
    return encoded


def run_backtest(frame: pd.DataFrame, window: Window, models: Sequence[str] = ("transformer",),
                 seed: int = 0, epochs: int = 14, model_overrides: dict[str, Any] | None = None,
                 int8: bool = False, report_dir: str | Path | None = None, models_dir: str | Path | None = None,
                 threads: int = 1, cache_dir: str | Path | None = None) -> dict[str, BacktestResult]:
    """The whole protocol on one window for one or more model families, sharing one
    replay: every family is trained on the same encoded window and scores the same
    micro-batches. ``int8`` adds a ``transformer-int8`` family (the same trained model,
    quantised) so the accuracy cost of quantisation is measured side by side. ``epochs``
    defaults to 14, the configuration the published handbook figures were measured with.

    The model is fixed once trained, so replaying the test days first and scoring their
    micro-batches afterwards gives exactly the scores of scoring them during the replay;
    ``cache_dir`` keeps the replayed tensors for the next run on the same window."""
    torch.set_num_threads(threads)
    frame = window.rows(frame)
    encoded = cached_encode_window(frame, window, cache_dir, schema=schema_for(model_overrides or {}))
    idx = encoded.train_rows
    scorers: dict[str, Any] = {}
    for name in models:
        out_dir = None if report_dir is None else Path(report_dir) / name
        scorers.update(FITTERS[name](frame.iloc[idx], [encoded.train], seed=seed, epochs=epochs,
                                     overrides=(model_overrides or {}) if name == "transformer" else {},
                                     int8=int8, report_dir=out_dir, models_dir=models_dir, window=window))
    test = frame.iloc[encoded.test_rows].reset_index(drop=True)
    scored: dict[str, list[pd.DataFrame]] = {name: [] for name in scorers}
    start = 0
    for batch in encoded.test_batches:
        ids = test["event_id"].to_numpy()[start:start + len(batch)]
        start += len(batch)
        for name, scorer in scorers.items():
            probs, risk = scorer(batch)
            scored[name].append(pd.DataFrame({
                "transaction_id": ids, "risk_score": risk,
                "verdict": [DECISIONS[i].value for i in probs.argmax(1)], "confidence": probs.max(1)}))
    assessed = assessed_mask(frame, window)[encoded.test_rows]
    results: dict[str, BacktestResult] = {}
    for name, parts in scored.items():
        scores = pd.concat(parts, ignore_index=True)
        scores["event_time_ms"] = test["event_time_ms"].to_numpy()
        scores["customer_id"] = test["customer_id"].to_numpy()
        scores["assessed"] = assessed
        scores["tx_fraud"] = test["tx_fraud"].to_numpy()
        a = scores[scores["assessed"]]
        metrics = assessed_report(a, a["risk_score"].to_numpy())
        metrics.update({
            "model": name, "seed": seed, "n_train": int(len(idx)), "n_scored": int(len(scores)),
            "train_start": datetime.fromtimestamp(window.train_start_ms / 1000, UTC).date().isoformat(),
            "train_days": window.train_days, "delay_days": window.delay_days, "test_days": window.test_days,
            "verdict_share": scores["verdict"].value_counts(normalize=True).to_dict()})
        results[name] = BacktestResult(scores, metrics)
    return results
