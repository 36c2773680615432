"""Bytes on a topic ⇄ typed records: Avro with Confluent wire framing, and JSON events.

Avro messages are framed the Confluent way — magic byte ``0``, a 4-byte big-endian
schema id, then the Avro binary body (fastavro, schemaless) — so a reader resolves
*whichever* schema wrote a message to the current reader schema: an old producer
still publishing the v0 event layout is read with defaults for the newer fields.
Ids come from ``engine.wire.schema_catalog``: a Schema Registry when
``TOLLGATE_SCHEMA_REGISTRY_URL`` is set, otherwise the fixed ids in ``schemas/``.

Many upstream services publish JSON, so a message whose header ``content-type`` is
``application/json`` is parsed as JSON with the same field names.

Decoding is on the hot path: schemas are parsed once, and the (writer, reader) pair
for each writer id is resolved once and cached; no message ever triggers a parse.

Anything that cannot become a valid record raises ``DecodeError``, which carries the
raw value, key, headers and Kafka position, so the dead-letter path needs nothing
else. ``stage`` says why: ``"decode"`` (bytes are not a record) or ``"validate"``
(a record, but a field is missing or out of range; ``cause`` is then an
``EventValidationError`` naming the field). A Schema Registry outage is not the
message's fault: ``RegistryUnavailable`` propagates instead, so good messages are
never dead-lettered because a registry was down.

>>> codec = Codec()
>>> e = TransactionEvent(event_id="e1", event_time_ms=1_700_000_000_000, customer_id="c1",
...     account_id="a1", terminal_id="t1", merchant_category="5411", amount=12.5,
...     currency="EUR", channel="card_present", country="BE")
>>> raw = codec.encode_event(e)
>>> raw[:5]                          # magic byte, then schema id 1 (catalog)
b'\\x00\\x00\\x00\\x00\\x01'
>>> codec.decode_event(raw) == e
True
>>> codec.decode_event(codec.events.encode_json(e), JSON_HEADERS) == e
True
>>> codec.decode_event(b"garbage")
Traceback (most recent call last):
...
engine.wire.codec.DecodeError: decode failed at ?: ValueError: not Confluent Avro framing (magic byte 0x67, expected 0x00); JSON needs the header content-type: application/json
"""  # noqa: E501 (a doctest line is the exception message as printed)

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Generic, TypeVar

import orjson
from fastavro import schemaless_reader, schemaless_writer

from engine.records import (
    Outcome,
    SourcePosition,
    TransactionEvent,
    Verdict,
    VerdictBatch,
    event_from_json,
)
from engine.settings import Settings, get_settings
from engine.wire.schema_catalog import (
    RegistryUnavailable,
    SchemaCatalog,
    catalog_from_settings,
    load_schema_file,
    parse_plain,
)
from engine.wire.verdict_avro import WRITES_SCHEMA, schema_fingerprint, write_verdicts

MAGIC_BYTE = 0
CONTENT_TYPE = "content-type"
JSON_CONTENT_TYPE = "application/json"
#: Headers to send with a JSON-encoded value (the producer side of the JSON path).
JSON_HEADERS: tuple[tuple[str, bytes], ...] = ((CONTENT_TYPE, JSON_CONTENT_TYPE.encode()),)

#: What Kafka clients hand us as headers: confluent-kafka gives a list of (str, bytes).
Headers = Sequence[tuple[str, "bytes | str | None"]] | Mapping[str, "bytes | str | None"] | None

R = TypeVar("R")


class DecodeError(ValueError):
    """A message could not become a valid record. Carries the raw message for the DLQ."""

    def __init__(self, stage: str, raw_value: bytes | None, raw_key: bytes | None, headers: Headers,
                 source: SourcePosition | None, cause: BaseException):
        where = f"{source.topic}[{source.partition}]@{source.offset}" if source else "?"
        super().__init__(f"{stage} failed at {where}: {type(cause).__name__}: {cause}")
        self.stage = stage
        self.raw_value = raw_value
        self.raw_key = raw_key
        self.headers = headers
        self.source = source
        self.cause = cause


@dataclass(slots=True, frozen=True)
class DeadLetter:
    """A record on ``tx.events.dlq``: the original bytes plus why and where it failed."""

    original_value: bytes | None
    original_key: bytes | None
    source_topic: str
    source_partition: int
    source_offset: int
    stage: str
    error_class: str
    error_message: str
    failed_at_ms: int

    @classmethod
    def from_error(cls, error: BaseException, failed_at_ms: int, *, value: bytes | None = None,
                   key: bytes | None = None, source: SourcePosition | None = None,
                   stage: str = "decode") -> DeadLetter:
        """Build from a ``DecodeError`` (which knows everything) or any other stage's error."""
        if isinstance(error, DecodeError):
            value, key, source, stage = error.raw_value, error.raw_key, error.source, error.stage
            error = error.cause
        return cls(
            original_value=value, original_key=key,
            source_topic=source.topic if source else "",
            source_partition=source.partition if source else -1,
            source_offset=source.offset if source else -1,
            stage=stage, error_class=type(error).__name__, error_message=str(error)[:4096],
            failed_at_ms=int(failed_at_ms),
        )

    def headers(self) -> list[tuple[str, bytes]]:
        """The same facts as Kafka headers, so tools can filter a DLQ without decoding it."""
        return [
            ("tollgate.dlq.stage", self.stage.encode()),
            ("tollgate.dlq.error_class", self.error_class.encode()),
            ("tollgate.dlq.error_message", self.error_message[:1024].encode("utf-8", "replace")),
            ("tollgate.dlq.source", f"{self.source_topic}:{self.source_partition}:{self.source_offset}".encode()),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeadLetter:
        return cls(**{f.name: data[f.name] for f in fields(cls)})


def header_value(headers: Headers, name: str) -> str | None:
    """The first header called ``name`` (case-insensitive), decoded as UTF-8, or None.

    >>> header_value([("Content-Type", b"application/json; charset=utf-8")], "content-type")
    'application/json; charset=utf-8'
    """
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    for key, value in items:
        if key.lower() == name:
            if value is None:
                return ""
            return value.decode("utf-8", "replace") if isinstance(value, (bytes, bytearray)) else str(value)
    return None


def is_json(headers: Headers) -> bool:
    content_type = header_value(headers, CONTENT_TYPE)
    return content_type is not None and content_type.split(";", 1)[0].strip().lower() == JSON_CONTENT_TYPE


class RecordCodec(Generic[R]):
    """One record kind on one topic. Subclasses say how dicts become records."""

    kind: ClassVar[str]

    def __init__(self, catalog: SchemaCatalog, topic: str):
        self.catalog = catalog
        self.topic = topic
        self.reader_schema = parse_plain(load_schema_file(self.kind))
        self._reader_fields = tuple(f["name"] for f in self.reader_schema["fields"])
        # writer id -> (writer schema, reader schema or None when they are the same)
        self._plans: dict[int, tuple[dict[str, Any], dict[str, Any] | None]] = {}
        self._frames: dict[str, bytes] = {}

    # -- encoding ------------------------------------------------------------------
    def frame(self, topic: str | None = None) -> bytes:
        """Magic byte + schema id for the current schema on ``topic`` (registered once)."""
        topic = topic or self.topic
        found = self._frames.get(topic)
        if found is None:
            schema_id = self.catalog.writer_id(self.kind, topic)
            found = self._frames[topic] = bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big")
            self._plans.setdefault(schema_id, (self.reader_schema, None))
        return found

    def encode(self, record: R, topic: str | None = None) -> bytes:
        """Avro body behind the Confluent frame."""
        buffer = io.BytesIO()
        buffer.write(self.frame(topic))
        schemaless_writer(buffer, self.reader_schema, self.to_avro(record))
        return buffer.getvalue()

    def encode_json(self, record: R) -> bytes:
        """UTF-8 JSON with the Avro field names; send it with ``JSON_HEADERS``."""
        return json.dumps(self.to_avro(record), ensure_ascii=False, separators=(",", ":")).encode()

    # -- decoding ------------------------------------------------------------------
    def decode(self, value: bytes | None, headers: Headers = None, source: SourcePosition | None = None,
               key: bytes | None = None) -> R:
        """Decode and validate one message value; any failure is a ``DecodeError``."""
        try:
            if not value:
                raise ValueError("empty message value (tombstone?)")
            json_input = is_json(headers)
            data = self._json_dict(value) if json_input else self._avro_dict(value)
        except RegistryUnavailable:
            raise  # transient: retry the message, never dead-letter it
        except Exception as exc:  # noqa: BLE001 - every failure of the message becomes a dead letter
            raise DecodeError("decode", value, key, headers, source, exc) from exc
        try:
            return self.from_json(data, source) if json_input else self.from_avro(data, source)
        except Exception as exc:  # noqa: BLE001
            raise DecodeError("validate", value, key, headers, source, exc) from exc

    def _avro_dict(self, value: bytes) -> dict[str, Any]:
        if len(value) < 5 or value[0] != MAGIC_BYTE:
            raise ValueError(f"not Confluent Avro framing (magic byte 0x{value[0]:02x}, expected 0x00)"
                             f"; JSON needs the header {CONTENT_TYPE}: {JSON_CONTENT_TYPE}")
        schema_id = int.from_bytes(value[1:5], "big")
        plan = self._plans.get(schema_id)
        if plan is None:
            plan = self._plan(schema_id)
        buffer = io.BytesIO(value)
        buffer.seek(5)
        data = schemaless_reader(buffer, plan[0], plan[1])
        left = len(value) - buffer.tell()
        if left:
            raise ValueError(f"{left} trailing bytes after the record (wrong schema id {schema_id}?)")
        return data

    def _plan(self, schema_id: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
        writer = self.catalog.writer_schema(schema_id)
        plan = (writer, None if writer == self.reader_schema else self.reader_schema)
        self._plans[schema_id] = plan
        return plan

    @staticmethod
    def _json_dict(value: bytes) -> dict[str, Any]:
        # Decode strictly first: json.loads(bytes) decodes with errors="surrogatepass",
        # which turns an encoded surrogate (b"\xed\xa0\x80") into a lone surrogate instead
        # of refusing it, so it was decided where \xff\xfe was dead-lettered.
        try:  # orjson where it parses (the same values); anything it refuses goes to json
            data = orjson.loads(value)
        except orjson.JSONDecodeError:
            data = json.loads(value.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"JSON value must be an object, got {type(data).__name__}")
        return data

    # -- per-kind conversions (overridden) -------------------------------------------
    def to_avro(self, record: R) -> dict[str, Any]:
        return record.to_dict()  # type: ignore[attr-defined]

    def from_avro(self, data: dict[str, Any], source: SourcePosition | None) -> R:
        raise NotImplementedError

    def from_json(self, data: dict[str, Any], source: SourcePosition | None) -> R:
        return self.from_avro(data, source)


_EVENT_FIELDS = frozenset(f.name for f in fields(TransactionEvent)) - {"source"}


class EventCodec(RecordCodec[TransactionEvent]):
    """``tx.events``: Avro or JSON in, a validated ``TransactionEvent`` out."""

    kind = "event"

    def __init__(self, catalog: SchemaCatalog, topic: str):
        super().__init__(catalog, topic)
        # The reader schema's fields are exactly the record's: build it without a detour.
        self._direct = frozenset(self._reader_fields) == _EVENT_FIELDS

    def encode(self, event: TransactionEvent, topic: str | None = None, validate: bool = True) -> bytes:
        if validate:
            event.validate()
        return super().encode(event, topic)

    def from_avro(self, data: dict[str, Any], source: SourcePosition | None) -> TransactionEvent:
        if self._direct:
            return TransactionEvent(**data, source=source).validate()
        return TransactionEvent.from_dict(data, source).validate()

    def from_json(self, data: dict[str, Any], source: SourcePosition | None) -> TransactionEvent:
        return event_from_json(data, source)  # the rules every JSON entry point shares


class VerdictCodec(RecordCodec[Verdict]):
    kind = "verdict"

    def __init__(self, catalog: SchemaCatalog, topic: str):
        super().__init__(catalog, topic)
        #: The body written directly (``engine.wire.verdict_avro``) while the bundled
        #: schema is the one that writer was written for; fastavro otherwise.
        self.writes_directly = schema_fingerprint(self.reader_schema) == WRITES_SCHEMA

    def encode(self, record: Verdict, topic: str | None = None) -> bytes:
        return self.encode_batch(VerdictBatch.of([record]), topic)[0]

    def encode_batch(self, batch: VerdictBatch, topic: str | None = None) -> list[bytes]:
        """Each verdict of ``batch``, framed, in order: written from the columns while the
        bundled schema is the one ``write_verdicts`` writes, else by fastavro."""
        if self.writes_directly:
            try:
                bodies = write_verdicts(batch)
            except Exception:  # noqa: BLE001 - a value the schema refuses: fastavro raises its own error, row by row
                pass
            else:
                frame = self.frame(topic)
                return [frame + body for body in bodies]
        encode_one = super().encode
        return [encode_one(v, topic) for v in batch]

    def from_avro(self, data: dict[str, Any], source: SourcePosition | None) -> Verdict:
        return Verdict.from_dict(data)


class OutcomeCodec(RecordCodec[Outcome]):
    kind = "outcome"

    def from_avro(self, data: dict[str, Any], source: SourcePosition | None) -> Outcome:
        return Outcome.from_dict(data)


class DeadLetterCodec(RecordCodec[DeadLetter]):
    kind = "dead_letter"

    def from_avro(self, data: dict[str, Any], source: SourcePosition | None) -> DeadLetter:
        return DeadLetter.from_dict(data)

    def from_json(self, data: dict[str, Any], source: SourcePosition | None) -> DeadLetter:
        raise ValueError("dead letters are Avro only (they carry raw bytes)")


class Codec:
    """All four topic codecs sharing one schema catalog, with topic names from settings."""

    def __init__(self, settings: Settings | None = None, catalog: SchemaCatalog | None = None):
        settings = settings or get_settings()
        self.catalog = catalog or catalog_from_settings(settings)
        topics = settings.topics
        self.events = EventCodec(self.catalog, topics.events)
        self.verdicts = VerdictCodec(self.catalog, topics.verdicts)
        self.outcomes = OutcomeCodec(self.catalog, topics.outcomes)
        self.dead_letters = DeadLetterCodec(self.catalog, topics.dead_letters)

    def encode_event(self, event: TransactionEvent, topic: str | None = None) -> bytes:
        return self.events.encode(event, topic)

    def encode_verdict(self, verdict: Verdict, topic: str | None = None) -> bytes:
        return self.verdicts.encode(verdict, topic)

    def encode_verdicts(self, verdicts: VerdictBatch, topic: str | None = None) -> list[bytes]:
        return self.verdicts.encode_batch(verdicts, topic)

    def encode_outcome(self, outcome: Outcome, topic: str | None = None) -> bytes:
        return self.outcomes.encode(outcome, topic)

    def encode_dead_letter(self, dead_letter: DeadLetter, topic: str | None = None) -> bytes:
        return self.dead_letters.encode(dead_letter, topic)

    def decode_event(self, value: bytes | None, headers: Headers = None, source: SourcePosition | None = None,
                     key: bytes | None = None) -> TransactionEvent:
        return self.events.decode(value, headers, source, key)

    def decode_verdict(self, value: bytes | None, headers: Headers = None, source: SourcePosition | None = None,
                       key: bytes | None = None) -> Verdict:
        return self.verdicts.decode(value, headers, source, key)

    def decode_outcome(self, value: bytes | None, headers: Headers = None, source: SourcePosition | None = None,
                       key: bytes | None = None) -> Outcome:
        return self.outcomes.decode(value, headers, source, key)

    def decode_dead_letter(self, value: bytes | None, headers: Headers = None,
                           source: SourcePosition | None = None, key: bytes | None = None) -> DeadLetter:
        return self.dead_letters.decode(value, headers, source, key)
