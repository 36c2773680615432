"""The book's feature transformation (engine.offline.handbook_features) against the book's own
per-card / per-terminal code (ch. 3.4, ported below as written there) on a tiny frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine.offline.handbook_features import BOOK_FEATURES, book_features

DAY_MS = 86_400_000


def tiny_frame(seed: int = 0, n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    # 60 days, a few cards and terminals, some same-millisecond ties
    t = np.sort(rng.integers(0, 60 * DAY_MS, n)) // 60_000 * 60_000
    return pd.DataFrame({"event_id": np.arange(n).astype(str), "event_time_ms": t,
                         "customer_id": rng.integers(0, 7, n).astype(str),
                         "terminal_id": rng.integers(0, 5, n).astype(str),
                         "amount": rng.gamma(2.0, 30.0, n).round(2),
                         "tx_fraud": (rng.random(n) < 0.15).astype(int)})


def book_reference(frame: pd.DataFrame) -> pd.DataFrame:
    """The handbook's transformation, per group with ``rolling``, on its own column names."""
    df = pd.DataFrame({"TRANSACTION_ID": np.arange(len(frame)),
                       "TX_DATETIME": pd.to_datetime(frame["event_time_ms"], unit="ms").to_numpy(),
                       "CUSTOMER_ID": frame["customer_id"].to_numpy(), "TERMINAL_ID": frame["terminal_id"].to_numpy(),
                       "TX_AMOUNT": frame["amount"].to_numpy(), "TX_FRAUD": frame["tx_fraud"].to_numpy()})
    df["TX_DURING_WEEKEND"] = (df.TX_DATETIME.dt.weekday >= 5).astype(float)
    df["TX_DURING_NIGHT"] = (df.TX_DATETIME.dt.hour <= 6).astype(float)
    parts = []
    for _, g in df.groupby("CUSTOMER_ID"):
        g = g.sort_values("TX_DATETIME", kind="stable").set_index("TX_DATETIME", drop=False)
        for w in (1, 7, 30):
            s = g["TX_AMOUNT"].rolling(f"{w}d").sum()
            n = g["TX_AMOUNT"].rolling(f"{w}d").count()
            g[f"CUSTOMER_ID_NB_TX_{w}DAY_WINDOW"] = list(n)
            g[f"CUSTOMER_ID_AVG_AMOUNT_{w}DAY_WINDOW"] = list(s / n)
        parts.append(g.set_index("TRANSACTION_ID"))
    df = pd.concat(parts).sort_index()
    parts = []
    for _, g in df.reset_index().groupby("TERMINAL_ID"):
        g = g.sort_values("TX_DATETIME", kind="stable").set_index("TX_DATETIME", drop=False)
        fraud_delay = g["TX_FRAUD"].rolling("7d").sum()
        n_delay = g["TX_FRAUD"].rolling("7d").count()
        for w in (1, 7, 30):
            n = g["TX_FRAUD"].rolling(f"{7 + w}d").count() - n_delay
            g[f"TERMINAL_ID_NB_TX_{w}DAY_WINDOW"] = list(n)
            g[f"TERMINAL_ID_RISK_{w}DAY_WINDOW"] = list((g["TX_FRAUD"].rolling(f"{7 + w}d").sum() - fraud_delay) / n)
        parts.append(g.set_index("TRANSACTION_ID").fillna(0))
    return pd.concat(parts).sort_index()


@pytest.mark.parametrize("seed", [0, 1])
def test_book_features_equal_the_books_own_code(seed):
    frame = tiny_frame(seed)
    ours = book_features(frame)
    ref = book_reference(frame)
    assert list(ours.columns) == BOOK_FEATURES and len(BOOK_FEATURES) == 15
    for col in BOOK_FEATURES:
        np.testing.assert_allclose(ours[col].to_numpy(), ref[col].to_numpy(dtype=float), rtol=1e-9, atol=1e-9,
                                   err_msg=col)


def test_terminal_risk_never_reads_a_label_younger_than_the_delay():
    # one terminal: a fraud today must not raise today's or the next 7 days' risk
    frame = pd.DataFrame({"event_time_ms": [0, 3 * DAY_MS, 7 * DAY_MS + 1, 8 * DAY_MS - 1],
                          "customer_id": ["a", "b", "c", "d"], "terminal_id": ["t"] * 4,
                          "amount": [1.0] * 4, "tx_fraud": [1, 0, 0, 0]})
    risk = book_features(frame)["TERMINAL_ID_RISK_1DAY_WINDOW"].tolist()
    assert risk == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_terminal_recency_equals_its_definition_row_by_row(seed):
    from engine.offline.handbook_features import RECENCY_CAP_DAYS, terminal_recency

    frame = tiny_frame(seed)
    got = terminal_recency(frame).to_numpy()
    t, term, fraud = frame["event_time_ms"].to_numpy(), frame["terminal_id"].to_numpy(), frame["tx_fraud"].to_numpy()
    for i in range(len(frame)):
        labelled = (term == term[i]) & (t <= t[i] - 7 * DAY_MS)
        expected = [min(RECENCY_CAP_DAYS, (t[i] - t[labelled & m].max()) / DAY_MS) if (labelled & m).any()
                    else RECENCY_CAP_DAYS for m in (fraud == 1, np.ones(len(t), bool))]
        assert got[i].tolist() == pytest.approx(expected), i
    assert (got[:, 0] >= got[:, 1]).all()  # the latest fraud is never more recent than the latest transaction
