"""Where simulated days go: Parquet or JSONL files, or Kafka topics.

Every sink takes one ``SimDay`` at a time, so a year of simulation never sits in
memory. Files keep the ground truth (``tx_fraud``, ``tx_fraud_scenario``, injection
labels) next to each event for analysis; Kafka gets only what a real upstream would
publish — Avro (or JSON) events keyed by ``customer_id`` and Avro outcomes keyed by
``event_id``, produced in one merged time order so a consumer of both topics sees
each outcome after the event it judges.

Outcomes go to a sibling file: ``day.parquet`` → ``day.outcomes.parquet``.

>>> outcome_path(Path("out/week.parquet"))
PosixPath('out/week.outcomes.parquet')
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from engine.offline.simulate.frames import (
    ATTRIBUTE_PREFIX,
    EVENT_FRAME_DTYPES,
    OPTIONAL_EVENT_COLUMNS,
    OUTCOME_COLUMNS,
    OUTCOME_TIME_COLUMNS,
    TRUTH_COLUMNS,
    events_from_frame,
    outcomes_from_frame,
    text_column,
)
from engine.offline.simulate.simulator import SimDay
from engine.records import Outcome, TransactionEvent
from engine.settings import Settings
from engine.wire.codec import JSON_HEADERS, Codec
from engine.wire.topics import outcome_topic

_ARROW = {"object": pa.string(), "int64": pa.int64(), "float64": pa.float64(), "int8": pa.int8()}
EVENT_PARQUET_SCHEMA = pa.schema([(c, _ARROW[d]) for c, d in EVENT_FRAME_DTYPES.items()])
OUTCOME_PARQUET_SCHEMA = pa.schema([(c, pa.int64() if c in OUTCOME_TIME_COLUMNS else pa.string())
                                    for c in OUTCOME_COLUMNS])


class DaySink(Protocol):
    def write(self, day: SimDay) -> None: ...

    def close(self) -> None: ...


def outcome_path(events_path: Path) -> Path:
    """``x.parquet`` → ``x.outcomes.parquet`` (same for ``.jsonl``)."""
    return events_path.with_name(f"{events_path.stem}.outcomes{events_path.suffix}")


class ParquetSink:
    """Events (with truth columns) and outcomes into two Parquet files, a row group a day."""

    def __init__(self, path: Path, with_outcomes: bool = True):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.outcomes_path = path, outcome_path(path) if with_outcomes else None
        self._events = pq.ParquetWriter(path, EVENT_PARQUET_SCHEMA, compression="zstd")
        self._outcomes = (pq.ParquetWriter(self.outcomes_path, OUTCOME_PARQUET_SCHEMA, compression="zstd")
                          if self.outcomes_path else None)

    def write(self, day: SimDay) -> None:
        if len(day.events):
            self._events.write_table(pa.Table.from_pandas(
                day.events[list(EVENT_PARQUET_SCHEMA.names)], EVENT_PARQUET_SCHEMA, preserve_index=False))
        if self._outcomes is not None and len(day.outcomes):
            self._outcomes.write_table(pa.Table.from_pandas(
                day.outcomes[list(OUTCOME_COLUMNS)], OUTCOME_PARQUET_SCHEMA, preserve_index=False))

    def close(self) -> None:
        self._events.close()
        if self._outcomes is not None:
            self._outcomes.close()


class JsonlSink:
    """One JSON object per line: the event's Avro/JSON layout plus the truth keys."""

    def __init__(self, path: Path, with_outcomes: bool = True):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.outcomes_path = path, outcome_path(path) if with_outcomes else None
        self._events = path.open("w", encoding="utf-8")
        self._outcomes = self.outcomes_path.open("w", encoding="utf-8") if self.outcomes_path else None

    def write(self, day: SimDay) -> None:
        frame = day.events
        truth = {c: frame[c].astype("int64").tolist() if c.startswith("tx_") else text_column(frame, c)
                 for c in TRUTH_COLUMNS if c in frame.columns}
        for i, event in enumerate(events_from_frame(frame)):
            row = event.to_dict()
            row.update({c: values[i] for c, values in truth.items()})
            self._events.write(json.dumps(row, ensure_ascii=False) + "\n")
        if self._outcomes is not None:
            for outcome in outcomes_from_frame(day.outcomes):
                self._outcomes.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")

    def close(self) -> None:
        self._events.close()
        if self._outcomes is not None:
            self._outcomes.close()


def file_sink(path: Path, with_outcomes: bool = True) -> ParquetSink | JsonlSink:
    if path.suffix == ".parquet":
        return ParquetSink(path, with_outcomes)
    if path.suffix == ".jsonl":
        return JsonlSink(path, with_outcomes)
    raise ValueError(f"{path}: output must end in .parquet or .jsonl")


def read_event_file(path: Path) -> pd.DataFrame:
    """An event file written by a sink, as an event frame (``attr_`` columns, truth kept)."""
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    rows = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            for key, value in (row.pop("attributes", None) or {}).items():
                row[ATTRIBUTE_PREFIX + key] = value
            rows.append(row)
    frame = pd.DataFrame(rows)
    for column in OPTIONAL_EVENT_COLUMNS:
        if column not in frame:
            frame[column] = None
    return frame


def read_outcome_file(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=True, dtype={"event_id": str, "customer_id": str, "terminal_id": str})


class KafkaSink:
    """Produce events and outcomes in time order (idempotent producer, acks=all).

    Message timestamps are left to the producer's clock: simulated event times may be
    years in the past, and a CreateTime that old would make the broker's retention
    delete the segment at once. The event time travels inside the record.
    """

    def __init__(self, settings: Settings, events_topic: str | None = None, outcomes_topic: str | None = None,
                 codec: Codec | None = None, json_events: bool = False, with_outcomes: bool = True):
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka import Producer

        self.settings = settings
        self.codec = codec or Codec(settings)
        self.events_topic = events_topic or settings.topics.events
        self.outcomes_topic = outcomes_topic or settings.topics.outcomes
        self.json_events = json_events
        self.with_outcomes = with_outcomes
        self.events_sent = 0
        self.outcomes_sent = 0
        self._errors: list[str] = []
        self._producer = Producer(settings.librdkafka(**{
            "enable.idempotence": True, "acks": "all", "linger.ms": 20, "compression.type": "lz4",
            # Fail a delivery after a minute instead of librdkafka's five: a user waiting on
            # `tollgate simulate --kafka` against a dead broker should hear about it.
            "message.timeout.ms": 60_000, "log_level": 0,
        }))

    def _delivered(self, err, msg) -> None:  # noqa: ANN001 - librdkafka callback
        if err is not None:
            self._errors.append(f"{msg.topic()}: {err}")

    def _produce(self, topic: str, key: str, value: bytes, headers=None) -> None:  # noqa: ANN001
        while True:
            try:
                self._producer.produce(topic, value, key.encode(), headers=headers, on_delivery=self._delivered)
                return
            except BufferError:  # local queue full: let deliveries drain, then retry
                self._producer.poll(0.1)

    def write(self, day: SimDay) -> None:
        headers = list(JSON_HEADERS) if self.json_events else None
        for record in day.records():
            if isinstance(record, TransactionEvent):
                value = (self.codec.events.encode_json(record) if self.json_events
                         else self.codec.events.encode(record, self.events_topic))
                self._produce(self.events_topic, record.customer_id, value, headers)
                self.events_sent += 1
            elif self.with_outcomes and isinstance(record, Outcome):
                # Analysts' reviews go to the trusted topic: the gate's held-out set.
                topic = outcome_topic(self.settings, record.source, self.outcomes_topic)
                self._produce(topic, record.event_id, self.codec.outcomes.encode(record, topic))
                self.outcomes_sent += 1
        self._producer.poll(0)
        self._raise_errors()

    def close(self, timeout_s: float = 60.0) -> None:
        left = self._producer.flush(timeout_s)
        self._raise_errors()
        if left:
            raise RuntimeError(f"{left} messages still undelivered after {timeout_s:.0f} s")

    def _raise_errors(self) -> None:
        if self._errors:
            raise RuntimeError(f"{len(self._errors)} messages failed, first: {self._errors[0]}")
