"""Where Avro schema ids come from: the local catalog in ``schemas/`` or a Schema Registry.

Confluent wire framing puts a 4-byte schema id in front of every Avro message, so a
reader can decode a record written with *any* registered schema, old or new, and
resolve it to the current reader schema (schema evolution). This module answers the
two questions the codec asks:

* ``writer_id(kind, topic)`` — which id do I stamp on a record I write now?
* ``writer_schema(schema_id)`` — which parsed schema wrote the record I just read?

Two implementations share that contract:

``LocalCatalog``
    Fixed ids from ``schemas/catalog.json`` (plus ``history`` entries for older writer
    layouts). Used when no registry is configured: the quickstart and the tests need
    nothing but the broker.
``RegistryCatalog``
    A Confluent-compatible Schema Registry through confluent-kafka's
    ``SchemaRegistryClient``: the current schema is registered under the subject
    ``<topic>-value`` on first use, writer schemas are fetched by id once and cached.

Both return schemas with ``timestamp-millis`` stripped to plain ``long``: Tollgate's
records carry epoch milliseconds as ``int`` everywhere, and fastavro would otherwise
hand back ``datetime`` objects on read. The bytes on the wire are identical.

>>> cat = LocalCatalog()
>>> cat.writer_id("event", "tx.events")
1
>>> sorted(cat.writer_schema(101)["__named_schemas"])  # the v0 event layout
['dev.tollgate.v1.TransactionEvent']
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any, Protocol

import fastavro

from engine.settings import REPO_ROOT, Settings

SCHEMA_DIR = REPO_ROOT / "schemas"

#: The record kinds Tollgate writes, and the schema file holding each one's current layout.
SCHEMA_FILES: dict[str, str] = {
    "event": "transaction_event.avsc",
    "verdict": "verdict.avsc",
    "outcome": "outcome.avsc",
    "dead_letter": "dead_letter.avsc",
}

_TIMESTAMP_TYPES = frozenset({"timestamp-millis", "timestamp-micros", "local-timestamp-millis",
                              "local-timestamp-micros"})


class UnknownSchemaId(LookupError):
    """A message names a schema id that neither the catalog nor the registry knows."""


class RegistryUnavailable(RuntimeError):
    """The Schema Registry did not answer (network, 5xx, auth). Transient: the codec lets
    it propagate instead of calling the message undecodable, so a registry outage never
    dead-letters good messages — the worker stops and retries from its committed offset."""


def strip_timestamp_types(schema: Any) -> Any:
    """Copy of ``schema`` with timestamp logical types removed (their base type stays).

    >>> strip_timestamp_types({"type": "long", "logicalType": "timestamp-millis"})
    {'type': 'long'}
    """
    if isinstance(schema, dict):
        return {k: strip_timestamp_types(v) for k, v in schema.items()
                if not (k == "logicalType" and v in _TIMESTAMP_TYPES)}
    if isinstance(schema, list):
        return [strip_timestamp_types(item) for item in schema]
    return schema


def parse_plain(schema: dict[str, Any] | str) -> dict[str, Any]:
    """Parse an Avro schema (dict or JSON text) for the codec: ints for times, compiled once."""
    raw = json.loads(schema) if isinstance(schema, str) else copy.deepcopy(schema)
    # A fresh named-schema namespace per parse: the v0 and current event share a name.
    return fastavro.parse_schema(strip_timestamp_types(raw), named_schemas={})


def load_schema_file(kind: str, schema_dir: Path = SCHEMA_DIR) -> dict[str, Any]:
    """The current schema of ``kind`` as written in ``schemas/`` (logical types intact)."""
    return json.loads((schema_dir / SCHEMA_FILES[kind]).read_text())


class SchemaCatalog(Protocol):
    def writer_id(self, kind: str, topic: str) -> int: ...

    def writer_schema(self, schema_id: int) -> dict[str, Any]: ...


class LocalCatalog:
    """Fixed ids from ``schemas/catalog.json``; topic names do not change an id."""

    def __init__(self, schema_dir: Path = SCHEMA_DIR):
        spec = json.loads((schema_dir / "catalog.json").read_text())
        file_to_kind = {name: kind for kind, name in SCHEMA_FILES.items()}
        self._ids: dict[str, int] = {}
        self._schemas: dict[int, dict[str, Any]] = {}
        entries = list(spec["subjects"].values()) + list(spec.get("history", {}).values())
        for entry in entries:
            schema_id = int(entry["id"])
            if schema_id in self._schemas:
                raise ValueError(f"schemas/catalog.json reuses id {schema_id}")
            self._schemas[schema_id] = parse_plain(json.loads((schema_dir / entry["file"]).read_text()))
        for entry in spec["subjects"].values():
            kind = file_to_kind.get(entry["file"])
            if kind is not None:
                self._ids[kind] = int(entry["id"])
        missing = set(SCHEMA_FILES) - set(self._ids)
        if missing:
            raise ValueError(f"schemas/catalog.json has no subject for {sorted(missing)}")

    def writer_id(self, kind: str, topic: str) -> int:
        return self._ids[kind]

    def writer_schema(self, schema_id: int) -> dict[str, Any]:
        try:
            return self._schemas[schema_id]
        except KeyError:
            raise UnknownSchemaId(f"schema id {schema_id} is not in schemas/catalog.json") from None


class RegistryCatalog:
    """Ids from a Confluent-compatible Schema Registry (subject ``<topic>-value``).

    Registration happens once per subject and process; writer schemas are cached by
    id forever (registry ids are immutable), so the hot path never calls the registry
    after the first message of each writer version.
    """

    def __init__(self, url: str, basic_auth: str | None = None, schema_dir: Path = SCHEMA_DIR,
                 client_conf: dict[str, Any] | None = None):
        # Imported here: the registry client pulls in an HTTP stack the local mode never needs.
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka.schema_registry import SchemaRegistryClient

        conf: dict[str, Any] = {"url": url, **(client_conf or {})}
        if basic_auth:
            conf["basic.auth.user.info"] = basic_auth
        self._client = SchemaRegistryClient(conf)
        self._schema_dir = schema_dir
        self._ids: dict[tuple[str, str], int] = {}
        self._schemas: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def writer_id(self, kind: str, topic: str) -> int:
        key = (kind, topic)
        found = self._ids.get(key)
        if found is not None:
            return found
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka.schema_registry import Schema

        text = json.dumps(load_schema_file(kind, self._schema_dir))
        with self._lock:
            schema_id = self._client.register_schema(f"{topic}-value", Schema(text, "AVRO"))
            self._ids[key] = schema_id
            self._schemas.setdefault(schema_id, parse_plain(text))
        return schema_id

    def writer_schema(self, schema_id: int) -> dict[str, Any]:
        found = self._schemas.get(schema_id)
        if found is not None:
            return found
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            registered = self._client.get_schema(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                raise UnknownSchemaId(f"schema id {schema_id} is not in the registry") from exc
            raise RegistryUnavailable(f"registry error for schema id {schema_id}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - transport errors of the HTTP client
            raise RegistryUnavailable(f"registry unreachable for schema id {schema_id}: {exc}") from exc
        if (registered.schema_type or "AVRO") != "AVRO":
            raise UnknownSchemaId(f"schema id {schema_id} is {registered.schema_type}, not AVRO")
        parsed = parse_plain(registered.schema_str)
        with self._lock:
            self._schemas[schema_id] = parsed
        return parsed


def catalog_from_settings(settings: Settings) -> SchemaCatalog:
    """The registry when ``TOLLGATE_SCHEMA_REGISTRY_URL`` is set, else the local catalog."""
    url = settings.kafka.schema_registry_url
    if url:
        auth = settings.kafka.schema_registry_auth
        return RegistryCatalog(url, auth.get_secret_value() if auth else None)
    return LocalCatalog()
