"""The columnar layout of simulated (and handbook) data, and its conversion to records.

Simulators and file readers work on pandas frames, one row per event, because that is
what vectorised generation, Parquet and analysis want. Stages want typed records.
This module is the one bridge between the two:

* event frames hold the ``TransactionEvent`` fields as columns, ``attr_<name>``
  columns that become ``attributes[<name>]``, and ground-truth columns
  (``TRUTH_COLUMNS``) that are for analysis only and never reach a record;
* outcome frames hold the ``Outcome`` fields.

>>> frame = pd.DataFrame({"event_id": ["e1"], "event_time_ms": [1_600_000_000_000],
...     "customer_id": ["c"], "account_id": ["a"], "terminal_id": ["t"],
...     "merchant_category": ["5411"], "amount": [3.0], "currency": ["EUR"],
...     "channel": ["card_present"], "country": ["BE"], "attr_entry_mode": ["chip"],
...     "tx_fraud": [1]})
>>> event = events_from_frame(frame)[0]
>>> event.attributes, event.device_id
({'entry_mode': 'chip'}, None)
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from engine.records import Outcome, OutcomeKind, TransactionEvent

REQUIRED_EVENT_COLUMNS: tuple[str, ...] = (
    "event_id", "event_time_ms", "customer_id", "account_id", "terminal_id", "merchant_category",
    "amount", "currency", "channel", "country",
)
OPTIONAL_EVENT_COLUMNS: tuple[str, ...] = ("device_id", "ip", "memo", "merchant_descriptor")
#: Ground truth for analysis and evaluation: written to files, never into an event.
TRUTH_COLUMNS: tuple[str, ...] = ("tx_fraud", "tx_fraud_scenario", "memo_injection", "descriptor_injection")
ATTRIBUTE_PREFIX = "attr_"
#: An outcome names its transaction's time, as a chargeback notice carries its date.
OUTCOME_COLUMNS: tuple[str, ...] = ("event_id", "kind", "outcome_time_ms", "source", "customer_id", "terminal_id",
                                    "event_time_ms")
OUTCOME_TIME_COLUMNS: tuple[str, ...] = ("outcome_time_ms", "event_time_ms")

#: dtypes of a simulated event frame (used for empty frames and Parquet schemas).
EVENT_FRAME_DTYPES: dict[str, str] = {
    **{c: "object" for c in REQUIRED_EVENT_COLUMNS}, "event_time_ms": "int64", "amount": "float64",
    **{c: "object" for c in OPTIONAL_EVENT_COLUMNS}, "attr_entry_mode": "object",
    "tx_fraud": "int8", "tx_fraud_scenario": "int8", "memo_injection": "object", "descriptor_injection": "object",
}


def object_frame(columns: dict[str, Any]) -> pd.DataFrame:
    """A frame whose text columns stay plain ``object`` with ``None`` for missing.

    pandas 3 would otherwise convert every text column to Arrow strings (``NaN`` for
    missing) — a costly copy per day that the records have to undo again.
    """
    return pd.DataFrame({name: pd.Series(values, dtype=object)
                         if isinstance(values, list) or str(getattr(values, "dtype", "")) == "object" else values
                         for name, values in columns.items()})


def text_column(frame: pd.DataFrame, column: str) -> list[str | None]:
    """A text column as a list with None for missing, vectorised (no per-value checks)."""
    if column not in frame.columns:
        return [None] * len(frame)
    series = frame[column]
    missing = series.isna().to_numpy()
    if missing.all():
        return [None] * len(frame)
    values = series.to_numpy(dtype=object)
    return values.tolist() if not missing.any() else np.where(missing, None, values).tolist()


def events_from_frame(frame: pd.DataFrame) -> list[TransactionEvent]:
    """One ``TransactionEvent`` per row, in row order; truth columns are ignored."""
    if frame.empty:
        return []
    missing = [c for c in REQUIRED_EVENT_COLUMNS if c not in frame.columns]
    if missing:
        raise KeyError(f"event frame lacks columns {missing}")
    required = [frame[c].tolist() for c in REQUIRED_EVENT_COLUMNS]
    required[1] = frame["event_time_ms"].astype("int64").tolist()  # Python ints, never np.int64
    required[6] = frame["amount"].astype("float64").tolist()
    optional = [text_column(frame, c) for c in OPTIONAL_EVENT_COLUMNS]
    attr_names = [c for c in frame.columns if c.startswith(ATTRIBUTE_PREFIX)]
    if not attr_names:
        return [TransactionEvent(*row, attributes={}) for row in zip(*required, *optional)]
    attr_values = [text_column(frame, c) for c in attr_names]
    keys = [c[len(ATTRIBUTE_PREFIX):] for c in attr_names]
    return [TransactionEvent(*row, attributes={k: v for k, v in zip(keys, attrs) if v})
            for row, attrs in zip(zip(*required, *optional), zip(*attr_values))]


def outcomes_from_frame(frame: pd.DataFrame) -> list[Outcome]:
    if frame.empty:
        return []
    kinds = {kind.value: kind for kind in OutcomeKind}
    # Frames written before outcomes named their transaction's time have no such column.
    event_times = (frame["event_time_ms"].astype("int64").tolist() if "event_time_ms" in frame.columns
                   else [None] * len(frame))
    return [Outcome(e, kinds[k], t, s, c, term, at)
            for e, k, t, s, c, term, at in zip(frame["event_id"].tolist(), frame["kind"].tolist(),
                                               frame["outcome_time_ms"].astype("int64").tolist(),
                                               frame["source"].tolist(), text_column(frame, "customer_id"),
                                               text_column(frame, "terminal_id"), event_times)]


def frame_from_events(events: list[TransactionEvent]) -> pd.DataFrame:
    """The inverse of ``events_from_frame`` (attributes become ``attr_`` columns)."""
    rows = []
    for e in events:
        row = e.to_dict()
        for k, v in row.pop("attributes").items():
            row[ATTRIBUTE_PREFIX + k] = v
        rows.append(row)
    return pd.DataFrame(rows)
