"""Reading event files for ``tollgate score``, one row at a time, naming every bad row.

Each reader yields ``FileRow``s: the row's data, or why it cannot be read, with where
it is (``line`` in the file for CSV and JSONL, ``row`` = data row number from 1 for
every format). A bad row never stops the file: the next row is read as usual. A file
that cannot be read at all (no header, not Parquet) raises ``FileUnreadable``.

The same rules as every other entry point (``records.event_from_json``) then apply to
the data; the readers only undo what the format does to values:

- **CSV**: every cell is text, and nothing is guessed. An empty cell is missing
  (CSV cannot tell empty from null); ``NA`` is Namibia and ``N/A`` or ``null`` are
  memos, never missing. ``amount`` is parsed as a number, ``event_time_ms`` as whole
  milliseconds (1700000000000.0 too, or ISO-8601 text with a zone), ``attributes`` as a
  JSON object (a UTF-8 BOM before the header is dropped); other
  columns stay text (an id ``0042`` keeps its zeros). A row with the wrong number of
  fields, an unbalanced quote, invalid UTF-8 or over ``MAX_ROW_BYTES`` is refused.
- **JSONL**: one JSON object per line, values as typed (a memo of ``12345`` is refused,
  as over HTTP). Invalid UTF-8, bad JSON and lines over ``MAX_ROW_BYTES`` are refused
  with their line number.
- **Parquet**: values as typed; a null is missing, and so is a float NaN in an optional
  text column (how pandas writes a missing value into a column with no strings).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

#: Longest row (a CSV record, a JSONL line) read, in bytes: as much as one HTTP request.
MAX_ROW_BYTES = 1_048_576
_INT = re.compile(r"^[+-]?\d+$")
_WHOLE = re.compile(r"^[+-]?\d+(\.0*)?([eE][+-]?\d+)?$")


FORMATS = ("csv", "parquet", "jsonl")


def file_format(path: Path) -> str:
    suffix = path.suffix.lower().lstrip(".")
    fmt = {"ndjson": "jsonl", "json": "jsonl", "pq": "parquet"}.get(suffix, suffix)
    if fmt not in FORMATS:
        raise ValueError(f"{path}: unknown format {suffix!r}; use .csv, .parquet or .jsonl")
    return fmt


class FileUnreadable(ValueError):
    """The file as a whole cannot be read (no header, not the format it claims)."""


@dataclass(slots=True)
class FileRow:
    #: Data row number, from 1 (the header is not a row).
    row: int
    #: Line in the file where the row starts (CSV, JSONL); None for Parquet.
    line: int | None
    data: dict[str, Any] | None = None
    error: str | None = None

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line is not None else f"row {self.row}"


def read_rows(path: Path, fmt: str, chunk_rows: int) -> Iterator[list[FileRow]]:
    """``FileRow``s of ``path`` (format ``fmt``), ``chunk_rows`` at a time."""
    rows = {"csv": _csv_rows, "jsonl": _jsonl_rows, "parquet": _parquet_rows}[fmt](path)
    chunk: list[FileRow] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= chunk_rows:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


# -- physical lines ------------------------------------------------------------------------

def _lines(fh: BinaryIO, first_line: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) per line; ``None`` for a line over ``MAX_ROW_BYTES`` (skipped
    to its end without holding it in memory)."""
    lineno = first_line
    while True:
        line = fh.readline(MAX_ROW_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_ROW_BYTES and not line.endswith(b"\n"):
            while (rest := fh.readline(MAX_ROW_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield lineno, None
        else:
            yield lineno, line
        lineno += 1


def _decode(raw: bytes) -> tuple[str, str | None]:
    """The text, and why it is not valid UTF-8 (None when it is)."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return raw.decode("utf-8", "replace"), (f"invalid UTF-8 at byte {exc.start + 1} of the line "
                                                 f"({raw[exc.start:exc.start + 1]!r}: {exc.reason})")


# -- JSONL ---------------------------------------------------------------------------------

def _jsonl_rows(path: Path) -> Iterator[FileRow]:
    row = 0
    with path.open("rb") as fh:
        for lineno, raw in _lines(fh, 1):
            if raw is not None and not raw.strip():
                continue
            row += 1
            if raw is None:
                yield FileRow(row, lineno, error=f"longer than {MAX_ROW_BYTES} bytes")
                continue
            text, bad_utf8 = _decode(raw)
            if bad_utf8:
                yield FileRow(row, lineno, error=bad_utf8)
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                yield FileRow(row, lineno, error=f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(data, dict):
                yield FileRow(row, lineno, error="a JSON object per line is expected")
                continue
            yield FileRow(row, lineno, data)


# -- Parquet ------------------------------------------------------------------------------

def _parquet_rows(path: Path) -> Iterator[FileRow]:
    # local: pyarrow loads only for table files
    import pyarrow as pa

    # local: pyarrow loads only for table files
    import pyarrow.parquet as pq

    try:
        file = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise FileUnreadable(f"{path}: not a readable Parquet file ({exc})") from None
    row = 0
    for batch in file.iter_batches(batch_size=4096):
        for data in batch.to_pylist():
            row += 1
            yield FileRow(row, None, data)


# -- CSV ----------------------------------------------------------------------------------

def _csv_rows(path: Path) -> Iterator[FileRow]:
    with path.open("rb") as fh:
        lines = _lines(fh, 1)
        first = next(lines, None)
        if first is None:
            return
        if first[1] is None:
            raise FileUnreadable(f"{path}: the header line is longer than {MAX_ROW_BYTES} bytes")
        text, bad = _decode(first[1].removeprefix(b"\xef\xbb\xbf"))  # a UTF-8 BOM (Excel) is not a name
        if bad:
            raise FileUnreadable(f"{path}: the header line has {bad}")
        header = next(csv.reader([text]), [])
        if not header or len(set(header)) != len(header):
            raise FileUnreadable(f"{path}: line 1 must name each column once (got {header!r})")
        yield from _csv_records(header, lines)


def _csv_records(header: list[str], lines: Iterator[tuple[int, bytes | None]]) -> Iterator[FileRow]:
    """Records of one or more physical lines (a quoted field may hold newlines). A record
    whose quote never closes within ``MAX_ROW_BYTES`` (or the file) is refused, and the
    lines it swallowed are read again as records of their own."""
    pending: deque[tuple[int, bytes | None]] = deque()
    row = 0

    def next_line() -> tuple[int, bytes | None] | None:
        return pending.popleft() if pending else next(lines, None)

    while (item := next_line()) is not None:
        start, raw = item
        if raw is not None and not raw.strip():
            continue
        row += 1
        if raw is None:
            yield FileRow(row, start, error=f"longer than {MAX_ROW_BYTES} bytes")
            continue
        parts = [raw]
        size = len(raw)
        quotes = raw.count(b'"')
        taken: list[tuple[int, bytes | None]] = []
        while quotes % 2 == 1:  # inside a quoted field: the record goes on
            more = next_line()
            if more is None or more[1] is None or size + len(more[1]) > MAX_ROW_BYTES:
                if more is not None:
                    taken.append(more)
                break
            taken.append(more)
            parts.append(more[1])
            size += len(more[1])
            quotes += more[1].count(b'"')
        if quotes % 2 == 1:
            yield FileRow(row, start, error="unbalanced quote: a quoted field never closes")
            pending.extendleft(reversed(taken))  # read them again, each on its own
            continue
        text, bad = _decode(b"".join(parts))
        if bad:
            yield FileRow(row, start, error=bad.replace("of the line", "of the record"))
            continue
        try:
            fields = next(csv.reader(io.StringIO(text), strict=True))
        except (csv.Error, StopIteration) as exc:
            yield FileRow(row, start, error=f"not CSV ({exc})")
            continue
        if len(fields) != len(header):
            yield FileRow(row, start, error=f"{len(fields)} fields, the header has {len(header)}")
            continue
        try:
            yield FileRow(row, start, _typed_cells(header, fields))
        except ValueError as exc:
            yield FileRow(row, start, error=str(exc))


def _typed_cells(header: list[str], fields: list[str]) -> dict[str, Any]:
    """CSV text → the values a JSON event would carry; an empty cell is missing."""
    out: dict[str, Any] = {}
    for name, cell in zip(header, fields):
        if cell == "":
            continue
        if name == "amount":
            try:
                out[name] = float(cell)
            except ValueError:
                raise ValueError(f"amount: {cell[:40]!r} is not a number") from None
        elif name == "event_time_ms" and _INT.match(cell):
            out[name] = int(cell)
        elif name == "event_time_ms" and _WHOLE.match(cell):  # 1700000000000.0: whole, as JSON allows
            out[name] = float(cell)
        elif name == "attributes":
            try:
                value = json.loads(cell)
            except json.JSONDecodeError as exc:
                raise ValueError(f"attributes: not a JSON object ({exc.msg} at column {exc.colno})") from None
            if not isinstance(value, dict):
                raise ValueError("attributes: must be a JSON object")
            out[name] = value
        else:
            out[name] = cell
    return out


__all__ = ["FileRow", "FileUnreadable", "MAX_ROW_BYTES", "read_rows"]
