"""The benchmark's own I/O with the broker and the worker process (``ops/bench/engine.py``):
a read_committed verdict reader, a paced producer, the machine's CPU by process from
``/proc``, and the worker's ``/metrics`` scraped into numbers. Imported as
``ops.bench.engine_io`` (the repository root is on ``sys.path`` once ``_common`` has
run)."""

from __future__ import annotations

import os
import threading
import time
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from engine.records import TransactionEvent
from engine.wire.codec import JSON_HEADERS, Codec
from ops.bench.engine_events import BenchEvent


class VerdictReader(threading.Thread):
    """read_committed consumer: (receive time, produce time) per verdict, in ms.
    ``relayed``: the topic holds the events themselves (``ops.bench.engine_relay``)."""

    def __init__(self, bootstrap: str, topic: str, expected: int, relayed: bool = False):
        super().__init__(daemon=True)
        self.codec = Codec()
        self._decode = self.codec.decode_event if relayed else self.codec.decode_verdict
        self.expected = expected
        self.received: list[tuple[float, float]] = []
        self._halt = threading.Event()
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex}",
                                  "isolation.level": "read_committed", "enable.auto.commit": False,
                                  "fetch.wait.max.ms": 5})
        parts = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])

    def run(self) -> None:
        # poll() returns as soon as one record is there (consume(n, t) would wait for n or t,
        # adding up to t to every measured latency); then drain what is already fetched.
        while not self._halt.is_set() and len(self.received) < self.expected:
            first = self.consumer.poll(0.05)
            if first is None:
                continue
            now = time.time() * 1000.0
            for m in [first, *self.consumer.consume(1000, 0)]:
                if m.error() is None:
                    self.received.append((now, float(self._decode(m.value(), m.headers()).event_time_ms)))

    def stop(self) -> None:
        self._halt.set()
        if self.is_alive():
            self.join(5)
        self.consumer.close()


def _wire(codec: Codec, b: BenchEvent, event: TransactionEvent) -> tuple[bytes, list | None]:
    """The value and headers ``b`` is sent with: JSON with its content-type header, or Avro."""
    if b.json:
        return codec.events.encode_json(event), list(JSON_HEADERS)
    return codec.encode_event(event), None


def produce_timed(bootstrap: str, topic: str, events: Sequence[BenchEvent], codec: Codec, rate: float) -> None:
    """Paced produce; each event's time is stamped at the moment it is sent."""
    import dataclasses

    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "enable.idempotence": True})
    t0 = time.monotonic()
    for i, b in enumerate(events):
        ahead = t0 + i / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
        e = dataclasses.replace(b.event, event_time_ms=int(time.time() * 1000))
        value, headers = _wire(codec, b, e)
        p.produce(topic, value=value, key=e.customer_id.encode(), headers=headers)
        p.poll(0)
    p.flush(60)


def produce_backlog(bootstrap: str, topic: str, events: Sequence[BenchEvent], codec: Codec) -> None:
    """Produce all of ``events`` as fast as the broker takes them (a saturation backlog)."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    for b in events:
        value, headers = _wire(codec, b, b.event)
        while True:
            try:
                p.produce(topic, value=value, key=b.event.customer_id.encode(), headers=headers)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    if p.flush(120) != 0:
        raise RuntimeError("the backlog could not be flushed within 120 s")


def _proc_cpu_ticks(entry: Path) -> tuple[int, int, int] | None:
    """(pid, parent pid, user + system clock ticks) of one ``/proc`` entry, None if gone."""
    try:
        fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(entry.name), int(fields[1]), int(fields[11]) + int(fields[12])


def machine_cpu(worker_pid: int) -> dict[str, float]:
    """CPU seconds so far of every process on the machine, grouped: the worker and its
    live children (the model process with ``settings.batch.infer_process``; also apart,
    as ``worker_main`` and ``worker_model``), the broker
    (a JVM running ``kafka.Kafka``), Redis, this benchmark (load generator and verdict
    reader), the outcomes recorded during the run (``ops/bench/engine_outcomes.py``, the
    feedback worker's share), everything else, and the machine's idle time (``/proc/stat``). Two
    snapshots give each group's share of the cores over a run (``core_shares``)."""
    tick = os.sysconf("SC_CLK_TCK")
    out = dict.fromkeys(("worker", "worker_main", "worker_model", "broker", "redis", "bench", "outcomes", "other"), 0.0)
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        found = _proc_cpu_ticks(entry)
        if found is None:
            continue
        pid, ppid, ticks = found
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if pid == worker_pid or ppid == worker_pid:
            out["worker_main" if pid == worker_pid else "worker_model"] += ticks / tick
            group = "worker"
        elif pid == me:
            group = "bench"
        elif b"kafka.Kafka" in cmdline:
            group = "broker"
        elif cmdline.startswith(b"redis-server"):
            group = "redis"
        elif b"engine_outcomes.py" in cmdline:
            group = "outcomes"
        else:
            group = "other"
        out[group] += ticks / tick
    with open("/proc/stat") as f:  # "cpu user nice system idle iowait ..." summed over cores
        out["idle"] = int(f.readline().split()[4]) / tick
    return out


def scrape(port: int) -> dict[tuple[str, str], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        name_labels, value = line.rsplit(" ", 1)
        name, _, labels = name_labels.partition("{")
        stage = ""
        if 'stage="' in labels:
            stage = labels.split('stage="', 1)[1].split('"', 1)[0]
        out[(name, stage)] = float(value)
    return out
