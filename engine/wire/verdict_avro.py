"""The verdicts' Avro bodies, written field by field for ``schemas/verdict.avsc``.

Why: every decided event is one verdict record, and fastavro's generic writer walks
the schema for every record. These lines write the same bytes from the batch's columns
(``engine.records.VerdictBatch``): strings and doubles packed directly, the probability
map's fixed keys and the confidence and risk in one ``struct`` call, and what a batch
shares (versions, decision time) encoded once (``python ops/bench/codec.py``, the
"verdict" rows; figures in docs/performance.md, "Verdicts written directly" and
"Verdicts from columns").

The bytes must be exactly fastavro's: ``tests/unit/test_verdict_avro.py`` holds them to
``fastavro.schemaless_writer`` on random verdicts. The writer is used only while the
bundled schema is the one it was written for (``WRITES_SCHEMA``, its parsing canonical
form's SHA-256): change the schema and the codec falls back to fastavro, and that test
says the writer needs the same change.

>>> from engine.records import Verdict
>>> v = Verdict("e1", "c1", Decision.REVIEW, 0.5, {}, 0.25, (), "m", "r", 1.0, 1, -1)
>>> write_verdicts(VerdictBatch.of([v]))[0][:7]
b'\\x04e1\\x04c1\\x02'
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from struct import Struct
from typing import Any

from fastavro.schema import to_parsing_canonical_form

from engine.records import DECISIONS, Decision, ReasonKind, VerdictBatch

#: SHA-256 of the parsing canonical form of the verdict schema this module writes.
WRITES_SCHEMA = "5486f4c794c6f3ee0b50d77d777594e74b83acdb4d964821eeb72656a7ed837f"

_DOUBLE = Struct("<d")


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


_VERDICT_BYTE = {Decision.PASS: 0, Decision.REVIEW: 2, Decision.REJECT: 4}  # enum index, zig-zag encoded
_KIND_BYTES = {kind: _string(kind.value) for kind in ReasonKind}
_PROBABILITY_KEYS = tuple(d.value for d in DECISIONS)
#: The verdict symbol, the confidence, the three probabilities as one map block (their
#: keys in ``DECISIONS`` order, as the policy writes them) and the risk score: one pack.
_HEAD_KEYS = tuple(_string(k) for k in _PROBABILITY_KEYS)
_HEAD = Struct("<Bd" + "B" + "".join(f"{len(k)}sd" for k in _HEAD_KEYS) + "Bd")
_HEAD_FALLBACK = Struct("<Bd")


def write_verdicts(batch: VerdictBatch) -> list[bytes]:
    """The Avro body of each verdict of ``batch``, read from its columns."""
    pack, head, keys = _DOUBLE.pack, _HEAD.pack, _HEAD_KEYS
    k0, k1, k2 = keys
    versions: dict[tuple[str, str], bytes] = {}
    decided: dict[int, bytes] = {}
    out: list[bytes] = []
    for (event_id, customer_id, verdict, confidence, probabilities, risk, reasons, model_version,
         rules_version, latency, decided_at, event_time, score) in zip(
            batch.event_ids, batch.customer_ids, batch.verdicts, batch.confidences, batch.probabilities,
            batch.risk_scores, batch.reasons, batch.model_versions, batch.rules_versions,
            batch.decision_latencies_ms, batch.decided_at_ms, batch.event_times_ms, batch.detector_scores):
        parts = [_string(event_id), _string(customer_id)]
        if tuple(probabilities) == _PROBABILITY_KEYS:
            parts.append(head(_VERDICT_BYTE[verdict], confidence, 6, k0, probabilities["pass"],
                              k1, probabilities["review"], k2, probabilities["reject"], 0, risk))
        else:  # any other map: its own block (or none when empty)
            parts.append(_HEAD_FALLBACK.pack(_VERDICT_BYTE[verdict], confidence))
            if probabilities:
                parts.append(_long(len(probabilities)))
                for key, value in probabilities.items():
                    parts.append(_repeated(key))
                    parts.append(pack(value))
            parts.append(b"\x00")
            parts.append(pack(risk))
        if reasons:
            parts.append(_long(len(reasons)))
            for reason in reasons:
                parts.append(_KIND_BYTES[reason.kind])
                parts.append(_repeated(reason.code))
                parts.append(_string(reason.detail))
        parts.append(b"\x00")
        named = versions.get((model_version, rules_version))
        if named is None:
            named = versions[(model_version, rules_version)] = _string(model_version) + _string(rules_version)
        parts.append(named)
        parts.append(pack(latency))
        at = decided.get(decided_at)
        if at is None:
            at = decided[decided_at] = _long(decided_at)
        parts.append(at)
        parts.append(_long(event_time))
        parts.append(b"\x00" if score is None else b"\x02" + pack(score))
        out.append(b"".join(parts))
    return out
