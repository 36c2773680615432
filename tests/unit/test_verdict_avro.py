"""The verdict's Avro body written directly is byte for byte fastavro's."""

from __future__ import annotations

import io

import pytest
from fastavro import schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import Decision, Reason, ReasonKind, Verdict
from engine.wire.codec import Codec
from engine.wire.verdict_avro import WRITES_SCHEMA, schema_fingerprint, write_verdict

CODEC = Codec()
SCHEMA = CODEC.verdicts.reader_schema

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
long_text = st.one_of(text, st.text(st.characters(blacklist_categories=("Cs",)), min_size=60, max_size=9000))
double = st.floats(allow_nan=True, allow_infinity=True)
int64 = st.integers(-(2**63), 2**63 - 1)

records = st.fixed_dictionaries({
    "event_id": text, "customer_id": text,
    "verdict": st.sampled_from(["pass", "review", "reject"]),
    "confidence": double,
    "probabilities": st.dictionaries(st.one_of(st.sampled_from(["pass", "review", "reject"]), text), double,
                                     max_size=4),
    "risk_score": double,
    "reasons": st.lists(st.fixed_dictionaries({"kind": text, "code": text, "detail": long_text}), max_size=70),
    "model_version": text, "rules_version": text,
    "decision_latency_ms": double,
    "decided_at_ms": int64, "event_time_ms": int64,
    "detector_score": st.one_of(st.none(), double),
})


def fastavro_body(record) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, SCHEMA, record)
    return buffer.getvalue()


def test_the_shipped_schema_is_the_one_written_directly():
    """Fails when schemas/verdict.avsc changes: update ``write_verdict`` for the new
    schema, then ``WRITES_SCHEMA`` to the fingerprint printed here."""
    assert schema_fingerprint(SCHEMA) == WRITES_SCHEMA, schema_fingerprint(SCHEMA)
    assert CODEC.verdicts.writes_directly


@settings(max_examples=400, deadline=None)
@given(record=records)
def test_the_body_is_fastavros(record):
    assert write_verdict(record) == fastavro_body(record)


@settings(max_examples=100, deadline=None)
@given(n=st.sampled_from([0, 1, 63, 64, 65, 127, 128, 8191, 8192, 2**31, -1, -64, -65, -(2**63), 2**63 - 1]))
def test_longs_at_every_varint_boundary(n):
    record = {"event_id": "e", "customer_id": "c", "verdict": "pass", "confidence": 0.5, "probabilities": {},
              "risk_score": 0.1, "reasons": [], "model_version": "m", "rules_version": "r",
              "decision_latency_ms": 1.0, "decided_at_ms": n, "event_time_ms": -n if n > -(2**63) else n,
              "detector_score": None}
    assert write_verdict(record) == fastavro_body(record)


def test_the_codec_frames_it_and_it_decodes_back():
    verdict = Verdict("e1", "c1", Decision.REVIEW, 0.61, {"pass": 0.39, "review": 0.4, "reject": 0.21}, 0.3,
                      (Reason(ReasonKind.MODEL, "threshold_review", "p(review)+p(reject)=0.610 >= 0.5"),
                       Reason(ReasonKind.RULE, "velocity", "review: ünïcödé détail " * 5)),
                      "bootstrap-1", "rules-abc", 4.25, 1_765_000_000_000, 1_764_999_999_000, 0.12)
    encoded = CODEC.encode_verdict(verdict)
    assert encoded == CODEC.verdicts.frame() + fastavro_body(verdict.to_dict())
    assert CODEC.decode_verdict(encoded) == verdict


def test_a_record_the_schema_refuses_is_never_written():
    """No bytes for what fastavro refuses (the codec then lets fastavro raise its own error)."""
    record = {"event_id": "e", "customer_id": "c", "verdict": "maybe", "confidence": 0.5, "probabilities": {},
              "risk_score": 0.1, "reasons": [], "model_version": "m", "rules_version": "r",
              "decision_latency_ms": 1.0, "decided_at_ms": 1, "event_time_ms": 1, "detector_score": None}
    with pytest.raises(Exception):  # noqa: B017 - fastavro's own error type is not part of its API
        fastavro_body(record)
    with pytest.raises(KeyError):
        write_verdict(record)
    with pytest.raises(Exception):  # noqa: B017
        write_verdict({**record, "verdict": "pass", "confidence": "high"})


@pytest.mark.parametrize("length", [0, 1, 63, 64, 65, 127, 128, 8191, 8192, 8193])
def test_strings_at_every_length_boundary(length):
    s = "x" * length
    record = {"event_id": s, "customer_id": "é" * (length // 2), "verdict": "reject", "confidence": 0.5,
              "probabilities": {s: 0.5}, "risk_score": 0.1,
              "reasons": [{"kind": s, "code": s, "detail": s}] * (length % 70), "model_version": s,
              "rules_version": "r", "decision_latency_ms": 1.0, "decided_at_ms": 1, "event_time_ms": 1,
              "detector_score": 0.5}
    assert write_verdict(record) == fastavro_body(record)
