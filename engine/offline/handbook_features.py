"""The handbook's own feature transformation (Le Borgne et al., 2022, ch. 3.4), for the
baselines that prove the evaluation: the book's logistic regression, random forest and
boosted trees read exactly these 15 columns.

* ``TX_AMOUNT``;
* ``TX_DURING_WEEKEND`` (Saturday or Sunday) and ``TX_DURING_NIGHT`` (hour <= 6);
* per card, over the last 1, 7 and 30 days including the transaction itself: the number
  of transactions and their mean amount;
* per terminal, over the 1, 7 and 30 days that end 7 days before the transaction (labels
  arrive a week late): the number of transactions and the share that were fraud (0 when
  the window is empty).

Windows are the book's pandas time windows on the event time (``rolling('Nd')`` over each
card's or terminal's transactions in time order: a window of N days holds the transactions
in (t - N days, t]), computed with ``searchsorted`` instead of per-group rolling
(``tests/unit/test_handbook_features.py`` checks them against the book's own code). The frame is the backtest's event frame
(``engine.offline.backtest.run.read_handbook_frame``): ``event_time_ms``, ``customer_id``, ``terminal_id``,
``amount``, ``tx_fraud``. Computed over the whole file before any fold is cut, as the book
does, so the 30-day windows are warm on every fold.

>>> day = 86_400_000
>>> frame = pd.DataFrame({"event_time_ms": [0, day // 2, 9 * day], "customer_id": ["a", "a", "a"],
...     "terminal_id": ["t", "t", "t"], "amount": [10.0, 30.0, 50.0], "tx_fraud": [1, 0, 0]})
>>> f = book_features(frame)
>>> f["CUSTOMER_ID_NB_TX_1DAY_WINDOW"].tolist(), f["CUSTOMER_ID_AVG_AMOUNT_1DAY_WINDOW"].tolist()
([1.0, 2.0, 1.0], [10.0, 20.0, 50.0])
>>> f["TERMINAL_ID_NB_TX_7DAY_WINDOW"].tolist(), f["TERMINAL_ID_RISK_7DAY_WINDOW"].tolist()
([0.0, 0.0, 2.0], [0.0, 0.0, 0.5])
"""

from __future__ import annotations

import numpy as np
import pandas as pd

DAY_MS = 86_400_000

WINDOWS_DAYS = (1, 7, 30)
TERMINAL_DELAY_DAYS = 7
BOOK_FEATURES = (
    ["TX_AMOUNT", "TX_DURING_WEEKEND", "TX_DURING_NIGHT"]
    + [f"CUSTOMER_ID_{kind}_{w}DAY_WINDOW" for w in WINDOWS_DAYS for kind in ("NB_TX", "AVG_AMOUNT")]
    + [f"TERMINAL_ID_{kind}_{w}DAY_WINDOW" for w in WINDOWS_DAYS for kind in ("NB_TX", "RISK")]
)


class _Windows:
    """Trailing time windows per key, vectorised: rows sorted by (key, time, row); a row's
    window (t - N days, t] starts at the first earlier row of its key with a time above
    t - N days, found by ``searchsorted`` on key * span + time. Same rows as pandas'
    ``groupby(key).rolling('Nd')`` (the book's code), in a fraction of the time."""

    def __init__(self, keys: np.ndarray, times_ms: np.ndarray) -> None:
        codes = pd.factorize(keys)[0].astype(np.int64)
        t = times_ms.astype(np.int64) - int(times_ms.min(initial=0))
        self.span = int(t.max(initial=0)) + 64 * DAY_MS  # > any time + any window: keys never mix
        self.order = np.lexsort((np.arange(len(t)), t, codes))
        self.combined = codes[self.order] * self.span + t[self.order]

    def _start(self, days: int) -> np.ndarray:
        return np.searchsorted(self.combined, self.combined - days * DAY_MS, side="right")

    def count(self, days: int) -> np.ndarray:
        out = np.empty(len(self.order), dtype=np.float64)
        out[self.order] = np.arange(len(self.order)) - self._start(days) + 1
        return out

    def sum(self, values: np.ndarray, days: int) -> np.ndarray:
        cs = np.concatenate([[0.0], np.cumsum(values[self.order], dtype=np.float64)])
        out = np.empty(len(self.order), dtype=np.float64)
        out[self.order] = cs[1:] - cs[self._start(days)]
        return out


def book_features(frame: pd.DataFrame) -> pd.DataFrame:
    """The 15 features of every row of ``frame`` (same order, same index)."""
    times_ms = frame["event_time_ms"].to_numpy()
    times = pd.DatetimeIndex(pd.to_datetime(times_ms, unit="ms"))
    amount = frame["amount"].to_numpy(dtype=np.float64)
    fraud = frame["tx_fraud"].to_numpy().astype(np.float64)
    customer = frame["customer_id"].to_numpy()
    terminal = frame["terminal_id"].to_numpy()
    out = {"TX_AMOUNT": amount,
           "TX_DURING_WEEKEND": (times.weekday >= 5).astype(np.float64),
           "TX_DURING_NIGHT": (times.hour <= 6).astype(np.float64)}
    cards = _Windows(customer, times_ms)
    for w in WINDOWS_DAYS:
        n = cards.count(w)
        out[f"CUSTOMER_ID_NB_TX_{w}DAY_WINDOW"] = n
        out[f"CUSTOMER_ID_AVG_AMOUNT_{w}DAY_WINDOW"] = cards.sum(amount, w) / n
    d = TERMINAL_DELAY_DAYS
    terminals = _Windows(terminal, times_ms)
    fraud_delay, count_delay = terminals.sum(fraud, d), terminals.count(d)
    for w in WINDOWS_DAYS:
        n = terminals.count(d + w) - count_delay
        bad = terminals.sum(fraud, d + w) - fraud_delay
        with np.errstate(invalid="ignore", divide="ignore"):
            risk = np.where(n > 0, bad / np.where(n > 0, n, 1), 0.0)
        out[f"TERMINAL_ID_NB_TX_{w}DAY_WINDOW"] = n
        out[f"TERMINAL_ID_RISK_{w}DAY_WINDOW"] = risk
    return pd.DataFrame({name: out[name] for name in BOOK_FEATURES}, index=frame.index)


#: Not the book's: how recently the terminal's labels were last fraud / anything, in the
#: book's delayed terms (transactions at least 7 days old count as labelled): what the
#: stream features ``terminal_hours_since_bad`` / ``_label`` carried when they were tried
#: (commit ebd99a5, reverted; docs/decision-quality.md), so the trees could be given them
#: too (``handbook_baselines.py --recency``).
RECENCY_FEATURES = ["TERMINAL_ID_DAYS_SINCE_KNOWN_FRAUD", "TERMINAL_ID_DAYS_SINCE_KNOWN_TX"]
RECENCY_CAP_DAYS = 30.0


def terminal_recency(frame: pd.DataFrame) -> pd.DataFrame:
    """Days from the terminal's latest fraud (latest transaction) at least 7 days before
    each row, to the row; ``RECENCY_CAP_DAYS`` beyond it or when there is none. On the
    terminals' ``_Windows`` order: the masked rows' keys are a sorted subset of it.

    >>> day = 86_400_000
    >>> frame = pd.DataFrame({"event_time_ms": [0, day, 8 * day, 9 * day + day // 2],
    ...     "terminal_id": ["t", "t", "t", "t"], "tx_fraud": [1, 0, 0, 0]})
    >>> terminal_recency(frame).to_numpy().tolist()
    [[30.0, 30.0], [30.0, 30.0], [8.0, 7.0], [9.5, 8.5]]
    """
    terminals = _Windows(frame["terminal_id"].to_numpy(), frame["event_time_ms"].to_numpy())
    combined, span = terminals.combined, terminals.span
    asked = combined - TERMINAL_DELAY_DAYS * DAY_MS
    fraud = frame["tx_fraud"].to_numpy().astype(bool)[terminals.order]

    def since(mask: np.ndarray) -> np.ndarray:
        known = combined[mask]
        pos = np.searchsorted(known, asked, side="right") - 1
        days = np.full(len(combined), RECENCY_CAP_DAYS)
        hit = pos >= 0
        hit[hit] = known[pos[hit]] // span == combined[hit] // span  # the same terminal
        days[hit] = np.minimum((combined[hit] - known[pos[hit]]) / DAY_MS, RECENCY_CAP_DAYS)
        out = np.empty_like(days)
        out[terminals.order] = days
        return out

    return pd.DataFrame({RECENCY_FEATURES[0]: since(fraud), RECENCY_FEATURES[1]: since(np.ones(len(fraud), bool))},
                        index=frame.index)
