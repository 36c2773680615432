"""Codec throughput: decode/encode cost per message, side by side with baselines.

The decode stage runs on every message, so the codec compiles schemas once and
resolves each writer id once. This prints, in one run, µs per message for:

* ``avro``      — ``Codec.decode_event`` on the current layout (framing, fastavro,
                  typed record, ``validate()``): what the worker pays;
* ``avro v0``   — the same for an old writer (schema resolution with defaults);
* ``json``      — ``content-type: application/json`` events;
* ``floor``     — bare ``fastavro.schemaless_reader`` with a parsed schema (no framing,
                  record or validation): the part the codec cannot remove;
* ``naive``     — fastavro handed the *unparsed* schema dict each message, as code
                  that skips precompilation would do;
* ``encode``    — ``Codec.encode_event`` (validate + frame + fastavro);
* ``verdict``   — the worker's emit, ``Codec.encode_verdicts`` on batches of 512 verdicts
                  as the pipeline hands them over (``VerdictBatch``, written from its
                  columns by ``engine.wire.verdict_avro``), against ``Codec.encode_verdict``
                  one record at a time and fastavro's generic writer on the same records
                  (verdicts shaped as the pipeline makes them: the threshold reason on
                  every one, detector and rule reasons on a few; one decision time per
                  batch).

Run:  nice python ops/bench/codec.py [--n 20000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import json
import platform
import time

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
from fastavro import schemaless_reader, schemaless_writer

from engine.offline.simulate.frames import events_from_frame
from engine.offline.simulate.simulator import SimConfig, Simulator
from engine.records import Decision, Reason, ReasonKind, Verdict, VerdictBatch
from engine.settings import Settings
from engine.wire.codec import JSON_HEADERS, Codec
from engine.wire.schema_catalog import SCHEMA_DIR, load_schema_file, parse_plain, strip_timestamp_types


def timed_us(fn, items) -> float:
    t0 = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - t0) / len(items) * 1e6


def verdicts_for(events: list) -> list[Verdict]:
    """One verdict per event, with the reasons the pipeline gives such an event."""
    out = []
    for i, e in enumerate(events):
        p_reject = 0.6 if i % 50 == 0 else 0.02
        probs = {"pass": 0.95 - p_reject, "review": 0.03 + p_reject / 2, "reject": p_reject}
        mass = probs["review"] + probs["reject"]
        reasons = [Reason(ReasonKind.MODEL, "threshold_pass" if mass < 0.5 else "threshold_review",
                          f"p(review)+p(reject)={mass:.3f} < 0.5 (pass={probs['pass']:.3f} "
                          f"review={probs['review']:.3f} reject={probs['reject']:.3f})")]
        if i % 20 == 0:
            reasons.append(Reason(ReasonKind.DETECTOR, "injection_screened", "user text score 0.012 < threshold "
                                  "0.954: not flagged"))
        if i % 50 == 0:
            reasons.append(Reason(ReasonKind.RULE, "velocity_burst", "review: more than 8 payments in an hour"))
        out.append(Verdict(e.event_id, e.customer_id, Decision.PASS if mass < 0.5 else Decision.REVIEW,
                           max(probs.values()), probs, p_reject, tuple(reasons), "bootstrap-20261206-201820",
                           "rules-3f9a1c2b", 7.5 + i % 13, 1_765_000_000_000 + i // BATCH, e.event_time_ms,
                           0.012 if i % 20 == 0 else None))
    return out


#: Verdicts per batch in the "from columns" case: the worker's ``batch.max_events``.
BATCH = 512


def interleaved_best(cases: dict, rounds: int) -> dict[str, float]:
    """Best µs/msg per case over ``rounds``, the cases taking turns within each round, so
    a burst of load on a shared machine hits every case alike and ratios stay fair."""
    best = {name: float("inf") for name in cases}
    for _ in range(rounds):
        for name, (fn, items) in cases.items():
            best[name] = min(best[name], timed_us(fn, items))
    return best


def fastavro_verdict(codec: Codec, verdict: Verdict) -> bytes:
    """What ``Codec.encode_verdict`` did before the body was written directly."""
    buffer = io.BytesIO()
    buffer.write(codec.verdicts.frame())
    schemaless_writer(buffer, codec.verdicts.reader_schema, verdict.to_dict())
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="messages per case")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the best round counts")
    args = parser.parse_args()

    events = []
    for day in Simulator(SimConfig(days=30, seed=0, drain_outcomes=False)).days():
        events.extend(events_from_frame(day.events))
        if len(events) >= args.n:
            break
    events = events[: args.n]
    codec = Codec(Settings())
    avro = [codec.encode_event(e) for e in events]
    as_json = [codec.events.encode_json(e) for e in events]
    v0_schema = parse_plain(json.loads((SCHEMA_DIR / "history/transaction_event.v0.avsc").read_text()))
    v0_fields = {f["name"] for f in v0_schema["fields"]}
    v0 = []
    for e in events:
        buf = io.BytesIO()
        buf.write(b"\x00" + (101).to_bytes(4, "big"))
        schemaless_writer(buf, v0_schema, {k: v for k, v in e.to_dict().items() if k in v0_fields})
        v0.append(buf.getvalue())
    parsed = codec.events.reader_schema
    unparsed = strip_timestamp_types(load_schema_file("event"))
    headers = list(JSON_HEADERS)
    verdicts = verdicts_for(events)
    assert codec.verdicts.writes_directly and all(
        codec.encode_verdict(v) == fastavro_verdict(codec, v) for v in verdicts[:500])
    # whole batches of the verdicts, as the pipeline hands them to emit (the last may be short)
    batches = [VerdictBatch.of(verdicts[i:i + BATCH]) for i in range(0, len(verdicts), BATCH)]
    assert codec.encode_verdicts(batches[0]) == [fastavro_verdict(codec, v) for v in verdicts[:BATCH]]

    cases = interleaved_best({
        "avro (worker path)": (codec.decode_event, avro),
        "avro v0 (resolved)": (codec.decode_event, v0),
        "json": (lambda raw: codec.decode_event(raw, headers), as_json),
        "floor: fastavro only": (lambda raw: schemaless_reader(io.BytesIO(raw[5:]), parsed), avro),
        "naive: unparsed schema": (lambda raw: schemaless_reader(io.BytesIO(raw[5:]), unparsed), avro),
        "encode avro": (codec.encode_event, events),
        "verdict: from columns": (codec.encode_verdicts, batches),
        "verdict: one record": (codec.encode_verdict, verdicts),
        "verdict: fastavro": (lambda v: fastavro_verdict(codec, v), verdicts),
    }, args.rounds)
    base = cases["avro (worker path)"]
    print(f"codec benchmark: {len(events)} simulated events, mean Avro size "
          f"{sum(map(len, avro)) / len(avro):.0f} B, JSON {sum(map(len, as_json)) / len(as_json):.0f} B; "
          f"python {platform.python_version()} on {platform.machine()}")
    print(f"{'case':26} {'µs/msg':>8} {'msg/s':>10} {'× worker path':>14}")
    # a batch case's time is per batch: per message, divide by the messages in a batch
    cases["verdict: from columns"] *= len(batches) / len(verdicts)
    for name, us in cases.items():
        print(f"{name:26} {us:8.2f} {1e6 / us:10.0f} {us / base:14.2f}")


if __name__ == "__main__":
    main()
