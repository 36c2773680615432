"""The pieces of ``tollgate quickstart``: stack, model, paced replay, live summary.

The command (``engine/interfaces/commands/quickstart.py``) strings them together; each piece is
usable and testable on its own:

* ``ensure_stack`` — ``ops/stack up`` (idempotent) and ``tollgate topics create``;
* ``ensure_model`` — the registry's serving model, or a small model trained here on
  simulated history (``train_quick``: ~2 minutes on 2 CPU cores) and promoted;
* ``PacedProducer`` — simulated days produced to Kafka at ``speed`` × real time: events at
  their event time, outcomes at their (days later) arrival time;
* ``LiveSummary`` — reads ``tx.verdicts`` and joins them to the simulator's ground
  truth: verdict counts, fraud caught vs missed, good customers sent to review,
  latency percentiles.
"""

from __future__ import annotations

import heapq
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from engine.features.memory import MemoryFeatureStore
from engine.features.store import LabelArrival
from engine.model import InputSpec, ModelConfig
from engine.model.registry import ModelRegistry
from engine.offline.simulate.frames import events_from_frame, outcomes_from_frame
from engine.offline.simulate.simulator import SimConfig, Simulator
from engine.offline.train.fit import train_model
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.records import OutcomeKind
from engine.settings import REPO_ROOT, Settings
from engine.stages.encode import EncodedBatch, FieldIsolatedEncoder
from engine.wire.codec import Codec
from engine.wire.topics import outcome_topic

TOLLGATE = str(Path(sys.executable).parent / "tollgate")


class QuickstartError(RuntimeError):
    """A step could not run; the message says what to do."""


# -- 1. the stack ---------------------------------------------------------------------------

def ensure_stack(env: dict[str, str]) -> dict[str, str]:
    """Start (or find running) Kafka and Redis with ``ops/stack up``; create the topics.
    Returns the environment with TOLLGATE_KAFKA_BOOTSTRAP / TOLLGATE_REDIS_URL set."""
    stack = REPO_ROOT / "ops" / "stack"
    if not stack.is_file():
        raise QuickstartError(f"{stack} is missing: run the quickstart from a Tollgate checkout")
    proc = subprocess.run([str(stack), "up"], env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise QuickstartError("ops/stack up failed:\n" + proc.stderr[-2000:])
    env = dict(env)
    for line in proc.stdout.splitlines():
        name, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and name.startswith("TOLLGATE_"):
            env[name] = value
    topics = subprocess.run([TOLLGATE, "topics", "create"], env=env, capture_output=True, text=True, timeout=120)
    if topics.returncode != 0:
        raise QuickstartError("tollgate topics create failed:\n" + (topics.stderr or topics.stdout)[-2000:])
    return env


# -- 2. the model -----------------------------------------------------------------------------

def ensure_model(settings: Settings, redis_client: Any, *, history_days: int, customers: int, seed: int,
                 say: Any = print, epochs: int = 5, name: str = "quickstart") -> str:
    """The serving version; trains and promotes one on simulated history if there is none
    (registered as ``<name>-<YYYYmmdd-HHMMSS>``; ``tollgate model bootstrap`` uses it too)."""
    registry = ModelRegistry(settings, redis_client)
    serving = registry.serving_version()
    if serving is not None and registry.exists(serving):
        say(f"model: {serving} is serving (registry); not retraining")
        return serving
    train_customers = world_customers(customers)
    say(f"model: none serving — training a small one on {history_days} simulated days "
        f"({train_customers} customers); a few minutes on 2 CPU cores")
    model, card = train_quick(history_days=history_days, customers=train_customers, seed=seed, epochs=epochs,
                              report_dir=Path(settings.paths.reports_dir) / f"{name}-training")
    version = registry.register(model, card, version=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")
    registry.promote(version, who=name, why="first model, trained on simulated history")
    say(f"model: {version} trained, registered and promoted "
        f"(validation: {json.dumps({k: round(v, 3) for k, v in card.metrics.items() if isinstance(v, float)})})")
    return version


def world_customers(customers: int) -> int:
    """Cards in the simulated world the quickstart trains on and then replays.

    At least 1,000, whatever was asked: fewer leave too few frauds to learn from
    (validation AUC by world size: docs/performance.md, "Quickstart")."""
    return max(customers, 1000)


def train_quick(*, history_days: int, customers: int, seed: int, report_dir: Path | None = None,
                epochs: int = 5, **train_options: Any) -> tuple[Any, Any]:
    """Simulate ``history_days``, enrich in event time (delayed outcomes feed the terminal
    risk features as they arrive, as the feedback worker does live), encode, train.
    ``train_options`` override ``TrainConfig`` fields (e.g. ``text_dropout``).

    Labels are the simulator's ground truth, as if every outcome were known: this is the
    bootstrap model; the feedback loop then fine-tunes on outcomes as they arrive."""
    # local: torch loads only on this path
    import torch

    # One thread: on a small shared CPU, OpenMP spin between two threads made each
    # optimiser step many times slower (docs/performance.md, "Quickstart").
    torch.set_num_threads(1)
    data, encoder = simulated_training_set(history_days=history_days, customers=customers, seed=seed)
    cfg = TrainConfig(**{"seed": seed, "epochs": epochs, "batch_size": 256, "negative_keep": 0.3, "threads": 1,
                         **train_options})
    # The text segment adds no detection on the simulator's memo and injection scenarios,
    # and a model that reads it learns that text means safety; the detector still screens
    # it (docs/field-isolation.md; python ops/bench/user_text_train.py).
    model_config = ModelConfig.default_for(InputSpec.from_schema(encoder.schema), read_text=False)
    result = train_model(data, model_config, cfg, version="quickstart", report_dir=report_dir)
    return result.model, result.card


def simulated_training_set(*, history_days: int, customers: int, seed: int) -> tuple[Any, Any]:
    """``train_quick``'s data: (``LabelledSet`` of the simulated days, the encoder)."""
    # local: torch loads only on this path
    import torch

    encoder, store = FieldIsolatedEncoder(), MemoryFeatureStore()
    seen: dict[str, tuple[str, int]] = {}  # event id -> (terminal, event time), to place arriving labels
    batches, labels, amounts, times = [], [], [], []
    config = SimConfig(customers=customers, terminals=customers * 2, days=history_days, seed=seed,
                       outcome_delay_mean_days=2.0, drain_outcomes=False)
    for day in Simulator(config).days():
        arrivals = []
        for eid, kind, at in zip(day.outcomes.get("event_id", ()), day.outcomes.get("kind", ()),
                                 day.outcomes.get("outcome_time_ms", ())):
            if str(eid) in seen:
                terminal, t = seen[str(eid)]
                arrivals.append(LabelArrival(str(eid), terminal, t, int(at), OutcomeKind(kind).is_bad))
        store.record_outcomes(arrivals)
        if not len(day.events):
            continue
        events = events_from_frame(day.events)
        seen.update((e.event_id, (e.terminal_id, e.event_time_ms)) for e in events)
        for start in range(0, len(events), 2048):
            chunk = events[start:start + 2048]
            batches.append(encoder.encode(chunk, store.enrich(chunk)))
        labels.append(day.events["tx_fraud"].to_numpy())
        amounts.append(day.events["amount"].to_numpy())
        times.append(day.events["event_time_ms"].to_numpy())
    data = LabelledSet(EncodedBatch.concat(batches),
                       torch.as_tensor(np.concatenate(labels), dtype=torch.float32),
                       torch.as_tensor(np.concatenate(amounts), dtype=torch.float32),
                       torch.as_tensor(np.concatenate(times), dtype=torch.int64))
    return data, encoder


# -- 3. the replay ----------------------------------------------------------------------------

@dataclass
class Truth:
    """Ground truth of the replayed events, kept only for the summary (the engine never sees it)."""

    is_fraud: dict[str, bool] = field(default_factory=dict)
    produced_at: dict[str, float] = field(default_factory=dict)
    outcomes: int = 0


class PacedProducer(threading.Thread):
    """Produces simulated days to Kafka, paced: ``speed`` simulated seconds per second."""

    def __init__(self, settings: Settings, *, days: int, customers: int, seed: int, speed: float,
                 start_date: date | None, outcome_delay_days: float, skip_days: int = 0, warm_days: int = 0):
        super().__init__(name="tollgate-replay", daemon=True)
        self.settings, self.days, self.customers, self.seed = settings, days, customers, seed
        self.speed, self.start_date, self.outcome_delay_days = speed, start_date, outcome_delay_days
        #: The world's first ``skip_days`` are history the model trained on: not replayed,
        #: except the last ``warm_days`` of them, sent unpaced and left out of the summary,
        #: so the engine's context (customer history, terminal risk from outcomes) is warm
        #: when the scored days start — as it would be in production.
        self.skip_days, self.warm_days = skip_days, min(warm_days, skip_days)
        self.truth = Truth()
        self.done = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.sim_now_ms: int | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # noqa: BLE001 - reported by the command
            self.error = exc
        finally:
            self.done.set()

    def _run(self) -> None:
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka import Producer

        codec = Codec(self.settings)
        producer = Producer(self.settings.librdkafka(**{"linger.ms": 5, "enable.idempotence": True}))
        dated = {"start_date": self.start_date} if self.start_date is not None else {}
        config = SimConfig(customers=self.customers, terminals=self.customers * 2,
                           days=self.skip_days + self.days, seed=self.seed, **dated,
                           outcome_delay_mean_days=self.outcome_delay_days, drain_outcomes=False)
        wall0 = sim0 = None
        for index, day in enumerate(Simulator(config).days()):
            if index < self.skip_days - self.warm_days:
                continue
            warming = index < self.skip_days
            events = events_from_frame(day.events) if len(day.events) else []
            if not warming:
                for eid, fraud in zip(day.events["event_id"], day.events["tx_fraud"]) if len(day.events) else ():
                    self.truth.is_fraud[str(eid)] = bool(fraud)
            outcomes = outcomes_from_frame(day.outcomes) if len(day.outcomes) else []
            merged = heapq.merge(((e.event_time_ms, 0, e) for e in events),
                                 ((o.outcome_time_ms, 1, o) for o in outcomes), key=lambda x: (x[0], x[1]))
            for t_ms, kind, record in merged:
                if self.stop.is_set():
                    producer.flush(10)
                    return
                if not warming:
                    if wall0 is None:
                        wall0, sim0 = time.monotonic(), t_ms
                    ahead = wall0 + (t_ms - sim0) / 1000.0 / self.speed - time.monotonic()
                    if ahead > 0:
                        producer.poll(0)
                        time.sleep(min(ahead, 0.5))
                self.sim_now_ms = t_ms
                if kind == 0:
                    if not warming:
                        self.truth.produced_at[record.event_id] = time.time() * 1000.0
                    _produce(producer, self.settings.topics.events, record.customer_id, codec.encode_event(record))
                else:
                    self.truth.outcomes += 0 if warming else 1
                    topic = outcome_topic(self.settings, record.source)  # reviews: the trusted topic
                    _produce(producer, topic, record.event_id, codec.encode_outcome(record, topic))
        if producer.flush(30) != 0:
            raise QuickstartError("some records could not be delivered to Kafka")


def _produce(producer: Any, topic: str, key: str, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, key=key.encode(), value=value)
            return
        except BufferError:
            producer.poll(0.05)


# -- 4. the live summary ----------------------------------------------------------------------

class LiveSummary:
    """Reads committed verdicts (from the end of the topic at start) and scores them
    against the replay's ground truth."""

    def __init__(self, settings: Settings, truth: Truth):
        # local: a Kafka client only on this path (no broker needed elsewhere)
        from confluent_kafka import Consumer, TopicPartition

        self.truth = truth
        self.codec = None
        self.consumer = Consumer(settings.librdkafka(**{
            "group.id": f"tollgate-quickstart-{os.getpid()}-{int(time.time())}", "isolation.level": "read_committed",
            "enable.auto.commit": False, "auto.offset.reset": "latest"}))
        topic = settings.topics.verdicts
        meta = self.consumer.list_topics(topic, timeout=10).topics.get(topic)
        if meta is None or meta.error is not None:
            raise QuickstartError(f"topic {topic} is missing: run `tollgate topics create`")
        parts = []
        for p in meta.partitions:
            _, high = self.consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
            parts.append(TopicPartition(topic, p, high))
        self.consumer.assign(parts)
        self.codec = Codec(settings)
        self.verdicts: dict[str, Any] = {}
        self.e2e_ms: list[float] = []

    def poll(self, seconds: float = 0.5) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for m in self.consumer.consume(500, 0.1):
                if m.error() is not None:
                    continue
                v = self.codec.decode_verdict(m.value())
                if v.event_id in self.truth.is_fraud and v.event_id not in self.verdicts:
                    self.verdicts[v.event_id] = v
                    sent = self.truth.produced_at.get(v.event_id)
                    if sent is not None:
                        self.e2e_ms.append(time.time() * 1000.0 - sent)

    def close(self) -> None:
        self.consumer.close()

    def figures(self) -> dict[str, Any]:
        counts = {"pass": 0, "review": 0, "reject": 0}
        caught = missed = good_review = good_reject = fraud = 0
        for eid, v in self.verdicts.items():
            counts[v.verdict.value] += 1
            if self.truth.is_fraud.get(eid):
                fraud += 1
                if v.verdict.value == "pass":
                    missed += 1
                else:
                    caught += 1
            elif v.verdict.value == "review":
                good_review += 1
            elif v.verdict.value == "reject":
                good_reject += 1
        good = len(self.verdicts) - fraud
        lat = np.array([v.decision_latency_ms for v in self.verdicts.values()] or [0.0])
        e2e = np.array(self.e2e_ms or [0.0])
        return {
            "produced": len(self.truth.produced_at), "decided": len(self.verdicts), "verdicts": counts,
            "fraud": fraud, "fraud_caught": caught, "fraud_missed": missed,
            "good": good, "good_sent_to_review": good_review, "good_rejected": good_reject,
            "outcomes_sent": self.truth.outcomes,
            "decision_latency_ms": {f"p{q}": float(np.percentile(lat, q)) for q in (50, 95, 99)},
            "end_to_end_ms": {f"p{q}": float(np.percentile(e2e, q)) for q in (50, 95, 99)},
        }


def summary_line(f: dict[str, Any]) -> str:
    v, lat, e2e = f["verdicts"], f["decision_latency_ms"], f["end_to_end_ms"]
    caught = f"{f['fraud_caught']}/{f['fraud']}" if f["fraud"] else "0/0"
    return (f"decided {f['decided']:>6}/{f['produced']:<6} pass {v['pass']:>5} review {v['review']:>5} "
            f"reject {v['reject']:>5} | fraud caught {caught} missed {f['fraud_missed']} | good→review "
            f"{f['good_sent_to_review']} good→reject {f['good_rejected']} | decide p50/p95/p99 "
            f"{lat['p50']:.1f}/{lat['p95']:.1f}/{lat['p99']:.1f} ms, end-to-end p50/p99 "
            f"{e2e['p50']:.0f}/{e2e['p99']:.0f} ms")


def write_report(directory: Path, figures: dict[str, Any], latencies_ms: list[float], meta: dict[str, Any]) -> Path:
    """summary.json, summary.md and a latency histogram (PNG) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "summary.json").write_text(json.dumps({"figures": figures, "run": meta}, indent=2))
    v = figures["verdicts"]
    fraud, good = max(figures["fraud"], 1), max(figures["good"], 1)
    md = [
        "# Tollgate quickstart run", "",
        f"- model `{meta.get('model_version')}`, {meta.get('days')} simulated days at {meta.get('speed')}× real time, "
        f"{meta.get('customers')} customers",
        f"- events produced {figures['produced']}, decided {figures['decided']}; outcomes sent {figures['outcomes_sent']}",
        "", "| verdict | count |", "|---|---|",
        *[f"| {k} | {n} |" for k, n in v.items()], "",
        f"- fraud caught (review or reject): {figures['fraud_caught']} of {figures['fraud']} "
        f"({100 * figures['fraud_caught'] / fraud:.1f} %); missed (passed): {figures['fraud_missed']}",
        f"- good customers sent to review: {figures['good_sent_to_review']} of {figures['good']} "
        f"({100 * figures['good_sent_to_review'] / good:.2f} %); rejected: {figures['good_rejected']}",
        "- decision latency (arrival at worker → verdict) p50/p95/p99: "
        + "/".join(f"{figures['decision_latency_ms'][k]:.1f}" for k in ("p50", "p95", "p99")) + " ms",
        "- end to end (produced → verdict read back) p50/p95/p99: "
        + "/".join(f"{figures['end_to_end_ms'][k]:.0f}" for k in ("p50", "p95", "p99")) + " ms",
        "", "![latency](latency.png)", "",
    ]
    (directory / "summary.md").write_text("\n".join(md))
    try:
        # local: matplotlib loads only when a picture is drawn
        import matplotlib

        matplotlib.use("Agg")
        # local: matplotlib loads only when a picture is drawn
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.2))
        ax.hist(latencies_ms or [0.0], bins=50, color="#3b6ea8")
        ax.set_xlabel("decision latency (ms)")
        ax.set_ylabel("verdicts")
        ax.set_title("Arrival at worker → verdict")
        fig.tight_layout()
        fig.savefig(directory / "latency.png", dpi=110)
        plt.close(fig)
    except Exception:  # noqa: BLE001 - a missing plot must not lose the report
        pass
    return directory

