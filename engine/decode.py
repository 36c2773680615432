"""Decode stage: ``RawRecord`` bytes → validated ``TransactionEvent``, or a ``DeadLetter``.

Why it looks like this:

* A record that cannot be decoded (bad framing, unknown schema id, corrupt Avro), that
  decodes but breaks the schema contract (a required field missing), or that is out
  of range (negative amount, year 2300) is an upstream bug, not a transient fault.
  Retrying it would block its partition forever, so it becomes a ``DeadLetter`` that
  the emit stage writes to ``tx.events.dlq`` *in the same transaction* as the batch's
  verdicts and offsets: a dead letter is exactly-once too, and the worker keeps going.
* The dead letter keeps the original key and value byte for byte, and names the stage,
  the error class and message, and the source topic/partition/offset, both in the
  Avro body and in Kafka headers (``dead_letter_headers``) so tools that never decode
  Avro can still route and count them.
* Only the codec's own errors and validation errors are dead-lettered. Anything else
  (a bug in this process) propagates: dead-lettering it would silently discard good
  events.

>>> from engine.consume import RawRecord
>>> rec = RawRecord("tx.events", 2, 41, b"k", b"\\x00junk", (), 0, 0.0)
>>> dl = DeadLetter.from_error(rec, "decode", ValueError("bad magic byte"), failed_at_ms=5)
>>> dict(dead_letter_headers(dl))["tollgate.dlq.source_offset"]
b'41'
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

from engine.consume import RawRecord
from engine.records import EventValidationError, SourcePosition, TransactionEvent

#: Longest error message kept in a header: a header is not a log file.
MAX_ERROR_MESSAGE = 1_000


class EventDecoder(Protocol):
    """What the decode stage needs from ``engine.codec.EventCodec``."""

    def decode_event(self, value: bytes, source: SourcePosition | None = None) -> TransactionEvent: ...


@dataclass(slots=True, frozen=True)
class DeadLetter:
    """A record the engine could not decide, with everything needed to replay it."""

    source: SourcePosition
    original_key: bytes | None
    original_value: bytes | None
    stage: str
    error_class: str
    error_message: str
    failed_at_ms: int

    @classmethod
    def from_error(cls, record: RawRecord, stage: str, error: BaseException,
                   failed_at_ms: int | None = None) -> "DeadLetter":
        return cls(
            source=record.position, original_key=record.key, original_value=record.value,
            stage=stage, error_class=type(error).__name__,
            error_message=str(error)[:MAX_ERROR_MESSAGE],
            failed_at_ms=int(time.time() * 1000) if failed_at_ms is None else failed_at_ms,
        )

    def to_dict(self) -> dict[str, Any]:
        """The Avro ``DeadLetter`` layout (schemas/dead_letter.avsc)."""
        return {
            "original_value": self.original_value, "original_key": self.original_key,
            "source_topic": self.source.topic, "source_partition": self.source.partition,
            "source_offset": self.source.offset, "stage": self.stage,
            "error_class": self.error_class, "error_message": self.error_message,
            "failed_at_ms": self.failed_at_ms,
        }


def dead_letter_headers(dl: DeadLetter) -> list[tuple[str, bytes]]:
    """Kafka headers of a dead letter: the same facts as its body, readable without Avro."""
    return [
        ("tollgate.dlq.stage", dl.stage.encode()),
        ("tollgate.dlq.error_class", dl.error_class.encode()),
        ("tollgate.dlq.error_message", dl.error_message.encode("utf-8", "replace")),
        ("tollgate.dlq.source_topic", dl.source.topic.encode()),
        ("tollgate.dlq.source_partition", str(dl.source.partition).encode()),
        ("tollgate.dlq.source_offset", str(dl.source.offset).encode()),
        ("tollgate.dlq.failed_at_ms", str(dl.failed_at_ms).encode()),
    ]


@dataclass(slots=True)
class Decoded:
    """The decode stage's output for one batch, in input order."""

    events: list[TransactionEvent]
    #: Arrival time (epoch ms) of each event, aligned with ``events``.
    arrival_ms: list[float]
    dead_letters: list[DeadLetter]


class DecodeStage:
    """Turns a batch of raw records into events plus dead letters; never stops on bad input."""

    __slots__ = ("_codec", "_decode_errors")

    def __init__(self, codec: EventDecoder, decode_errors: tuple[type[BaseException], ...] = ()):
        self._codec = codec
        # The codec's error types; ValueError covers fastavro/json/struct failures that a
        # codec lets through unwrapped.
        self._decode_errors = tuple(decode_errors) + (ValueError, KeyError, TypeError, EOFError)

    def __call__(self, records: Sequence[RawRecord]) -> Decoded:
        out = Decoded([], [], [])
        for rec in records:
            if rec.value is None:
                out.dead_letters.append(DeadLetter.from_error(
                    rec, "decode", ValueError("record has no value (tombstone)")))
                continue
            try:
                event = self._codec.decode_event(rec.value, source=rec.position)
            except EventValidationError as exc:
                out.dead_letters.append(DeadLetter.from_error(rec, "validate", exc))
                continue
            except self._decode_errors as exc:
                out.dead_letters.append(DeadLetter.from_error(rec, "decode", exc))
                continue
            try:
                event.validate()
            except EventValidationError as exc:
                out.dead_letters.append(DeadLetter.from_error(rec, "validate", exc))
                continue
            out.events.append(event)
            out.arrival_ms.append(rec.arrival_ms)
        return out
