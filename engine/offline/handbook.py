"""Read the handbook's published transactions as Tollgate events and outcomes.

The *Reproducible Machine Learning for Credit Card Fraud Detection — Practical
Handbook* (Le Borgne et al., 2022) publishes simulated transactions in a raw layout:
``TRANSACTION_ID, TX_DATETIME, CUSTOMER_ID, TERMINAL_ID, TX_AMOUNT, TX_TIME_SECONDS,
TX_TIME_DAYS, TX_FRAUD, TX_FRAUD_SCENARIO``. Backtests that want to compare with the
book's published figures read that file through here, so they see the same typed
records as the live engine:

* ids become strings in the simulator's style (``hb-<id>``, ``C000042``, ``T000007``);
* the handbook has no channels or countries: every event is ``card_present`` in
  ``BE``, paid in ``EUR``; the merchant category is a stable function of the
  terminal id (same terminal, same category, in every run);
* ``tx_fraud`` and ``tx_fraud_scenario`` stay as truth columns of the frame, never
  in an event;
* outcomes follow the book's protocol: every label is known ``delay_days`` after the
  transaction (fraud → ``confirmed_fraud``, genuine → ``confirmed_legitimate``).

Everything but the final record construction is vectorised; building 1.2 M frozen
records is most of the cost, so backtests can stay on the frame (``handbook_frame``)
until they need records.

>>> raw = pd.DataFrame({"TRANSACTION_ID": [7], "TX_DATETIME": pd.to_datetime(["2018-04-01 00:00:31"]),
...     "CUSTOMER_ID": [42], "TERMINAL_ID": [3], "TX_AMOUNT": [57.16], "TX_TIME_DAYS": [0],
...     "TX_FRAUD": [0], "TX_FRAUD_SCENARIO": [0]})
>>> frame = handbook_frame(raw)
>>> event = events_from_frame(frame)[0]
>>> event.event_id, event.event_time_ms, event.customer_id, event.terminal_id
('hb-7', 1522540831000, 'C000042', 'T000003')
>>> handbook_outcomes(frame).loc[0, "kind"]
'confirmed_legitimate'
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from engine.offline.simulate.frames import events_from_frame, object_frame, outcomes_from_frame
from engine.offline.simulate.world import MCC_BY_KIND, mix64
from engine.records import Outcome, TransactionEvent

DAY_MS = 86_400_000
HANDBOOK_COLUMNS = ("TRANSACTION_ID", "TX_DATETIME", "CUSTOMER_ID", "TERMINAL_ID", "TX_AMOUNT",
                    "TX_TIME_DAYS", "TX_FRAUD", "TX_FRAUD_SCENARIO")

_MCC_CODES = np.array(list(MCC_BY_KIND["pos"]), dtype=object)
_MCC_CUMULATIVE = np.cumsum(list(MCC_BY_KIND["pos"].values()))
_MCC_CUMULATIVE /= _MCC_CUMULATIVE[-1]


def mcc_for_terminals(terminal_ids: np.ndarray) -> np.ndarray:
    """A stable, POS-like merchant category per terminal id (hash → weighted table).

    >>> mcc_for_terminals(np.array([1, 1, 2])).tolist()[0] == mcc_for_terminals(np.array([1]))[0]
    True
    """
    u = (mix64(np.asarray(terminal_ids, dtype=np.int64).astype(np.uint64)) >> np.uint64(11)) / float(2**53)
    return _MCC_CODES[np.minimum(np.searchsorted(_MCC_CUMULATIVE, u, side="right"), len(_MCC_CODES) - 1)]


def read_handbook_raw(path: Path, first_day: int | None = None, last_day: int | None = None) -> pd.DataFrame:
    """The raw file, optionally only days ``first_day..last_day`` (inclusive, TX_TIME_DAYS)."""
    filters = []
    if first_day is not None:
        filters.append(("TX_TIME_DAYS", ">=", first_day))
    if last_day is not None:
        filters.append(("TX_TIME_DAYS", "<=", last_day))
    return pd.read_parquet(path, columns=list(HANDBOOK_COLUMNS), filters=filters or None)


def _id_strings(prefix: str, ids: np.ndarray) -> np.ndarray:
    """``C000042``-style strings; formatted once per distinct id, then gathered."""
    table = np.array([f"{prefix}{i:06d}" for i in range(int(ids.max()) + 1)], dtype=object) if ids.size else \
        np.empty(0, dtype=object)
    return table[ids]


def handbook_frame(raw: pd.DataFrame) -> pd.DataFrame:
    """Raw handbook rows → an event frame (``engine.offline.simulate.frames`` layout), row order kept."""
    n = len(raw)
    customers = raw["CUSTOMER_ID"].to_numpy(dtype=np.int64)
    terminals = raw["TERMINAL_ID"].to_numpy(dtype=np.int64)
    times = raw["TX_DATETIME"].to_numpy().astype("datetime64[ms]").astype(np.int64)
    return object_frame({
        "event_id": np.array([f"hb-{i}" for i in raw["TRANSACTION_ID"].tolist()], dtype=object),
        "event_time_ms": times,
        "customer_id": _id_strings("C", customers),
        "account_id": _id_strings("A", customers),
        "terminal_id": _id_strings("T", terminals),
        "merchant_category": mcc_for_terminals(terminals),
        "amount": raw["TX_AMOUNT"].to_numpy(dtype=np.float64),
        "currency": np.full(n, "EUR", dtype=object),
        "channel": np.full(n, "card_present", dtype=object),
        "country": np.full(n, "BE", dtype=object),
        "tx_fraud": raw["TX_FRAUD"].to_numpy(dtype=np.int8),
        "tx_fraud_scenario": raw["TX_FRAUD_SCENARIO"].to_numpy(dtype=np.int8),
        "tx_time_days": raw["TX_TIME_DAYS"].to_numpy(dtype=np.int64),
    })


def handbook_outcomes(frame: pd.DataFrame, delay_days: float = 7.0, genuine_labels: bool = True) -> pd.DataFrame:
    """One outcome per event (or per fraud only), ``delay_days`` later, in arrival order."""
    chosen = frame if genuine_labels else frame[frame["tx_fraud"] == 1]
    fraud = chosen["tx_fraud"].to_numpy() == 1
    out = object_frame({
        "event_id": chosen["event_id"].to_numpy(),
        "kind": np.where(fraud, "confirmed_fraud", "confirmed_legitimate").astype(object),
        "outcome_time_ms": chosen["event_time_ms"].to_numpy() + int(delay_days * DAY_MS),
        "source": np.full(len(chosen), "handbook_label", dtype=object),
        "customer_id": chosen["customer_id"].to_numpy(),
        "terminal_id": chosen["terminal_id"].to_numpy(),
        "event_time_ms": chosen["event_time_ms"].to_numpy(),
    })
    return out.sort_values("outcome_time_ms", kind="stable").reset_index(drop=True)


def read_handbook(path: Path, first_day: int | None = None, last_day: int | None = None,
                  delay_days: float = 7.0) -> tuple[list[TransactionEvent], list[Outcome], pd.DataFrame]:
    """Events and outcomes as typed records, plus the frame (with truth) for analysis."""
    frame = handbook_frame(read_handbook_raw(path, first_day, last_day))
    return events_from_frame(frame), outcomes_from_frame(handbook_outcomes(frame, delay_days)), frame
