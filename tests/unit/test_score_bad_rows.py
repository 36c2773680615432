"""``tollgate score`` on files with bad rows (issue #20, items 9 and 10): every bad row
goes to the errors file with its line number and the reason, every good row is scored,
nothing is guessed (NA is Namibia), and the same rules hold in CSV, JSONL and Parquet.
The pipeline is the small fake of test_pipeline.py; the CLI's exit codes are checked
through `tollgate score` with the real model in tests/integration/test_interfaces_agree.py
and here through ``engine.interfaces.commands.serve.score`` on that fake pipeline."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine.interfaces.file_rows import MAX_ROW_BYTES, FileUnreadable
from engine.interfaces.file_scoring import score_file
from tests.unit.test_pipeline import make

HEADER = ["event_id", "event_time_ms", "customer_id", "account_id", "terminal_id", "merchant_category", "amount",
          "currency", "channel", "country", "memo", "attributes"]


def good(i: int, **over: object) -> dict:
    row = {"event_id": f"e{i}", "event_time_ms": 1_700_000_000_000 + i * 1000, "customer_id": f"c{i % 3}",
           "account_id": "a1", "terminal_id": "t1", "merchant_category": "5411", "amount": 10.0 + i,
           "currency": "EUR", "channel": "ecommerce", "country": "BE", "memo": None, "attributes": {}}
    row.update(over)
    return row


def csv_line(row: dict) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(
        ["" if row.get(k) is None else json.dumps(row[k]) if k == "attributes" else row[k] for k in HEADER])
    return buf.getvalue()


def run(tmp_path, name: str, content: bytes):
    src, out = tmp_path / name, tmp_path / "out.jsonl"
    src.write_bytes(content)
    pipe, _ = make()
    summary = score_file(pipe, src, out, progress=False)
    scored = [json.loads(x)["event_id"] for x in out.read_text().splitlines()]
    errors = [json.loads(x) for x in summary.errors_path.read_text().splitlines()] if summary.invalid else []
    return summary, scored, errors


def csv_file(lines: list[bytes]) -> bytes:
    return (",".join(HEADER) + "\n").encode() + b"".join(lines)


@pytest.mark.parametrize("bad_line, reason", [
    (csv_line(good(2, amount="twelve")).encode(), "amount: 'twelve' is not a number"),
    (b"e2,1700000002000,c2,a1\n", "4 fields, the header has 12"),
    (csv_line(good(2)).replace(",rent", ",rent").encode().replace(b",BE,", b',BE,"unclosed memo', 1),
     "unbalanced quote"),
    (csv_line(good(2, memo="caf\u00e9")).encode().replace("é".encode(), b"\xc3\x28"), "invalid UTF-8 at byte"),
    (csv_line(good(2, memo="x" * (MAX_ROW_BYTES + 10))).encode(), f"longer than {MAX_ROW_BYTES} bytes"),
    (csv_line(good(2, memo=12345)).encode(), None),  # a number-looking memo in CSV is text: scored
])
def test_csv_bad_row_is_listed_with_its_line_and_the_rest_scored(tmp_path, bad_line, reason):
    lines = [csv_line(good(i)).encode() for i in range(6)]
    lines[2] = bad_line
    summary, scored, errors = run(tmp_path, "in.csv", csv_file(lines))
    if reason is None:
        assert summary.invalid == 0 and scored == [f"e{i}" for i in range(6)]
        return
    assert scored == ["e0", "e1", "e3", "e4", "e5"], errors
    assert (summary.rows, summary.invalid) == (6, 1)
    assert len(errors) == 1 and errors[0]["line"] == 4 and errors[0]["row"] == 3  # line 1 is the header
    assert reason in errors[0]["error"]


def test_csv_reads_no_missing_values_into_text(tmp_path):
    """NA is Namibia; N/A and null are memos. Only an empty cell is missing."""
    rows = [good(0, country="NA", memo="N/A"), good(1, memo="null"), good(2, memo="NaN"), good(3, memo=None)]
    src, out = tmp_path / "in.csv", tmp_path / "out.jsonl"
    src.write_bytes(csv_file([csv_line(r).encode() for r in rows]))
    from engine.interfaces.file_rows import read_rows

    data = [r.data for chunk in read_rows(src, "csv", 10) for r in chunk]
    assert [d["country"] for d in data] == ["NA", "BE", "BE", "BE"]
    assert [d.get("memo") for d in data] == ["N/A", "null", "NaN", None]
    pipe, _ = make()
    assert score_file(pipe, src, out, progress=False).scored == 4


def test_a_quoted_memo_with_a_newline_is_one_row(tmp_path):
    lines = [csv_line(good(0, memo="two\nlines")).encode(), csv_line(good(1)).encode()]
    summary, scored, _ = run(tmp_path, "in.csv", csv_file(lines))
    assert scored == ["e0", "e1"] and summary.invalid == 0


@pytest.mark.parametrize("bad_line, reason", [
    (json.dumps(good(2, amount="12.5")).encode(), "amount"),
    (json.dumps(good(2, memo=12345)).encode(), "memo: must be a string or null, got int"),
    (json.dumps(good(2, memo={"a": 1})).encode(), "memo: must be a string or null, got dict"),
    (json.dumps(good(2, channel=["ecommerce"])).encode(), "channel: must be a string, got list"),
    (json.dumps(good(2, customer_id="c\x00")).encode(), "customer_id: contains a control character (U+0000)"),
    (json.dumps(good(2, memo="caf\u00e9"), ensure_ascii=False).encode().replace("é".encode(), b"\xed\xa0\x80"),
     "invalid UTF-8 at byte"),
    (b'{"event_id": "e2", ', "not JSON"),
    (json.dumps(good(2, memo="x" * (MAX_ROW_BYTES + 10))).encode(), f"longer than {MAX_ROW_BYTES} bytes"),
])
def test_jsonl_bad_row_carries_the_files_line_number(tmp_path, bad_line, reason):
    lines = [json.dumps(good(i)).encode() for i in range(6)]
    lines[2] = bad_line
    lines.insert(1, b"")  # a blank line: line numbers are the file's, not the rows'
    summary, scored, errors = run(tmp_path, "in.jsonl", b"\n".join(lines) + b"\n")
    assert scored == ["e0", "e1", "e3", "e4", "e5"]
    assert len(errors) == 1 and errors[0]["line"] == 4 and errors[0]["row"] == 3
    assert reason in errors[0]["error"]


def test_parquet_bad_row_is_listed_by_row_number(tmp_path):
    rows = [good(i) for i in range(6)]
    rows[2]["customer_id"] = "c\x1b[31m"
    rows[4]["amount"] = -1.0
    for r in rows:
        r["attributes"] = json.dumps(r["attributes"])
    src = tmp_path / "in.parquet"
    pq.write_table(pa.Table.from_pylist(rows), src)
    summary, scored, errors = run(tmp_path, "in.parquet", src.read_bytes())
    assert scored == ["e0", "e1", "e3", "e5"]
    assert [(e["row"], e["line"], e["field"]) for e in errors] == [(3, None, "customer_id"), (5, None, "amount")]


def test_an_unreadable_file_leaves_no_partial_output(tmp_path):
    src, out = tmp_path / "in.parquet", tmp_path / "out.csv"
    src.write_bytes(b"PAR1 this is not parquet")
    pipe, _ = make()
    with pytest.raises(FileUnreadable):
        score_file(pipe, src, out, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_cli_exit_code_says_rows_were_refused(tmp_path, monkeypatch):
    """`tollgate score` exits 3 when some rows were refused, 0 when none, 1 on an unreadable file."""
    from typer.testing import CliRunner

    import engine.assemble
    from engine.interfaces import cli

    cli._register_all()
    app = cli.app

    monkeypatch.setattr(engine.assemble, "build_pipeline", lambda *a, **k: make()[0])
    ok, bad, broken = tmp_path / "ok.jsonl", tmp_path / "bad.jsonl", tmp_path / "broken.parquet"
    ok.write_text(json.dumps(good(0)) + "\n")
    bad.write_text(json.dumps(good(0)) + "\n" + json.dumps(good(1, memo=7)) + "\n")
    broken.write_bytes(b"nope")
    runner = CliRunner()
    assert runner.invoke(app, ["score", str(ok), "-o", str(tmp_path / "o1.jsonl"), "-q"]).exit_code == 0
    refused = runner.invoke(app, ["score", str(bad), "-o", str(tmp_path / "o2.jsonl"), "-q"])
    assert refused.exit_code == 3 and "1 invalid rows listed in" in refused.output
    unreadable = runner.invoke(app, ["score", str(broken), "-o", str(tmp_path / "o3.jsonl"), "-q"])
    assert unreadable.exit_code == 1 and "not a readable Parquet file" in unreadable.output
    assert unreadable.exception is None or isinstance(unreadable.exception, SystemExit)
    assert not (tmp_path / "o3.jsonl").exists()


def test_outcome_files_are_read_the_same_way(tmp_path):
    """--outcomes CSV: no NA-guessing (an event id "NA" is an id), a bad row is counted."""
    from engine.features.memory import MemoryFeatureStore
    from engine.interfaces.outcome_feed import OutcomeFeed

    path = tmp_path / "outcomes.csv"
    path.write_text("event_id,kind,outcome_time_ms,source\n"
                    "NA,chargeback,1700000100000,bank\n"
                    "e1,chargeback,soon,bank\n"
                    'e2,"confirmed_fraud,1700000100000,bank\n')
    feed = OutcomeFeed.from_file(path, MemoryFeatureStore())
    assert set(feed.waiting) == {"NA"} and feed.invalid == 2


def test_csv_from_a_spreadsheet_bom_and_float_times(tmp_path):
    """Excel's UTF-8 BOM before the header, and times a table wrote as 1700000000000.0."""
    lines = [csv_line(good(0)).encode(), csv_line(good(1)).encode().replace(b"1700000001000", b"1700000001000.0")]
    summary, scored, errors = run(tmp_path, "in.csv", b"\xef\xbb\xbf" + csv_file(lines))
    assert scored == ["e0", "e1"] and summary.invalid == 0, errors
    bad = [csv_line(good(0)).encode().replace(b"1700000000000", b"1700000000000.5")]
    _, scored, errors = run(tmp_path, "in2.csv", csv_file(bad))
    assert scored == [] and errors[0]["field"] == "event_time_ms"
