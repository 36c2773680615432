"""Codec unit tests: framing, schema evolution, JSON, errors, and the registry path.

The Kafka round trip of every schema is in tests/integration/test_schemas_kafka.py;
here the bytes never leave the process (except to a tiny in-process registry fake,
spoken to by confluent-kafka's real ``SchemaRegistryClient``).
"""

from __future__ import annotations

import io
import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from fastavro import schemaless_writer

from engine.records import (
    Decision,
    EventValidationError,
    Outcome,
    OutcomeKind,
    Reason,
    ReasonKind,
    SourcePosition,
    TransactionEvent,
    Verdict,
)
from engine.settings import Settings
from engine.wire.codec import (
    JSON_HEADERS,
    Codec,
    DeadLetter,
    DecodeError,
)
from engine.wire.schema_catalog import SCHEMA_DIR, LocalCatalog, RegistryCatalog, RegistryUnavailable, parse_plain

T0 = 1_700_000_000_123


def make_event(**overrides) -> TransactionEvent:
    base = dict(event_id="e-1", event_time_ms=T0, customer_id="c-42", account_id="a-42",
                terminal_id="t-7", merchant_category="5411", amount=12.5, currency="EUR",
                channel="ecommerce", country="BE", device_id="d-1", ip="192.0.2.10",
                memo="rent June 🏠", merchant_descriptor="ACME*SHOP", attributes={"k": "v"})
    base.update(overrides)
    return TransactionEvent(**base)


def make_verdict() -> Verdict:
    return Verdict(event_id="e-1", customer_id="c-42", verdict=Decision.REVIEW, confidence=0.61,
                   probabilities={"pass": 0.3, "review": 0.61, "reject": 0.09}, risk_score=0.2,
                   reasons=(Reason(ReasonKind.MODEL, "top_class", "review 0.61"),
                            Reason(ReasonKind.RULE, "amount_cap")),
                   model_version="m1", rules_version="r1", decision_latency_ms=3.5,
                   decided_at_ms=T0 + 5, event_time_ms=T0, detector_score=None)


@pytest.fixture(scope="module")
def codec() -> Codec:
    return Codec(Settings())


def test_every_record_kind_round_trips_in_process(codec):
    event = make_event()
    outcome = Outcome("e-1", OutcomeKind.CHARGEBACK, T0 + 86_400_000, "issuer", "c-42", "t-7")
    dead = DeadLetter(b"\x01\x02", b"c-42", "tx.events", 3, 99, "decode", "ValueError", "bad", T0)
    assert codec.decode_event(codec.encode_event(event)) == event
    assert codec.decode_verdict(codec.encode_verdict(make_verdict())) == make_verdict()
    assert codec.decode_outcome(codec.encode_outcome(outcome)) == outcome
    assert codec.decode_dead_letter(codec.encode_dead_letter(dead)) == dead


def test_times_stay_integers_both_ways(codec):
    decoded = codec.decode_event(codec.encode_event(make_event()))
    assert type(decoded.event_time_ms) is int and decoded.event_time_ms == T0
    verdict = codec.decode_verdict(codec.encode_verdict(make_verdict()))
    assert type(verdict.decided_at_ms) is int


def test_source_position_is_attached(codec):
    src = SourcePosition("tx.events", 2, 17)
    assert codec.decode_event(codec.encode_event(make_event()), source=src).source == src


def test_old_writer_v0_is_read_with_defaults(codec):
    v0 = parse_plain(json.loads((SCHEMA_DIR / "history/transaction_event.v0.avsc").read_text()))
    old = {k: v for k, v in make_event().to_dict().items()
           if k not in ("device_id", "ip", "memo", "merchant_descriptor", "attributes")}
    buffer = io.BytesIO(b"\x00" + (101).to_bytes(4, "big"))
    buffer.seek(5)
    schemaless_writer(buffer, v0, old)
    decoded = codec.decode_event(buffer.getvalue())
    assert decoded == make_event(device_id=None, ip=None, memo=None, merchant_descriptor=None, attributes={})


def test_old_writer_outcome_v0_is_read_without_an_event_time(codec):
    # Outcomes written before event_time_ms existed carry id 3 (the v0 schema's id).
    v0 = parse_plain(json.loads((SCHEMA_DIR / "history/outcome.v0.avsc").read_text()))
    outcome = Outcome("e-1", OutcomeKind.CHARGEBACK, T0 + 86_400_000, "issuer", "c-42", "t-7")
    old = {k: v for k, v in outcome.to_dict().items() if k != "event_time_ms"}
    buffer = io.BytesIO(b"\x00" + (3).to_bytes(4, "big"))
    buffer.seek(5)
    schemaless_writer(buffer, v0, old)
    assert codec.decode_outcome(buffer.getvalue()) == outcome
    with_time = Outcome("e-1", OutcomeKind.CHARGEBACK, T0 + 86_400_000, "issuer", event_time_ms=T0)
    assert codec.decode_outcome(codec.encode_outcome(with_time)) == with_time


def test_json_and_avro_decode_to_the_same_record(codec):
    event = make_event()
    from_json = codec.decode_event(codec.events.encode_json(event), list(JSON_HEADERS))
    from_avro = codec.decode_event(codec.encode_event(event))
    assert from_json == from_avro == event
    assert type(from_json.amount) is float


def test_json_accepts_iso_time_int_amount_and_charset():
    codec = Codec(Settings())
    doc = make_event().to_dict() | {"event_time_ms": "2023-11-14T22:13:20.123Z", "amount": 12,
                                    "unknown_future_field": 1}
    headers = [("Content-Type", b"application/json; charset=utf-8")]
    decoded = codec.decode_event(json.dumps(doc).encode(), headers)
    assert decoded.event_time_ms == T0 and decoded.amount == 12.0


@pytest.mark.parametrize("raw, needle", [
    (b"", "empty"),
    (b"not avro at all", "magic byte"),
    (b"\x00\x00\x00", "magic byte"),
    (b"\x00\x00\x00\x03\xe7" + b"\x02", "not in schemas/catalog.json"),  # unknown id 999
])
def test_malformed_bytes_raise_decode_error_with_raw_message(codec, raw, needle):
    src = SourcePosition("tx.events", 0, 5)
    headers = [("trace", b"abc")]
    with pytest.raises(DecodeError) as info:
        codec.decode_event(raw, headers, src, key=b"c-42")
    err = info.value
    assert err.stage == "decode" and needle in str(err)
    assert (err.raw_value, err.raw_key, err.headers, err.source) == (raw, b"c-42", headers, src)


def test_truncated_and_padded_avro_are_rejected(codec):
    good = codec.encode_event(make_event())
    for bad in (good[:-3], good[:9], good + b"\x00\x00"):
        with pytest.raises(DecodeError) as info:
            codec.decode_event(bad)
        assert info.value.stage == "decode" and info.value.raw_value == bad


def test_wrong_record_kind_is_rejected(codec):
    with pytest.raises(DecodeError):
        codec.decode_event(codec.encode_verdict(make_verdict()))


@pytest.mark.parametrize("overrides, field", [
    ({"amount": -1.0}, "amount"),
    ({"amount": math.nan}, "amount"),
    ({"event_time_ms": 5}, "event_time_ms"),
    ({"currency": "EURO"}, "currency"),
    ({"customer_id": ""}, "customer_id"),
])
def test_out_of_range_avro_is_a_validate_error(codec, overrides, field):
    raw = codec.events.encode(make_event(**overrides), validate=False)
    with pytest.raises(DecodeError) as info:
        codec.decode_event(raw)
    assert info.value.stage == "validate"
    assert isinstance(info.value.cause, EventValidationError) and info.value.cause.field_name == field


def test_encoder_refuses_invalid_events(codec):
    with pytest.raises(EventValidationError):
        codec.encode_event(make_event(amount=-5.0))


@pytest.mark.parametrize("doc, field", [
    ({"amount": "12.50"}, "amount"),
    ({"amount": True}, "amount"),
    ({"customer_id": 42}, "customer_id"),
    ({"memo": ["x"]}, "memo"),
    ({"event_time_ms": "yesterday"}, "event_time_ms"),
    ({"event_time_ms": 1.5e12 + 0.5}, "event_time_ms"),  # a whole float is accepted, as over HTTP
    ({"attributes": {"k": 1}}, "attributes"),
    ({"memo": 12345}, "memo"),
    ({"memo": {"a": 1}}, "memo"),
    ({"channel": ["ecommerce"]}, "channel"),
    ({"customer_id": "c\x00"}, "customer_id"),
    ({"device_id": "d\n1"}, "device_id"),
    ({"country": None}, "country"),
])
def test_schema_invalid_json_is_a_validate_error(codec, doc, field):
    raw = json.dumps(make_event().to_dict() | doc).encode()
    with pytest.raises(DecodeError) as info:
        codec.decode_event(raw, JSON_HEADERS)
    assert info.value.stage == "validate" and info.value.cause.field_name == field


def test_json_that_is_not_an_object_is_a_decode_error(codec):
    for raw in (b"[1,2]", b"{oops", "\u00e9".encode("latin-1")):
        with pytest.raises(DecodeError) as info:
            codec.decode_event(raw, JSON_HEADERS)
        assert info.value.stage == "decode"


def test_dead_letter_from_decode_error_keeps_everything(codec):
    src = SourcePosition("tx.events", 1, 42)
    try:
        codec.decode_event(b"\xffjunk", None, src, key=b"k")
    except DecodeError as err:
        dead = DeadLetter.from_error(err, failed_at_ms=T0)
    assert (dead.original_value, dead.original_key) == (b"\xffjunk", b"k")
    assert (dead.source_topic, dead.source_partition, dead.source_offset) == ("tx.events", 1, 42)
    assert dead.stage == "decode" and dead.error_class == "ValueError"
    assert dict(dead.headers())["tollgate.dlq.source"] == b"tx.events:1:42"
    assert codec.decode_dead_letter(codec.encode_dead_letter(dead)) == dead


def test_schemas_are_documented_and_evolvable():
    catalog = json.loads((SCHEMA_DIR / "catalog.json").read_text())
    ids = [e["id"] for e in catalog["subjects"].values()] + [e["id"] for e in catalog["history"].values()]
    assert len(ids) == len(set(ids))
    v0_fields = {name: {f["name"] for f in json.loads((SCHEMA_DIR / f"history/{name}.v0.avsc").read_text())["fields"]}
                 for name in ("transaction_event", "outcome")}
    for entry in catalog["subjects"].values():
        schema = json.loads((SCHEMA_DIR / entry["file"]).read_text())
        assert schema.get("doc"), entry["file"]
        for f in schema["fields"]:
            assert f.get("doc"), f"{entry['file']}: field {f['name']} has no doc"
        name = entry["file"].removesuffix(".avsc")
        if name in v0_fields:
            added = [f for f in schema["fields"] if f["name"] not in v0_fields[name]]
            assert added and all("default" in f for f in added), "fields added after v0 need defaults"


def test_local_catalog_ids_are_fixed():
    cat = LocalCatalog()
    assert [cat.writer_id(k, "any.topic") for k in ("event", "verdict", "outcome", "dead_letter")] == [1, 2, 5, 4]
    # A changed schema takes a new id; the old one keeps its id, so what it wrote still decodes.
    assert [f["name"] for f in cat.writer_schema(3)["fields"]][-1] == "terminal_id"


# -- Schema Registry path: the real confluent-kafka client against a minimal fake ----


class _FakeRegistry(BaseHTTPRequestHandler):
    subjects: dict[str, int] = {}
    schemas: dict[int, str] = {}
    calls: list[str] = []

    def _reply(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # noqa: N802 - http.server API
        self.calls.append(f"POST {self.path}")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        subject = self.path.split("/")[2]
        known = [sid for sid, text in self.schemas.items() if text == body["schema"]]
        if known:
            schema_id = known[0]
        else:
            schema_id = 1000 + len(self.schemas)
            self.schemas[schema_id] = body["schema"]
        self.subjects[subject] = schema_id
        self._reply(200, {"id": schema_id})

    def do_GET(self):  # noqa: N802
        self.calls.append(f"GET {self.path}")
        schema_id = int(self.path.split("?")[0].rsplit("/", 1)[1])
        if schema_id not in self.schemas:
            self._reply(404, {"error_code": 40403, "message": "Schema not found"})
        else:
            self._reply(200, {"schema": self.schemas[schema_id]})

    def log_message(self, *args):
        pass


@pytest.fixture
def registry_url():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeRegistry)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_registry_ids_register_once_and_resolve_by_id(registry_url, monkeypatch):
    monkeypatch.setenv("TOLLGATE_SCHEMA_REGISTRY_URL", registry_url)
    codec = Codec(Settings())
    assert isinstance(codec.catalog, RegistryCatalog)
    raw = codec.encode_event(make_event())
    codec.encode_event(make_event(event_id="e-2"))
    schema_id = int.from_bytes(raw[1:5], "big")
    assert schema_id >= 1000 and _FakeRegistry.subjects["tx.events-value"] == schema_id
    assert sum(c.startswith("POST /subjects/tx.events-value") for c in _FakeRegistry.calls) == 1

    # A second process knows nothing yet: it fetches the writer schema by id, once.
    reader = Codec(Settings(), RegistryCatalog(registry_url))
    _FakeRegistry.calls.clear()
    assert reader.decode_event(raw) == make_event()
    assert reader.decode_event(raw) == make_event()
    assert _FakeRegistry.calls == [f"GET /schemas/ids/{schema_id}"]

    with pytest.raises(DecodeError) as info:
        reader.decode_event(b"\x00\x00\x00\x00\x07\x02")
    assert "not in the registry" in str(info.value)


def test_registry_outage_is_not_a_dead_letter(registry_url):
    codec = Codec(Settings(), RegistryCatalog(registry_url))
    raw = codec.encode_event(make_event())
    # The registry goes away before a fresh reader has seen this writer id.
    dead_url = "http://127.0.0.1:9"  # discard port: connection refused
    reader = Codec(Settings(), RegistryCatalog(dead_url, client_conf={"max.retries": 0}))
    with pytest.raises(RegistryUnavailable):
        reader.decode_event(raw)


@pytest.mark.parametrize("bad", [b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xed\xbf\xbf"],
                         ids=["bom-bytes", "truncated-2-byte", "encoded-high-surrogate", "encoded-low-surrogate"])
def test_every_invalid_utf8_memo_is_a_decode_error_in_json_and_avro(codec, bad):
    """Issue 20 item 5: an encoded surrogate was decided (json.loads(bytes) decodes with
    surrogatepass) while other invalid UTF-8 was dead-lettered. All of it is refused now."""
    event = make_event(memo="MEMO-PLACEHOLDER")
    as_json = codec.events.encode_json(event).replace(b"MEMO-PLACEHOLDER", bad)
    with pytest.raises(DecodeError) as info:
        codec.decode_event(as_json, list(JSON_HEADERS))
    assert info.value.stage == "decode"
    as_avro = codec.encode_event(event)
    placeholder = b"MEMO-PLACEHOLDER"
    # Same length keeps the Avro string's length prefix right: pad the bad bytes.
    patched = as_avro.replace(placeholder, bad + b"x" * (len(placeholder) - len(bad)))
    with pytest.raises(DecodeError):
        codec.decode_event(patched, None)
