"""Batch scoring: ``tollgate score INPUT.{csv,parquet,jsonl} -o OUTPUT.{csv,parquet,jsonl}``.

The file is read and written in chunks (``engine.interfaces.file_rows`` reads CSV and
JSONL line by line and Parquet by ``iter_batches``; a Parquet/CSV/JSONL writer appends
per chunk), so memory stays flat on a file of any length; a progress bar shows rows and
rate. Each chunk goes through ``DecisionPipeline.decide_batch`` — the stream's path.

Context, and why the verdicts equal the stream's: by default a private
``MemoryFeatureStore`` is replayed **in file order**, which must be event-time order
(as exports and ``tollgate simulate`` write it); both backends run the same feature
code in event time, so each event sees the history the stream's Redis state would have
given it *provided the stream saw the same events and outcomes*:

- the customer and terminal features come from the file's earlier events only (the
  stream's state before the file's first event is not there; a customer idle for over
  31 days is forgotten, as its Redis keys expire);
- ``terminal_risk_*``/``terminal_labelled_*`` count delayed fraud outcomes, which the
  stream learns from its feedback worker. Give the file's outcomes with ``outcomes=``
  (``--outcomes FILE``, see ``engine.interfaces.outcome_feed``) and they are fed in outcome-time
  order exactly as the stream would see them; without them those features stay 0.

Rows that go back in time are counted and reported. ``--redis`` reads (and records
into) the live Redis state instead — use it to score events the stream has not seen,
against today's context (outcomes there come from the feedback worker).

Rows that are not valid events are not scored; each is written to an errors file
(``OUTPUT.errors.jsonl``) with its line number (``row`` for Parquet) and the reason,
and the good rows are scored. Every row passes the rules of every other entry point
(``records.event_from_json``); how each format's values are read is in
``engine.interfaces.file_rows`` (no NA-guessing in CSV). The output and the errors file are
written under a ``.partial`` name and renamed at the end, so a run that fails leaves
neither half-written. ``tollgate score`` exits 0 when every row was scored, 3 when some
were refused (listed in the errors file), 1 when the file could not be read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.interfaces.file_rows import FileRow, file_format, read_rows
from engine.interfaces.outcome_feed import OutcomeFeed
from engine.pipeline import DecisionPipeline
from engine.records import EventValidationError, TransactionEvent, Verdict, event_from_json

#: Columns ``attr_<name>`` are folded into ``attributes`` (how tables flatten the map).
ATTRIBUTE_PREFIX = "attr_"
_OPTIONAL_TEXT = frozenset({"device_id", "ip", "memo", "merchant_descriptor"})
#: Flat output columns for CSV and Parquet (JSONL gets the full verdict record).
OUTPUT_COLUMNS = ("event_id", "customer_id", "verdict", "confidence", "p_pass", "p_review", "p_reject",
                  "risk_score", "detector_score", "reasons", "model_version", "rules_version",
                  "event_time_ms", "decided_at_ms", "decision_latency_ms")


# -- reading ------------------------------------------------------------------------------

def read_events(path: Path, chunk_rows: int) -> Iterator[list[TransactionEvent]]:
    """Events of a file that must be valid (benchmarks, tests), ``chunk_rows`` at a time,
    read as ``tollgate score`` reads them; the first bad row raises, naming where it is."""
    fmt = file_format(path)
    for chunk in read_rows(path, fmt, chunk_rows):
        events = []
        for row in chunk:
            try:
                events.append(_row_event(row, fmt != "jsonl"))
            except (EventValidationError, TypeError, ValueError) as exc:
                raise ValueError(f"{path}: {row.where}: {exc}") from exc
        yield events


def count_rows(path: Path) -> int | None:
    """Rows in the file when that is cheap to know (Parquet metadata), else None."""
    if file_format(path) == "parquet":
        # local: pyarrow loads only for table files
        import pyarrow as pa

        # local: pyarrow loads only for table files
        import pyarrow.parquet as pq

        try:
            return pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowException, OSError):
            return None  # reading it will say what is wrong
    return None


def row_to_event(row: dict[str, Any], *, table: bool = True) -> TransactionEvent:
    """One file row → a validated event, by the rules every entry point shares
    (``records.event_from_json``: a number where text belongs is refused, never
    converted). Undone here only what tables do: ``attr_<name>`` columns fold into
    ``attributes``, a Parquet map reads as pairs, a timestamp column, and NaN for a
    missing optional text value (pandas), and (``table``: CSV, Parquet) ``attributes``
    stored as JSON text in a string column. A JSONL row is JSON already: not ``table``."""
    if "__error__" in row:
        raise EventValidationError("row", row["__error__"])
    data: dict[str, Any] = {}
    flat_attrs: dict[str, Any] = {}
    for key, value in row.items():
        if value is None or (key in _OPTIONAL_TEXT and isinstance(value, float) and math.isnan(value)):
            continue
        if key.startswith(ATTRIBUTE_PREFIX):  # flattened attributes (``tollgate simulate`` files)
            flat_attrs[key[len(ATTRIBUTE_PREFIX):]] = value
            continue
        data[key] = value
    attrs = data.get("attributes")
    if table and isinstance(attrs, str):
        try:
            data["attributes"] = attrs = json.loads(attrs) if attrs.strip() else {}
        except json.JSONDecodeError as exc:
            raise EventValidationError("attributes", f"not a JSON object ({exc.msg} at column {exc.colno})") from None
    if isinstance(attrs, list) and all(isinstance(p, tuple) and len(p) == 2 for p in attrs):
        data["attributes"] = dict(attrs)  # Parquet map<string,string> reads as [(key, value), ...]
    if flat_attrs:
        if not isinstance(data.get("attributes", {}), dict):
            raise EventValidationError("attributes", "must be a JSON object")
        data["attributes"] = {**flat_attrs, **data.get("attributes", {})}
    if hasattr(data.get("event_time_ms"), "timestamp"):  # a timestamp column
        data["event_time_ms"] = int(data["event_time_ms"].timestamp() * 1000)
    return event_from_json(data)


# -- writing ------------------------------------------------------------------------------

def flat_row(v: Verdict) -> dict[str, Any]:
    return {
        "event_id": v.event_id, "customer_id": v.customer_id, "verdict": v.verdict.value,
        "confidence": float(v.confidence),
        "p_pass": float(v.probabilities["pass"]), "p_review": float(v.probabilities["review"]),
        "p_reject": float(v.probabilities["reject"]), "risk_score": float(v.risk_score),
        "detector_score": None if v.detector_score is None else float(v.detector_score),
        "reasons": json.dumps([r.to_dict() for r in v.reasons], ensure_ascii=False),
        "model_version": v.model_version, "rules_version": v.rules_version,
        "event_time_ms": int(v.event_time_ms), "decided_at_ms": int(v.decided_at_ms),
        "decision_latency_ms": float(v.decision_latency_ms),
    }


class VerdictWriter:
    """Appends verdicts chunk by chunk in the output's format."""

    def __init__(self, path: Path):
        self.final_path = path
        #: Written here, renamed to ``final_path`` by ``close`` (``discard`` removes it).
        self.path = path.with_name(path.name + ".partial")
        self.format = file_format(path)
        self._fh: Any = None
        self._writer: Any = None

    def write(self, verdicts: list[Verdict]) -> None:
        if not verdicts:
            return
        if self.format == "jsonl":
            if self._fh is None:
                self._fh = self.path.open("w", encoding="utf-8")
            self._fh.writelines(json.dumps(v.to_dict(), ensure_ascii=False) + "\n" for v in verdicts)
            return
        # local: pyarrow loads only for table files
        import pyarrow as pa

        table = pa.Table.from_pylist([flat_row(v) for v in verdicts], schema=_arrow_schema())
        if self._writer is None:
            if self.format == "parquet":
                # local: pyarrow loads only for table files
                import pyarrow.parquet as pq

                self._writer = pq.ParquetWriter(self.path, table.schema)
            else:
                # local: pyarrow loads only for table files
                import pyarrow.csv as pacsv

                self._writer = pacsv.CSVWriter(self.path, table.schema)
        self._writer.write_table(table)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
        if self._writer is not None:
            self._writer.close()
        if self._fh is None and self._writer is None:  # no verdicts at all: still leave a valid, empty file
            if self.format == "jsonl":
                self.path.write_text("")
            else:
                # local: pyarrow loads only for table files
                import pyarrow as pa

                empty = pa.Table.from_pylist([], schema=_arrow_schema())
                if self.format == "parquet":
                    # local: pyarrow loads only for table files
                    import pyarrow.parquet as pq

                    pq.write_table(empty, self.path)
                else:
                    # local: pyarrow loads only for table files
                    import pyarrow.csv as pacsv

                    pacsv.write_csv(empty, self.path)
        self.path.replace(self.final_path)

    def discard(self) -> None:
        """Close and delete the partial file: a failed run leaves no half-written output."""
        for closeable in (self._fh, self._writer):
            if closeable is not None:
                try:
                    closeable.close()
                except Exception:  # noqa: BLE001 - already failing; the file is removed anyway
                    pass
        self.path.unlink(missing_ok=True)


def _arrow_schema() -> Any:
    # local: pyarrow loads only for table files
    import pyarrow as pa

    return pa.schema([
        ("event_id", pa.string()), ("customer_id", pa.string()), ("verdict", pa.string()),
        ("confidence", pa.float64()), ("p_pass", pa.float64()), ("p_review", pa.float64()),
        ("p_reject", pa.float64()), ("risk_score", pa.float64()), ("detector_score", pa.float64()),
        ("reasons", pa.string()), ("model_version", pa.string()), ("rules_version", pa.string()),
        ("event_time_ms", pa.int64()), ("decided_at_ms", pa.int64()), ("decision_latency_ms", pa.float64()),
    ])


# -- the run --------------------------------------------------------------------------------

@dataclass(slots=True)
class ScoreSummary:
    rows: int = 0
    scored: int = 0
    invalid: int = 0
    out_of_order: int = 0
    verdicts: dict[str, int] = field(default_factory=lambda: {"pass": 0, "review": 0, "reject": 0})
    errors_path: Path | None = None
    outcomes: OutcomeFeed | None = None

    def describe(self) -> str:
        counts = ", ".join(f"{n} {k}" for k, n in self.verdicts.items())
        text = f"{self.scored} of {self.rows} rows scored ({counts})"
        if self.invalid:
            text += f"; {self.invalid} invalid rows listed in {self.errors_path}"
        if self.outcomes is not None:
            text += f"; {self.outcomes.describe()}"
        if self.out_of_order:
            text += (f"; WARNING: {self.out_of_order} rows went back in event time — their context differs "
                     "from the stream's; sort the file by event_time_ms")
        return text


def score_file(pipeline: DecisionPipeline, input_path: Path, output_path: Path, *, chunk_rows: int = 4096,
               batch_size: int = 512, errors_path: Path | None = None, progress: bool = True,
               outcomes: OutcomeFeed | None = None) -> ScoreSummary:
    """Score ``input_path`` into ``output_path``; returns what happened. ``outcomes``
    (an ``OutcomeFeed``) are recorded into the pipeline's feature store as the events'
    time passes theirs."""
    # local: progress bars only on this path
    from tqdm import tqdm

    fmt = file_format(input_path)
    file_format(output_path)  # fail before reading anything
    errors_path = errors_path or output_path.with_name(output_path.name + ".errors.jsonl")
    summary = ScoreSummary(errors_path=errors_path, outcomes=outcomes)
    store = pipeline.components.store if outcomes is not None else None
    writer = VerdictWriter(output_path)
    errors_partial = errors_path.with_name(errors_path.name + ".partial")
    errors_fh = None
    last_time = None
    bar = tqdm(total=count_rows(input_path), unit="rows", desc=f"scoring {input_path.name}",
               disable=not progress, smoothing=0.1)
    failed = True
    try:
        for chunk in read_rows(input_path, fmt, chunk_rows):
            events: list[TransactionEvent] = []
            for row in chunk:
                summary.rows += 1
                try:
                    event = _row_event(row, fmt != "jsonl")
                except (EventValidationError, TypeError, ValueError) as exc:
                    summary.invalid += 1
                    if errors_fh is None:
                        errors_fh = errors_partial.open("w", encoding="utf-8")
                    errors_fh.write(json.dumps(_error_record(row, exc), ensure_ascii=False) + "\n")
                    continue
                if last_time is not None and event.event_time_ms < last_time:
                    summary.out_of_order += 1
                last_time = event.event_time_ms if last_time is None else max(last_time, event.event_time_ms)
                events.append(event)
            for start in range(0, len(events), batch_size):
                batch = events[start:start + batch_size]
                # outcomes.parts records the outcomes due before each part (one part, bar corrections)
                for part in (outcomes.parts(batch, store) if outcomes is not None else (batch,)):
                    verdicts = pipeline.decide_batch(part)
                    writer.write(verdicts)
                    summary.scored += len(verdicts)
                    for v in verdicts:
                        summary.verdicts[v.verdict.value] += 1
            bar.update(len(chunk))
            bar.set_postfix(summary.verdicts, refresh=False)
        failed = False
    finally:
        bar.close()
        if errors_fh is not None:
            errors_fh.close()
        if failed:  # no half-written output or errors file
            writer.discard()
            errors_partial.unlink(missing_ok=True)
        else:
            writer.close()
            if errors_fh is not None:
                errors_partial.replace(errors_path)
            else:
                errors_path.unlink(missing_ok=True)  # not an old run's errors next to this run's output
    return summary


def _row_event(row: FileRow, table: bool) -> TransactionEvent:
    if row.error is not None:
        raise EventValidationError("row", row.error)
    assert row.data is not None
    return row_to_event(row.data, table=table)


def _error_record(row: FileRow, exc: Exception) -> dict[str, Any]:
    """One line of the errors file: where the row is, why it was refused, its event id."""
    event_id = row.data.get("event_id") if row.data is not None else None
    return {"line": row.line, "row": row.row, "field": getattr(exc, "field_name", None),
            "error": str(exc).removeprefix("row: "),
            "event_id": event_id if isinstance(event_id, str) else None}
