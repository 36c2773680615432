"""The verdict's Avro body, written field by field for ``schemas/verdict.avsc``.

Why: every decided event is one verdict record, and fastavro's generic writer walks
the schema for every record; these few lines write the same bytes in a little over half
its time (``python ops/bench/codec.py``, the "verdict" rows; figures in
docs/performance.md, "Verdicts written directly").

The bytes must be exactly fastavro's: ``tests/unit/test_verdict_avro.py`` holds them to
``fastavro.schemaless_writer`` on random verdicts. The writer is used only while the
bundled schema is the one it was written for (``WRITES_SCHEMA``, its parsing canonical
form's SHA-256): change the schema and the codec falls back to fastavro, and that test
says the writer needs the same change.

>>> body = write_verdict({"event_id": "e1", "customer_id": "c1", "verdict": "review",
...     "confidence": 0.5, "probabilities": {}, "risk_score": 0.25, "reasons": [],
...     "model_version": "m", "rules_version": "r", "decision_latency_ms": 1.0,
...     "decided_at_ms": 1, "event_time_ms": -1, "detector_score": None})
>>> body[:7]
b'\\x04e1\\x04c1\\x02'
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from struct import Struct
from typing import Any

from fastavro.schema import to_parsing_canonical_form

#: SHA-256 of the parsing canonical form of the verdict schema this module writes.
WRITES_SCHEMA = "5486f4c794c6f3ee0b50d77d777594e74b83acdb4d964821eeb72656a7ed837f"

_DOUBLE = Struct("<d")
_SYMBOLS = {"pass": b"\x00", "review": b"\x02", "reject": b"\x04"}  # enum index, zig-zag encoded


def schema_fingerprint(parsed_schema: Mapping[str, Any]) -> str:
    """SHA-256 of a parsed schema's parsing canonical form (what ``WRITES_SCHEMA`` pins)."""
    return hashlib.sha256(to_parsing_canonical_form(parsed_schema).encode()).hexdigest()


def _long(n: int) -> bytes:
    """Avro long: zig-zag, then base-128 varint, low group first."""
    n = (n << 1) ^ (n >> 63)
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]
#: Encoded strings that repeat on every verdict (versions, reason kinds and codes, map keys).
_REPEATED: dict[str, bytes] = {}


def _string(s: str) -> bytes:
    raw = s.encode()
    n = len(raw)
    return (_ONE_BYTE[n << 1] if n < 0x40 else _long(n)) + raw


def _repeated(s: str) -> bytes:
    found = _REPEATED.get(s)
    if found is None:
        if len(_REPEATED) > 4096:  # rule ids and versions are few; bound it anyway
            _REPEATED.clear()
        found = _REPEATED[s] = _string(s)
    return found


def write_verdict(record: Mapping[str, Any]) -> bytes:
    """The Avro body of a verdict record as ``Verdict.to_dict`` builds it."""
    pack = _DOUBLE.pack
    out = bytearray(_string(record["event_id"]))
    out += _string(record["customer_id"])
    out += _SYMBOLS[record["verdict"]]
    out += pack(record["confidence"])
    probabilities = record["probabilities"]
    if probabilities:
        out += _long(len(probabilities))
        for key, value in probabilities.items():
            out += _repeated(key)
            out += pack(value)
    out += b"\x00"
    out += pack(record["risk_score"])
    reasons = record["reasons"]
    if reasons:
        out += _long(len(reasons))
        for reason in reasons:
            out += _repeated(reason["kind"])
            out += _repeated(reason["code"])
            out += _string(reason["detail"])
    out += b"\x00"
    out += _repeated(record["model_version"])
    out += _repeated(record["rules_version"])
    out += pack(record["decision_latency_ms"])
    out += _long(record["decided_at_ms"])
    out += _long(record["event_time_ms"])
    score = record["detector_score"]
    if score is None:
        out += b"\x00"
    else:
        out += b"\x02"
        out += pack(score)
    return bytes(out)
