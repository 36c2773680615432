"""The batch scorer (engine/interfaces/file_scoring.py): formats in and out, chunking, bad rows, order checks.
The pipeline is the small fake one of test_pipeline.py; the real one is exercised by
tests/integration/test_interfaces_agree.py through `tollgate score`."""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from engine.interfaces.file_rows import file_format
from engine.interfaces.file_scoring import read_events, row_to_event, score_file
from engine.records import EventValidationError, TransactionEvent, Verdict
from tests.unit.test_pipeline import ev, make


def events(n: int) -> list[TransactionEvent]:
    return [ev(i, amount=float(5 + 37 * i % 900), customer=f"c{i % 4}", memo="rent June" if i % 3 == 0 else None)
            for i in range(n)]


def write(path, evs, fmt):
    rows = [e.to_dict() for e in evs]
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        frame = pd.DataFrame(rows)
        frame["attributes"] = [json.dumps(a) for a in frame["attributes"]]
        frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path)


@pytest.mark.parametrize("fmt_in", ["jsonl", "csv", "parquet"])
@pytest.mark.parametrize("fmt_out", ["jsonl", "csv", "parquet"])
def test_every_format_gives_the_pipelines_verdicts(tmp_path, fmt_in, fmt_out):
    evs = events(40)
    src, out = tmp_path / f"in.{fmt_in}", tmp_path / f"out.{fmt_out}"
    write(src, evs, fmt_in)
    pipe, _ = make()
    summary = score_file(pipe, src, out, chunk_rows=7, batch_size=5, progress=False)
    assert (summary.rows, summary.scored, summary.invalid, summary.out_of_order) == (40, 40, 0, 0)
    direct, _ = make()
    expected = direct.decide_batch(evs)
    if fmt_out == "jsonl":
        got = [Verdict.from_dict(json.loads(line)) for line in out.read_text().splitlines()]
        assert [(v.event_id, v.verdict, v.reasons) for v in got] == [(v.event_id, v.verdict, v.reasons) for v in expected]
    else:
        frame = pd.read_csv(out) if fmt_out == "csv" else pq.read_table(out).to_pandas()
        assert list(frame["event_id"]) == [v.event_id for v in expected]
        assert list(frame["verdict"]) == [v.verdict.value for v in expected]
        assert json.loads(frame["reasons"][0])[0]["kind"] == expected[0].reasons[0].kind.value
    assert sum(summary.verdicts.values()) == 40


def test_bad_rows_are_listed_not_scored(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    good = [e.to_dict() for e in events(3)]
    bad_amount = dict(good[1], event_id="bad1", amount=-3)
    missing = {k: v for k, v in good[2].items() if k != "currency"}
    src.write_text("\n".join([json.dumps(good[0]), json.dumps(bad_amount), "{not json", json.dumps(missing),
                              "[1, 2]", json.dumps(good[1])]) + "\n")
    pipe, _ = make()
    summary = score_file(pipe, src, out, progress=False)
    assert (summary.rows, summary.scored, summary.invalid) == (6, 2, 4)
    errors = [json.loads(x) for x in summary.errors_path.read_text().splitlines()]
    assert [e["row"] for e in errors] == [2, 3, 4, 5] and [e["line"] for e in errors] == [2, 3, 4, 5]
    assert "amount" in errors[0]["error"] and "not JSON" in errors[1]["error"] and "currency" in errors[2]["error"]
    assert "invalid rows listed in" in summary.describe()


def test_rows_going_back_in_time_are_counted(tmp_path):
    evs = events(10)
    evs[4], evs[5] = evs[5], evs[4]
    src, out = tmp_path / "in.jsonl", tmp_path / "out.csv"
    write(src, evs, "jsonl")
    pipe, _ = make()
    summary = score_file(pipe, src, out, progress=False)
    assert summary.out_of_order == 1 and "sort the file by event_time_ms" in summary.describe()


def test_simulator_files_round_trip_with_their_attributes(tmp_path):
    from engine.offline.simulate.frames import events_from_frame, frame_from_events
    from engine.offline.simulate.simulator import SimConfig, Simulator

    day = next(iter(Simulator(SimConfig(customers=30, terminals=60, days=1, seed=2)).days()))
    evs = events_from_frame(day.events)[:20]
    assert any(e.attributes for e in evs)
    src = tmp_path / "sim.csv"
    frame_from_events(evs).to_csv(src, index=False)
    assert [e for chunk in read_events(src, 8) for e in chunk] == evs


def test_chunks_are_bounded(tmp_path):
    src = tmp_path / "in.parquet"
    write(src, events(25), "parquet")
    sizes = [len(c) for c in read_events(src, 10)]
    assert sizes == [10, 10, 5]


def test_table_quirks_become_valid_events():
    row = {"event_id": "17", "event_time_ms": 1_700_000_000_000.0, "customer_id": "4", "account_id": "a",
           "terminal_id": "t", "merchant_category": "5411", "amount": 3.5, "currency": "EUR",
           "channel": "ecommerce", "country": "BE", "memo": float("nan"), "attributes": [("k", "v")],
           "attr_entry_mode": "chip", "attr_wallet": None}
    e = row_to_event(row)
    assert (e.event_id, e.customer_id, e.merchant_category, e.memo) == ("17", "4", "5411", None)
    assert dict(e.attributes) == {"k": "v", "entry_mode": "chip"}
    assert isinstance(e.event_time_ms, int)


@pytest.mark.parametrize("field, value", [("event_id", 17), ("customer_id", 4.0), ("memo", 12345),
                                          ("memo", {"a": 1}), ("channel", ["ecommerce"]),
                                          ("terminal_id", "t\x00"), ("attr_wallet", 3)])
def test_a_number_where_text_belongs_is_refused_as_over_http(field, value):
    """The rules of every entry point (records.event_from_json): never converted to text."""
    row = {"event_id": "e1", "event_time_ms": 1_700_000_000_000, "customer_id": "c", "account_id": "a",
           "terminal_id": "t", "merchant_category": "5411", "amount": 3.5, "currency": "EUR",
           "channel": "ecommerce", "country": "BE", field: value}
    with pytest.raises(EventValidationError) as info:
        row_to_event(row)
    assert info.value.field_name == (field if not field.startswith("attr_") else "attributes")


def test_empty_input_leaves_a_valid_empty_output(tmp_path):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.parquet"
    src.write_text("")
    pipe, _ = make()
    assert score_file(pipe, src, out, progress=False).rows == 0
    assert pq.read_table(out).num_rows == 0


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="use .csv, .parquet or .jsonl"):
        file_format(tmp_path / "x.xlsx")
