"""Decode stage: ``RawRecord`` bytes → validated ``TransactionEvent``, or a ``DeadLetter``.

Why it looks like this:

* A record that cannot be decoded (bad framing, unknown schema id, corrupt Avro), that
  decodes but breaks the schema contract (a required field missing), or that is out
  of range (negative amount, year 2300) is an upstream bug, not a transient fault.
  Retrying it would block its partition forever, so it becomes a ``DeadLetter``
  (``engine.wire.codec``) that the emit stage writes to ``tx.events.dlq`` *in the same
  transaction* as the batch's verdicts and offsets: a dead letter is exactly-once too,
  and the worker keeps going.
* The codec raises ``DecodeError`` carrying the raw value, key, headers and position;
  the dead letter keeps the original bytes and names the stage (``decode`` or
  ``validate``), the error class and message, and the source position.
* Only ``DecodeError`` is dead-lettered. Anything else (a bug in this process)
  propagates: dead-lettering it would silently discard good events.

>>> from engine.wire.codec import Codec
>>> from engine.stages.consume import RawRecord
>>> rec = RawRecord("tx.events", 2, 41, b"k", b"\\x00junk", (), 0, 0.0)
>>> out = DecodeStage(Codec())([rec])
>>> out.events, out.dead_letters[0].stage, out.dead_letters[0].source_offset
([], 'decode', 41)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.records import SourcePosition, TransactionEvent
from engine.stages.consume import RawRecord
from engine.wire.codec import DeadLetter, DecodeError, Headers


class EventDecoder(Protocol):
    """What the decode stage needs from ``engine.wire.codec.Codec``."""

    def decode_event(self, value: bytes | None, headers: Headers = None,
                     source: SourcePosition | None = None, key: bytes | None = None) -> TransactionEvent: ...


@dataclass(slots=True)
class Decoded:
    """The decode stage's output for one batch, in input order."""

    events: list[TransactionEvent]
    #: Arrival time (epoch ms) of each event, aligned with ``events``.
    arrival_ms: list[float]
    dead_letters: list[DeadLetter]


class DecodeStage:
    """Turns a batch of raw records into events plus dead letters; never stops on bad input."""

    __slots__ = ("_codec",)

    def __init__(self, codec: EventDecoder):
        self._codec = codec

    def __call__(self, records: Sequence[RawRecord]) -> Decoded:
        out = Decoded([], [], [])
        now_ms = int(time.time() * 1000)
        for rec in records:
            try:
                event = self._codec.decode_event(rec.value, rec.headers, rec.position, rec.key)
            except DecodeError as exc:
                out.dead_letters.append(DeadLetter.from_error(exc, now_ms))
                continue
            out.events.append(event)
            out.arrival_ms.append(rec.arrival_ms)
        return out
