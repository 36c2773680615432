"""Backtest protocol pieces and quality metrics (the handbook's definitions)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score

from engine.offline.backtest.run import DAY_MS, Replay, Window, assessed_mask, delayed_truth_arrivals
from engine.offline.quality import (
    auc_roc,
    average_precision,
    card_precision_at_k,
    card_precision_at_k_per_day,
    expected_calibration_error,
)
from engine.offline.shared_data import handbook_file

T0 = Window.from_date("2018-05-01").train_start_ms


def test_auc_and_ap_match_sklearn():
    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.1
    s = rng.random(500) + y * 0.3
    assert auc_roc(y, s) == pytest.approx(roc_auc_score(y, s))
    assert average_precision(y, s) == pytest.approx(average_precision_score(y, s))
    assert np.isnan(auc_roc(np.zeros(5), s[:5]))


def test_card_precision_at_k_by_hand():
    # day 0: cards a (fraud, 0.9), b (good, 0.8), c (fraud, 0.7); k=2 -> top a, b -> 1/2
    # day 1: a was detected on day 0 and is removed; d (fraud 0.6), c (fraud, 0.5), e (good 0.95)
    #        -> top e, d -> 1/2;  day 2: c (fraud, two tx: max score 0.4 counts), f (good, 0.3) -> c, f -> 1/2
    days = [0, 0, 0, 1, 1, 1, 1, 2, 2, 2]
    cards = ["a", "b", "c", "a", "d", "c", "e", "c", "c", "f"]
    labels = [1, 0, 1, 1, 1, 1, 0, 0, 1, 0]
    scores = [0.9, 0.8, 0.7, 0.99, 0.6, 0.5, 0.95, 0.4, 0.1, 0.3]
    assert card_precision_at_k_per_day(days, cards, labels, scores, k=2) == [0.5, 0.5, 0.5]
    # a card counts as compromised on a day if any of its transactions that day is bad
    assert card_precision_at_k([0, 0], ["x", "x"], [0, 1], [0.9, 0.1], k=1) == 1.0


def test_ece_is_zero_when_calibrated_and_large_when_not():
    p = np.array([0.2] * 10)
    y = np.array([1, 1] + [0] * 8)
    assert expected_calibration_error(p, y) == pytest.approx(0.0)
    assert expected_calibration_error(np.array([0.99] * 10), np.zeros(10)) > 0.9


def frame_of(rows):
    return pd.DataFrame(rows, columns=["event_id", "event_time_ms", "customer_id", "terminal_id", "tx_fraud"])


def test_known_compromised_cards_are_removed_per_day():
    w = Window(T0, train_days=1, delay_days=1, test_days=2)
    test_day0, test_day1 = w.test_start_ms, w.test_start_ms + DAY_MS
    frame = frame_of([
        ("1", T0 + 10, "a", "t", 1),              # fraud in training: known from test day 0
        ("2", w.train_end_ms + 10, "b", "t", 1),  # fraud in the delay day: known from test day 1
        ("3", test_day0 + 5, "a", "t", 0), ("4", test_day0 + 6, "b", "t", 0),
        ("5", test_day1 + 5, "a", "t", 0), ("6", test_day1 + 6, "b", "t", 0), ("7", test_day1 + 7, "c", "t", 0),
    ])
    # rows outside the test window are never assessed
    assert assessed_mask(frame, w).tolist() == [False, False, False, True, False, False, True]
    # the bug this guards: handed the test rows alone, no card is ever known
    with pytest.raises(ValueError, match="training window"):
        assessed_mask(frame.iloc[2:], w)


# The book's get_train_delay_test_set on ../shared/data/handbook, per fold named by its
# first training day: (assessed transactions, frauds). ../shared/data/README.md lists them.
BOOK_ASSESSED = {"2018-06-20": (57_182, 416), "2018-06-27": (57_800, 411), "2018-07-04": (57_931, 351),
                 "2018-07-11": (58_505, 374), "2018-07-18": (58_535, 415)}


@pytest.fixture(scope="module")
def handbook_events() -> pd.DataFrame:
    """The columns assessed_mask reads, straight from the file (read_handbook_frame's time
    conversion has its own test below; its string ids cost minutes here for nothing)."""
    path = handbook_file()
    if path is None:
        pytest.skip("the handbook file is absent (../shared/data/handbook/; see engine/offline/shared_data.py)")
    raw = pd.read_parquet(path, columns=["TX_DATETIME", "CUSTOMER_ID", "TX_FRAUD"])
    return pd.DataFrame({"event_time_ms": raw["TX_DATETIME"].to_numpy().astype("datetime64[ms]").astype(np.int64),
                         "customer_id": raw["CUSTOMER_ID"].to_numpy(), "tx_fraud": raw["TX_FRAUD"].to_numpy()})


@pytest.mark.parametrize("train_start", sorted(BOOK_ASSESSED))
def test_assessed_set_is_the_books_on_the_handbook_file(handbook_events, train_start):
    window = Window.from_date(train_start, 7, 7, 7, 30)
    t = handbook_events["event_time_ms"]
    frame = handbook_events[(t >= window.history_start_ms) & (t < window.test_end_ms)].reset_index(drop=True)
    keep = assessed_mask(frame, window)
    assert (int(keep.sum()), int(frame["tx_fraud"].to_numpy()[keep].sum())) == BOOK_ASSESSED[train_start]


class RecordingStore:
    """Logs the order of calls: ("enrich", first event time) and ("label", LabelArrival)."""

    def __init__(self):
        self.calls: list = []

    def enrich(self, events):
        self.calls.append(("enrich", events[0].event_time_ms))
        return [None] * len(events)

    def record_outcomes(self, labels):
        self.calls.extend(("label", label) for label in labels)


class NullEncoder:
    def encode(self, events, snapshots):
        return len(events)


def test_replay_reveals_each_label_only_after_its_delay():
    delay = 3 * 3_600_000
    times = T0 + np.arange(40) * 900_000  # one event every 15 minutes
    frame = pd.DataFrame({"event_id": [str(i) for i in range(40)], "event_time_ms": times,
                          "customer_id": "c", "account_id": "c", "terminal_id": "t", "merchant_category": "0",
                          "amount": 1.0, "currency": "EUR", "channel": "card_present", "country": "BE",
                          "tx_fraud": [i % 2 for i in range(40)]})
    store = RecordingStore()
    seen: list[int] = []
    replay = Replay(frame, delayed_truth_arrivals(frame, delay), NullEncoder(), store=store, batch_size=4)
    replay.run_until(int(times[-1]) + 1, lambda rows, events, enc: seen.append(enc), desc="t")
    assert sum(seen) == 40
    labels = [c[1] for c in store.calls if c[0] == "label"]
    assert len({lab.event_id for lab in labels}) == len(labels)  # each revealed once
    # the last batch starts with event 36 (9 h): labels arriving by then are those of
    # events up to 6 h, i.e. 0..24; later arrivals are beyond the replayed stream
    assert sorted(int(lab.event_id) for lab in labels) == list(range(25))
    last_enrich = None
    for kind, value in store.calls:
        if kind == "enrich":
            last_enrich = value
            continue
        assert value.arrival_time_ms == value.event_time_ms + delay
        # never before its arrival: the batch it was revealed for starts at or after it,
        # and the batch enriched before the reveal started before it (not revealed late)
        nxt = next(v for k, v in store.calls[store.calls.index((kind, value)):] if k == "enrich")
        assert nxt >= value.arrival_time_ms
        assert last_enrich is None or last_enrich < value.arrival_time_ms


def test_backtest_end_to_end_on_a_small_handbook_frame():
    from engine.offline.backtest.run import run_backtest

    rng = np.random.default_rng(0)
    n_days, per_day = 5, 240
    t = np.sort(T0 - DAY_MS + rng.integers(0, n_days * DAY_MS, n_days * per_day))
    customer = rng.integers(0, 60, len(t)).astype(str)
    amount = rng.gamma(2.0, 30.0, len(t))
    fraud = (amount > 150).astype(int)
    frame = pd.DataFrame({"event_id": np.arange(len(t)).astype(str), "event_time_ms": t,
                          "customer_id": customer, "account_id": customer,
                          "terminal_id": rng.integers(0, 30, len(t)).astype(str), "merchant_category": "0000",
                          "amount": amount, "currency": "EUR", "channel": "card_present", "country": "BE",
                          "tx_fraud": fraud})
    window = Window(T0, train_days=2, delay_days=1, test_days=1, history_days=1)
    results = run_backtest(frame, window, models=("transformer", "lightgbm"), epochs=2, threads=1,
                           model_overrides={"d_model": 16, "n_heads": 2, "n_layers": 1, "batch_size": 64,
                                            "negative_keep": 1.0, "progress": False})
    for result in results.values():
        scores = result.scores
        assert list(scores.columns[:4]) == ["transaction_id", "risk_score", "verdict", "confidence"]
        in_test = (t >= window.test_start_ms) & (t < window.test_end_ms)
        assert len(scores) == in_test.sum()
        assert set(scores["verdict"]) <= {"pass", "review", "reject"}
        assert scores["risk_score"].between(0, 1).all()
    assert results["lightgbm"].metrics["auc_roc"] > 0.95  # a rule on the amount is easy to learn
    # the assessed rows are the book's: cards with a fraud in training or the delay day are out
    cut = frame[(t >= window.history_start_ms) & (t < window.test_end_ms)].reset_index(drop=True)
    book = assessed_mask(cut, window)[(cut["event_time_ms"] >= window.test_start_ms).to_numpy()]
    assessed = results["transformer"].scores["assessed"].to_numpy()
    assert assessed.tolist() == book.tolist() and 0 < assessed.sum() < len(assessed)
    assert results["transformer"].metrics["n"] == assessed.sum()


def test_cached_window_is_the_replay_and_a_changed_file_is_not_reused(tmp_path):
    from engine.offline.backtest.cache import cache_key
    from engine.offline.backtest.run import cached_encode_window, encode_window
    from engine.stages.encode import FeatureSchema

    rng = np.random.default_rng(1)
    t = np.sort(T0 - DAY_MS + rng.integers(0, 4 * DAY_MS, 300))
    customer = rng.integers(0, 20, len(t)).astype(str)
    frame = pd.DataFrame({"event_id": np.arange(len(t)).astype(str), "event_time_ms": t,
                          "customer_id": customer, "account_id": customer,
                          "terminal_id": rng.integers(0, 10, len(t)).astype(str), "merchant_category": "0000",
                          "amount": rng.gamma(2.0, 30.0, len(t)), "currency": "EUR", "channel": "card_present",
                          "country": "BE", "tx_fraud": (rng.random(len(t)) < 0.1).astype(int)})
    window = Window(T0, train_days=1, delay_days=1, test_days=1, history_days=1)
    fresh = encode_window(frame, window, batch_size=64)
    first = cached_encode_window(frame, window, tmp_path, batch_size=64)
    assert len(list(tmp_path.iterdir())) == 1
    again = cached_encode_window(frame, window, tmp_path, batch_size=64)  # read back from the file
    for a, b in ((fresh, first), (fresh, again)):
        assert np.array_equal(a.train_rows, b.train_rows) and np.array_equal(a.test_rows, b.test_rows)
        assert [len(x) for x in a.test_batches] == [len(x) for x in b.test_batches]
        for name, tensor in a.train.tensors().items():
            assert torch.equal(tensor, getattr(b.train, name))
        for x, y in zip(a.test_batches, b.test_batches):
            assert all(torch.equal(v, getattr(y, k)) for k, v in x.tensors().items())
    schema = FeatureSchema.default().schema_hash()
    changed = frame.assign(tx_fraud=frame["tx_fraud"].to_numpy()[::-1])
    assert cache_key(changed, window, 64, schema) != cache_key(frame, window, 64, schema)
    assert cache_key(frame, window, 128, schema) != cache_key(frame, window, 64, schema)


@pytest.mark.parametrize("unit", ["ns", "us", "ms"])
def test_read_handbook_reads_event_time_at_any_timestamp_resolution(tmp_path, unit):
    from engine.offline.backtest.run import read_handbook_frame

    when = pd.Series(pd.to_datetime(["2018-05-02 00:00:31", "2018-05-01 12:00:00"])).dt.as_unit(unit)
    raw = pd.DataFrame({"TRANSACTION_ID": [7, 8], "TX_DATETIME": when, "CUSTOMER_ID": [1, 2],
                        "TERMINAL_ID": [3, 4], "TX_AMOUNT": [10.0, 20.0], "TX_FRAUD": [0, 1],
                        "TX_FRAUD_SCENARIO": [0, 1]})
    raw.to_parquet(tmp_path / "hb.parquet")
    frame = read_handbook_frame(tmp_path / "hb.parquet", start_ms=T0)  # T0 = 2018-05-01 00:00 UTC
    assert frame["event_time_ms"].tolist() == [T0 + 12 * 3_600_000, T0 + DAY_MS + 31_000]
    assert frame["event_id"].tolist() == ["8", "7"] and frame["tx_fraud"].tolist() == [1, 0]
