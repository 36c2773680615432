"""``tollgate feedback export``: decision logs + outcomes → one clean training table.

One row per decided event: the event's own fields, the context features the engine
computed (the decision-log snapshot, by feature name), the verdict with its
probabilities, and — where an outcome has arrived — the latest outcome and the label
(1 bad, 0 good; empty while the outcome is still unknown). Corrections are already
resolved (the store keeps the latest outcome). For audits and offline training; the
ground truth here is exactly what the fine-tune sees.

>>> import pandas as pd
>>> d = pd.DataFrame({"event_id": ["e1"], "event_time_ms": [0], "customer_id": ["c"],
...     "event_json": ['{"amount": 5.0, "channel": "ecommerce"}'],
...     "snapshot_json": ['{"features": {"tx_count_1d": 2.0}}'], "verdict": ["pass"],
...     "p_pass": [.9], "p_review": [.05], "p_reject": [.05], "risk_score": [.1],
...     "model_version": ["v1"], "rules_version": ["r"], "decided_at_ms": [1], "written_at_ms": [1]})
>>> t = training_table(d, d.iloc[0:0].assign(outcome_kind=[], outcome_time_ms=[], is_bad=[]))
>>> t[["event_id", "event.amount", "feature.tx_count_1d", "verdict", "label"]].to_dict("records")
[{'event_id': 'e1', 'event.amount': 5.0, 'feature.tx_count_1d': 2.0, 'verdict': 'pass', 'label': None}]
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from feedback.store import DecisionStore, LabelStore

_DECISION_COLS = ["event_id", "event_time_ms", "customer_id", "verdict", "p_pass", "p_review",
                  "p_reject", "risk_score", "model_version", "rules_version", "decided_at_ms"]
_OUTCOME_COLS = ["event_id", "outcome_kind", "outcome_source", "outcome_time_ms", "outcome_rev", "is_bad"]


def training_table(decisions: pd.DataFrame, labels: pd.DataFrame) -> pd.DataFrame:
    """Flatten events and snapshots into columns and left-join the latest outcomes."""
    base = decisions[_DECISION_COLS].reset_index(drop=True)
    events = pd.json_normalize([_load(s) for s in decisions["event_json"]]).add_prefix("event.")
    events = events.drop(columns=[c for c in events if c in ("event.event_id", "event.event_time_ms",
                                                             "event.customer_id")], errors="ignore")
    feats = pd.json_normalize([(_load(s).get("features") or {}) for s in decisions["snapshot_json"]])
    feats = feats.add_prefix("feature.")
    snap_ok = pd.Series([s is not None for s in decisions["snapshot_json"]], name="has_inputs")
    out = pd.concat([base, events.reset_index(drop=True), feats.reset_index(drop=True), snap_ok], axis=1)
    lab = labels[[c for c in _OUTCOME_COLS if c in labels]]
    out = out.merge(lab, on="event_id", how="left")
    out["label"] = out["is_bad"].astype("Int64")
    return out.drop(columns=["is_bad"]).sort_values(["event_time_ms", "event_id"]).reset_index(drop=True)


def export_table(decisions_root: str | Path, labels_root: str | Path, out: str | Path, *,
                 since_ms: int | None = None, until_ms: int | None = None,
                 labelled_only: bool = False) -> tuple[Path, int]:
    """Write the table to ``out`` (``.parquet`` or ``.csv``); returns (path, rows)."""
    decisions = DecisionStore(decisions_root).read(since_ms, until_ms)
    labels = LabelStore(labels_root).read()
    table = training_table(decisions, labels)
    if labelled_only:
        table = table[table["label"].notna()].reset_index(drop=True)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".csv":
        table.to_csv(out, index=False)
    else:
        table.to_parquet(out, index=False)
    return out, len(table)


def _load(raw: str | None) -> dict:
    return {} if raw is None or (isinstance(raw, float)) else json.loads(raw)
