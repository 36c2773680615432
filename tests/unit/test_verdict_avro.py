"""The verdicts' Avro bodies written from a ``VerdictBatch``'s columns are byte for byte
fastavro's, and the batch is the sequence of records it was built from."""

from __future__ import annotations

import io

import pytest
from fastavro import schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import Decision, Reason, ReasonKind, Verdict, VerdictBatch
from engine.wire.codec import Codec
from engine.wire.verdict_avro import WRITES_SCHEMA, schema_fingerprint, write_verdicts

CODEC = Codec()
SCHEMA = CODEC.verdicts.reader_schema

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
long_text = st.one_of(text, st.text(st.characters(blacklist_categories=("Cs",)), min_size=60, max_size=9000))
double = st.floats(allow_nan=True, allow_infinity=True)
int64 = st.integers(-(2**63), 2**63 - 1)
decision_names = st.sampled_from(["pass", "review", "reject"])
probabilities = st.one_of(
    # what the policy writes: the three verdicts, in DECISIONS order (the writer's one-pack path)
    st.tuples(double, double, double).map(lambda p: dict(zip(("pass", "review", "reject"), p))),
    st.dictionaries(st.one_of(decision_names, text), double, max_size=4),  # anything else the schema allows
)
reasons = st.lists(st.builds(Reason, st.sampled_from(list(ReasonKind)), text, long_text), max_size=70)

verdicts = st.builds(
    Verdict, event_id=text, customer_id=text, verdict=st.sampled_from(list(Decision)), confidence=double,
    probabilities=probabilities, risk_score=double, reasons=reasons.map(tuple),
    model_version=st.sampled_from(["m1", "bootstrap-20261206"]) | text, rules_version=st.sampled_from(["r1"]) | text,
    decision_latency_ms=double, decided_at_ms=int64, event_time_ms=int64,
    detector_score=st.one_of(st.none(), double))


def fastavro_body(verdict: Verdict) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, SCHEMA, verdict.to_dict())
    return buffer.getvalue()


def test_the_shipped_schema_is_the_one_written_directly():
    """Fails when schemas/verdict.avsc changes: update ``write_verdicts`` for the new
    schema, then ``WRITES_SCHEMA`` to the fingerprint printed here."""
    assert schema_fingerprint(SCHEMA) == WRITES_SCHEMA, schema_fingerprint(SCHEMA)
    assert CODEC.verdicts.writes_directly


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(verdicts, max_size=6))
def test_each_body_is_fastavros(batch):
    assert write_verdicts(VerdictBatch.of(batch)) == [fastavro_body(v) for v in batch]


@settings(max_examples=100, deadline=None)
@given(n=st.sampled_from([0, 1, 63, 64, 65, 127, 128, 8191, 8192, 2**31, -1, -64, -65, -(2**63), 2**63 - 1]))
def test_longs_at_every_varint_boundary(n):
    v = Verdict("e", "c", Decision.PASS, 0.5, {}, 0.1, (), "m", "r", 1.0, n, -n if n > -(2**63) else n)
    # two rows with one decision time: the batch encodes it once and must reuse it right
    assert write_verdicts(VerdictBatch.of([v, v])) == [fastavro_body(v)] * 2


def test_the_codec_frames_it_and_it_decodes_back():
    verdict = Verdict("e1", "c1", Decision.REVIEW, 0.61, {"pass": 0.39, "review": 0.4, "reject": 0.21}, 0.3,
                      (Reason(ReasonKind.MODEL, "threshold_review", "p(review)+p(reject)=0.610 >= 0.5"),
                       Reason(ReasonKind.RULE, "velocity", "review: ünïcödé détail " * 5)),
                      "bootstrap-1", "rules-abc", 4.25, 1_765_000_000_000, 1_764_999_999_000, 0.12)
    encoded = CODEC.encode_verdict(verdict)
    assert encoded == CODEC.verdicts.frame() + fastavro_body(verdict)
    assert CODEC.decode_verdict(encoded) == verdict
    assert CODEC.encode_verdicts(VerdictBatch.of([verdict, verdict])) == [encoded, encoded]


def test_a_record_the_schema_refuses_is_never_written():
    """No bytes for what fastavro refuses; the codec then lets fastavro raise its own error."""
    bad = Verdict("e", "c", "maybe", 0.5, {}, 0.1, (), "m", "r", 1.0, 1, 1)  # type: ignore[arg-type]
    with pytest.raises(Exception):  # noqa: B017 - fastavro's own error type is not part of its API
        fastavro_body(bad)
    with pytest.raises(ValueError):  # not a Decision: refused when the batch is built
        VerdictBatch.of([bad])
    good = Verdict("e", "c", Decision.PASS, 0.5, {}, 0.1, (), "m", "r", 1.0, 1, 1)
    columns = VerdictBatch.of([good])
    with pytest.raises(Exception):  # noqa: B017
        write_verdicts(VerdictBatch(*(["high"] if f == "confidences" else getattr(columns, f)
                                      for f in ("event_ids", "customer_ids", "verdicts", "confidences",
                                                "probabilities", "risk_scores", "reasons", "model_versions",
                                                "rules_versions", "decision_latencies_ms", "decided_at_ms",
                                                "event_times_ms", "detector_scores"))))


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8193])
def test_strings_at_every_length_boundary(length):
    s = "x" * length
    v = Verdict(s, "é" * (length // 2), Decision.REJECT, 0.5, {s: 0.5}, 0.1,
                (Reason(ReasonKind.RULE, s, s),) * (length % 70), s, "r", 1.0, 1, 1, 0.5)
    assert write_verdicts(VerdictBatch.of([v])) == [fastavro_body(v)]


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(verdicts, max_size=8), data=st.data())
def test_the_batch_is_the_sequence_of_its_records(batch, data):
    """Indexing, slicing, iterating and ``take`` give back the records the batch was made
    of (NaN compared as itself: a record equals itself only by identity of its floats)."""
    columns = VerdictBatch.of(batch)
    as_dicts = [repr(v.to_dict()) for v in batch]
    assert len(columns) == len(batch)
    assert [repr(v.to_dict()) for v in columns] == as_dicts
    assert [repr(columns[i].to_dict()) for i in range(len(batch))] == as_dicts
    assert [repr(v.to_dict()) for v in columns[1::2]] == as_dicts[1::2]
    picked = data.draw(st.lists(st.integers(0, len(batch) - 1), max_size=10)) if batch else []
    assert [repr(v.to_dict()) for v in columns.take(picked)] == [as_dicts[i] for i in picked]
    assert write_verdicts(columns.take(picked)) == [fastavro_body(batch[i]) for i in picked]


def test_columns_of_different_lengths_are_refused():
    v = Verdict("e", "c", Decision.PASS, 0.5, {}, 0.1, (), "m", "r", 1.0, 1, 1)
    columns = VerdictBatch.of([v, v])
    with pytest.raises(ValueError, match="differ in length"):
        VerdictBatch(*(column[:1] if i == 4 else column for i, column in enumerate(columns._columns())))


def test_the_codec_falls_back_to_fastavro_for_another_schema_and_for_a_refused_value():
    v = Verdict("e1", "c1", Decision.REVIEW, 0.5, {"pass": 0.2, "review": 0.3, "reject": 0.5}, 0.25,
                (Reason(ReasonKind.MODEL, "x", "y"),), "m", "r", 1.0, 1, -1, 0.3)
    batch = VerdictBatch.of([v, v])
    codec = Codec()
    direct = codec.encode_verdicts(batch)
    codec.verdicts.writes_directly = False  # what a changed schema file sets
    assert codec.encode_verdicts(batch) == direct
    codec.verdicts.writes_directly = True
    refused = VerdictBatch(*(["high", "high"] if i == 3 else column for i, column in enumerate(batch._columns())))
    with pytest.raises(ValueError, match="high"):  # fastavro's own error, not the direct writer's
        codec.encode_verdicts(refused)
