"""The labelled-example store: append-only Parquet, partitioned by hour of label arrival.

Why this shape:

* **Append-only files, never rewritten.** Each flush writes one new file
  ``<examples_dir>/hour=YYYY-MM-DDTHH/part-<written_ms>-<uuid>.parquet`` through a
  temporary name and an atomic rename, so a crash leaves either the whole file or none.
* **Partitioned by the hour the label arrived** (``outcome_time_ms``), because the
  fine-tune asks "what is new since the last run" and the gate asks "what arrived
  recently": both prune whole directories.
* **Dedup and corrections on read.** The writer may repeat a row (a crash between the
  file rename and the join state's ``emitted_rev`` update), and a correction adds a
  row with a higher ``outcome_rev``. ``read`` keeps, per ``event_id``, the row with the
  latest ``(outcome_time_ms, outcome_rev)`` — the same rule the join applies.

>>> import tempfile
>>> store = LabelStore(tempfile.mkdtemp())
>>> ex = LabelledExample(event_id="e1", event_time_ms=0, customer_id="c", terminal_id="t",
...     event_json="{}", snapshot_json=None, verdict="pass", p_pass=.9, p_review=.05, p_reject=.05,
...     risk_score=.1, model_version="v1", rules_version="r1", decided_at_ms=1,
...     outcome_kind="chargeback", outcome_source="issuer", outcome_time_ms=3_600_000,
...     outcome_rev=1, is_bad=1, preferred="reject")
>>> _ = store.append([ex, ex])
>>> from dataclasses import replace
>>> _ = store.append([replace(ex, outcome_kind="confirmed_legitimate", outcome_time_ms=7_200_000,
...                           outcome_rev=2, is_bad=0, preferred="pass")])
>>> df = store.read()
>>> len(df), df.iloc[0]["outcome_kind"], store.hours()
(1, 'confirmed_legitimate', ['1970-01-01T01', '1970-01-01T02'])
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.records import OutcomeKind
from feedback.stream.join import JoinRecord, is_complete, preferred_verdict

HOUR_MS = 3_600_000


@dataclass(slots=True, frozen=True)
class LabelledExample:
    """One decision with the outcome that judged it: a row of the example store."""

    event_id: str
    event_time_ms: int
    customer_id: str
    terminal_id: str
    event_json: str | None  # the TransactionEvent as the engine saw it (Avro field layout)
    snapshot_json: str | None  # the engine's decision-log entry (context snapshot), if kept
    #: "" when the verdict had left Redis (``JoinRecord.decision_in_store``): this row and
    #: the scores after it are then filled from the decision store on read
    #: (``complete_from_decisions``).
    verdict: str
    p_pass: float
    p_review: float
    p_reject: float
    risk_score: float
    model_version: str
    rules_version: str
    decided_at_ms: int
    outcome_kind: str
    outcome_source: str
    outcome_time_ms: int
    outcome_rev: int
    is_bad: int
    preferred: str
    written_at_ms: int = 0

    @classmethod
    def from_join(cls, rec: JoinRecord, snapshot: Mapping[str, Any] | None = None) -> LabelledExample:
        """Build the row from a complete join record (see ``join.is_complete``)."""
        if not is_complete(rec) or rec.outcome is None:
            raise ValueError(f"join record {rec.event_id} is not complete")
        oc = rec.outcome
        # Without a verdict (it left Redis): what the outcome knows; the rest is filled from
        # the decision store on read.
        vd = rec.verdict or {"verdict": "", "event_time_ms": rec.event_time_ms or oc.get("event_time_ms") or 0,
                             "customer_id": oc.get("customer_id") or ""}
        # The event: from tx.events if the worker consumed it, else from the decision log.
        ev = rec.event or (snapshot or {}).get("event")
        snap = None if snapshot is None else {k: v for k, v in dict(snapshot).items() if k != "event"}
        probs = vd.get("probabilities") or {}
        kind = OutcomeKind(oc["kind"])
        return cls(
            event_id=rec.event_id, event_time_ms=int((ev or vd)["event_time_ms"]),
            customer_id=str((ev or vd).get("customer_id", "")),
            terminal_id=str((ev or {}).get("terminal_id") or rec.terminal_id or oc.get("terminal_id") or ""),
            event_json=None if ev is None else json.dumps(dict(ev), sort_keys=True, default=str),
            snapshot_json=None if snap is None else json.dumps(snap, sort_keys=True, default=str),
            verdict=str(vd["verdict"]), p_pass=float(probs.get("pass", 0.0)),
            p_review=float(probs.get("review", 0.0)), p_reject=float(probs.get("reject", 0.0)),
            risk_score=float(vd.get("risk_score", 0.0)), model_version=str(vd.get("model_version", "")),
            rules_version=str(vd.get("rules_version", "")), decided_at_ms=int(vd.get("decided_at_ms", 0)),
            outcome_kind=kind.value, outcome_source=str(oc.get("source") or "unknown"),
            outcome_time_ms=int(oc["outcome_time_ms"]), outcome_rev=rec.outcome_rev,
            is_bad=int(kind.is_bad), preferred=preferred_verdict(kind),
        )


@dataclass(slots=True, frozen=True)
class DecisionRow:
    """One decision with the exact inputs the model saw: a row of the decision store.

    The 24 h gate replay and ``tollgate feedback export`` read these; they do not need
    an outcome, so every verdict the worker joins is kept (partitioned by event hour).
    """

    event_id: str
    event_time_ms: int
    customer_id: str
    event_json: str | None
    snapshot_json: str | None
    verdict: str
    p_pass: float
    p_review: float
    p_reject: float
    risk_score: float
    model_version: str
    rules_version: str
    decided_at_ms: int
    written_at_ms: int = 0

    @classmethod
    def from_verdict(cls, verdict: Mapping[str, Any], snapshot: Mapping[str, Any] | None,
                     event: Mapping[str, Any] | None = None) -> DecisionRow:
        ev = event or (snapshot or {}).get("event")
        snap = None if snapshot is None else {k: v for k, v in dict(snapshot).items() if k != "event"}
        probs = verdict.get("probabilities") or {}
        return cls(
            event_id=str(verdict["event_id"]), event_time_ms=int(verdict["event_time_ms"]),
            customer_id=str(verdict.get("customer_id", "")),
            event_json=None if ev is None else json.dumps(dict(ev), sort_keys=True, default=str),
            snapshot_json=None if snap is None else json.dumps(snap, sort_keys=True, default=str),
            verdict=str(verdict["verdict"]), p_pass=float(probs.get("pass", 0.0)),
            p_review=float(probs.get("review", 0.0)), p_reject=float(probs.get("reject", 0.0)),
            risk_score=float(verdict.get("risk_score", 0.0)),
            model_version=str(verdict.get("model_version", "")),
            rules_version=str(verdict.get("rules_version", "")),
            decided_at_ms=int(verdict.get("decided_at_ms", 0)),
        )


_ARROW = {"str": pa.string(), "str | None": pa.string(), "int": pa.int64(), "float": pa.float64()}


class HourlyParquetStore:
    """Append-only Parquet files of one record type, partitioned by the hour of ``time_field``.

    ``order`` names the columns that rank two rows of the same ``event_id``: the last
    one in that order is the row ``read`` keeps.
    """

    def __init__(self, root: str | os.PathLike[str], record_type: type, time_field: str,
                 order: tuple[str, ...]):
        self.root = Path(root)
        self.record_type = record_type
        self.time_field = time_field
        self.order = order
        self.columns = tuple(f.name for f in fields(record_type))
        self.schema = pa.schema([(f.name, _ARROW[f.type]) for f in fields(record_type)])

    def append(self, records: Iterable[Any], *, now_ms: int | None = None) -> list[Path]:
        """Write the records, one new file per hour partition; returns the files written."""
        now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        by_hour: dict[str, list[dict[str, Any]]] = {}
        for rec in records:
            row = asdict(rec)
            row["written_at_ms"] = now_ms
            by_hour.setdefault(_hour_name(row[self.time_field]), []).append(row)
        written: list[Path] = []
        for hour, rows in sorted(by_hour.items()):
            part_dir = self.root / f"hour={hour}"
            part_dir.mkdir(parents=True, exist_ok=True)
            final = part_dir / f"part-{now_ms}-{uuid.uuid4().hex[:12]}.parquet"
            tmp = part_dir / f".{final.name}.tmp"
            pq.write_table(pa.Table.from_pylist(rows, schema=self.schema), tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, final)
            written.append(final)
        return written

    def hours(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name.split("=", 1)[1] for p in self.root.iterdir()
                      if p.is_dir() and p.name.startswith("hour="))

    def read(self, since_ms: int | None = None, until_ms: int | None = None, *,
             dedup: bool = True) -> pd.DataFrame:
        """Rows with ``time_field`` in ``[since_ms, until_ms)``, one per event if ``dedup``."""
        files = self._files(since_ms, until_ms)
        if not files:
            return self._empty()
        # One conversion to pandas for all files, not one per file: the worker writes a
        # small file per hour per flush, and per-file conversion doubled the read time.
        df = pa.concat_tables([pq.read_table(f, schema=self.schema) for f in files]).to_pandas()
        if since_ms is not None:
            df = df[df[self.time_field] >= since_ms]
        if until_ms is not None:
            df = df[df[self.time_field] < until_ms]
        if dedup and not df.empty:
            df = self._latest(df)
        return df.sort_values([self.time_field, "event_id"]).reset_index(drop=True)

    def _latest(self, df: pd.DataFrame) -> pd.DataFrame:
        """One row per ``event_id``: the last in ``order``."""
        return df.sort_values(["event_id", *self.order]).drop_duplicates("event_id", keep="last")

    def _empty(self) -> pd.DataFrame:
        return pd.DataFrame({c: pd.Series(dtype=self.schema.field(c).type.to_pandas_dtype())
                             for c in self.columns})

    def _files(self, since_ms: int | None, until_ms: int | None) -> list[Path]:
        lo = None if since_ms is None else _hour_name(since_ms)
        hi = None if until_ms is None else _hour_name(until_ms)
        out: list[Path] = []
        for hour in self.hours():
            if (lo is not None and hour < lo) or (hi is not None and hour > hi):
                continue
            out.extend(sorted((self.root / f"hour={hour}").glob("part-*.parquet")))
        return out


class DecisionStore(HourlyParquetStore):
    """Decisions with their model inputs, partitioned by event hour."""

    def __init__(self, root: str | os.PathLike[str]):
        super().__init__(root, DecisionRow, "event_time_ms", ("written_at_ms",))

    def lookup(self, event_ids: Iterable[str], since_ms: int | None = None,
               until_ms: int | None = None) -> pd.DataFrame:
        """The stored decisions of these events (one each, the last written), read from the
        event-hour partitions in ``[since_ms, until_ms]`` with a filter on ``event_id``, so
        a late outcome's decision is found without loading whole hours."""
        wanted = sorted(set(event_ids))
        tables = [pq.read_table(f, schema=self.schema, filters=[("event_id", "in", wanted)])
                  for f in (self._files(since_ms, until_ms) if wanted else [])]
        tables = [t for t in tables if t.num_rows]
        if not tables:
            return self._empty()
        return self._latest(pa.concat_tables(tables).to_pandas()).reset_index(drop=True)

    def _latest(self, df: pd.DataFrame) -> pd.DataFrame:
        # A row with the inputs beats one without: a verdict replayed after its snapshot
        # left Redis (redis.decision_log_redis_hours) is written again, without them.
        ranked = df.assign(_has_inputs=df["snapshot_json"].notna())
        return (ranked.sort_values(["event_id", "_has_inputs", *self.order])
                .drop_duplicates("event_id", keep="last").drop(columns="_has_inputs"))


#: What a labelled example takes from its decision when the label was written without it.
_FROM_DECISION = ("event_time_ms", "customer_id", "verdict", "p_pass", "p_review", "p_reject", "risk_score",
                  "model_version", "rules_version", "decided_at_ms")


def complete_from_decisions(labels: pd.DataFrame, decisions: DecisionStore) -> tuple[pd.DataFrame, int]:
    """Fill labelled examples written without their decision or inputs from the decision store.

    Two kinds of row need it: an outcome whose verdict had left Redis
    (``redis.decision_log_redis_hours``; its ``verdict`` is ""), and one whose snapshot had
    (``snapshot_json``/``event_json`` null). The feedback worker wrote every decision with
    its inputs to the decision store within seconds of the verdict, so the join happens
    here, in batch, when the fine-tune reads its labels. Returns the rows and how many
    were dropped: a row still without a verdict cannot be judged against what was decided.
    """
    if labels.empty:
        return labels, 0
    need = labels["verdict"].eq("") | labels["snapshot_json"].isna() | labels["event_json"].isna()
    if not need.any():
        return labels, 0
    rows = labels[need]
    times = rows["event_time_ms"]
    known = times[times > 0]
    # An outcome that did not say when its transaction happened is looked for everywhere.
    since, until = ((None, None) if (times <= 0).any() or known.empty
                    else (int(known.min()), int(known.max()) + 1))
    found = decisions.lookup(rows["event_id"], since, until).set_index("event_id")
    out = labels.copy()
    for i in rows.index:
        eid = out.at[i, "event_id"]
        if eid not in found.index:
            continue
        dec = found.loc[eid]
        if out.at[i, "verdict"] == "":
            for col in _FROM_DECISION:
                out.at[i, col] = dec[col]
        for col in ("event_json", "snapshot_json"):
            if pd.isna(out.at[i, col]):
                out.at[i, col] = dec[col]
        if not out.at[i, "terminal_id"] and dec["event_json"]:
            out.at[i, "terminal_id"] = str(json.loads(dec["event_json"]).get("terminal_id") or "")
    undecided = out["verdict"].eq("")
    return out[~undecided].reset_index(drop=True), int(undecided.sum())


class LabelStore(HourlyParquetStore):
    """Hour-partitioned, append-only Parquet store of ``LabelledExample`` rows."""

    def __init__(self, root: str | os.PathLike[str]):
        super().__init__(root, LabelledExample, "outcome_time_ms",
                         ("outcome_time_ms", "outcome_rev", "written_at_ms"))

    def read(self, since_ms: int | None = None, until_ms: int | None = None, *,
             dedup: bool = True) -> pd.DataFrame:
        """Rows whose label arrived in ``[since_ms, until_ms)``, one per event (latest label).

        A correction that arrived *after* the window still wins: a row is dropped if a
        later revision of the same event exists anywhere in the store, so the fine-tune
        never trains on a label that has since been corrected.
        """
        df = HourlyParquetStore.read(self, since_ms, until_ms, dedup=dedup)
        if not dedup or df.empty or (since_ms is None and until_ms is None):
            return df
        later = self._latest_keys(df["event_id"])
        key = list(zip(df["outcome_time_ms"], df["outcome_rev"]))
        keep = [later.get(e, k) <= k for e, k in zip(df["event_id"], key)]
        return df[keep].reset_index(drop=True)

    def _latest_keys(self, event_ids: Iterable[str]) -> dict[str, tuple[int, int]]:
        wanted = set(event_ids)
        out: dict[str, tuple[int, int]] = {}
        for f in self._files(None, None):
            t = pq.read_table(f, columns=["event_id", "outcome_time_ms", "outcome_rev"]).to_pydict()
            for e, ts, rev in zip(t["event_id"], t["outcome_time_ms"], t["outcome_rev"]):
                if e in wanted and (ts, rev) > out.get(e, (-1, -1)):
                    out[e] = (ts, rev)
        return out


def _hour_name(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H", time.gmtime(int(ms) // 1000))
