"""Shared scaffolding for the feedback loop's accelerated event-time tests.

A small simulated world (``engine.simulate``): an initial model is trained offline on
its first week, registered and promoted; then days are streamed in event-time order in
four-hour slices — events decided by ``engine.pipeline.DecisionPipeline`` (the engine's
own batch path, with the Redis feature store, so the decision log is the real one) and
outcomes delivered when they arrive, about seven days later. A ``Transport`` decides
whether verdicts and outcomes go through Kafka to a feedback worker or straight into a
``FeedbackProcessor``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import average_precision_score

from engine.records import Outcome, TransactionEvent, Verdict
from engine.settings import Settings

def start_feedback_worker(env: dict[str, str], log: Path, *, flush_interval_s: float,
                          batch_size: int) -> subprocess.Popen:
    """``tollgate feedback worker`` as a subprocess (no metrics port: tests may overlap)."""
    return subprocess.Popen([sys.executable, "-c", "from engine.cli import main; main()", "feedback", "worker",
                             "--flush-interval-s", str(flush_interval_s), "--batch-size", str(batch_size),
                             "--metrics-port", "0"],
                            env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)


def wait_until(pred: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


HOUR = 3_600_000
DAY = 24 * HOUR
SLICE = 4 * HOUR


def sim_config(days: int):
    from engine.simulate import SimConfig

    # A small world, and more legitimate confirmations than the default so that a
    # four-hour window holds enough labels to fine-tune on.
    return SimConfig(customers=150, terminals=250, days=days, seed=3, legit_confirm_rate=0.3,
                     drain_outcomes=False)


@dataclass
class World:
    events: list[TransactionEvent]
    fraud: dict[str, int]
    outcomes: list[Outcome]  # in arrival order
    start_ms: int


def build_world(days: int) -> World:
    from engine.simulate import Simulator
    from engine.simulate_frames import events_from_frame, outcomes_from_frame

    sim = Simulator(sim_config(days))
    events: list[TransactionEvent] = []
    outcomes: list[Outcome] = []
    fraud: dict[str, int] = {}
    for day in sim.days():
        if len(day.events):
            evs = events_from_frame(day.events)
            events.extend(evs)
            fraud.update(zip(day.events["event_id"].astype(str), day.events["tx_fraud"].astype(int)))
        outcomes.extend(outcomes_from_frame(day.outcomes))
    events.sort(key=lambda e: e.event_time_ms)
    outcomes.sort(key=lambda o: o.outcome_time_ms)
    return World(events, fraud, outcomes, sim.config.start_ms)


def train_initial(world: World, until_ms: int, settings: Settings, registry: Any) -> str:
    """The offline first model: trained on ground truth before ``until_ms``, promoted."""
    from engine.encode import FeatureSchema, FieldIsolatedEncoder
    from engine.features.memory import MemoryFeatureStore
    from engine.model import InputSpec, ModelConfig
    from engine.train import LabelledSet, TrainConfig, train_model

    evs = [e for e in world.events if e.event_time_ms < until_ms]
    enc = FieldIsolatedEncoder()
    snaps = MemoryFeatureStore(snapshot_retention_ms=60 * DAY).enrich(evs)
    data = LabelledSet(enc.encode(evs, snaps),
                       torch.tensor([float(world.fraud[e.event_id]) for e in evs]),
                       torch.tensor([e.amount for e in evs], dtype=torch.float32),
                       torch.tensor([e.event_time_ms for e in evs], dtype=torch.int64))
    cfg = ModelConfig(inputs=InputSpec.from_schema(FeatureSchema.default()), d_model=32, n_layers=1, n_heads=2)
    result = train_model(data, cfg, TrainConfig(epochs=6, threads=1, progress=False), version="initial")
    version = registry.register(result.model, result.card, version="v0-initial")
    registry.promote(version, who="test", why="initial offline model")
    return version


@dataclass
class Streamer:
    """Streams the world in four-hour slices of event time through a pipeline."""

    world: World
    pipeline: Any
    send_verdicts: Callable[[list[Verdict]], None]
    send_outcomes: Callable[[list[Outcome]], None]
    sent_verdicts: set[str] = field(default_factory=set)
    sent_outcomes: dict[str, str] = field(default_factory=dict)
    _ei: int = 0
    _oi: int = 0

    def advance_to(self, t_ms: int) -> None:
        ev, out = self.world.events, self.world.outcomes
        while self._ei < len(ev) or self._oi < len(out):
            lo = min(ev[self._ei].event_time_ms if self._ei < len(ev) else t_ms,
                     out[self._oi].outcome_time_ms if self._oi < len(out) else t_ms)
            if lo >= t_ms:
                return
            end = min(t_ms, (lo // SLICE + 1) * SLICE)
            batch = []
            while self._ei < len(ev) and ev[self._ei].event_time_ms < end:
                batch.append(ev[self._ei])
                self._ei += 1
            if batch:
                verdicts = self.pipeline.decide_batch(batch)
                self.send_verdicts(verdicts)
                self.sent_verdicts.update(v.event_id for v in verdicts)
            arrived = []
            while self._oi < len(out) and out[self._oi].outcome_time_ms < end:
                arrived.append(out[self._oi])
                self._oi += 1
            if arrived:
                self.send_outcomes(arrived)
                self.sent_outcomes.update((o.event_id, o.kind.value) for o in arrived)


def slices(start_ms: int, end_ms: int) -> Iterator[int]:
    t = start_ms
    while t <= end_ms:
        yield t
        t += SLICE


def evaluate_ap(world: World, store: Any, model_dir: Path, since_ms: int, until_ms: int,
                events_after: list[TransactionEvent] | None = None) -> float:
    """AP of a model's risk score against ground truth on events in [since, until),
    enriched through ``store`` (which must already hold the earlier history)."""
    from engine.encode import FieldIsolatedEncoder
    from engine.infer import Inference

    evs = events_after if events_after is not None else [
        e for e in world.events if since_ms <= e.event_time_ms < until_ms]
    snaps = store.decision_log([e.event_id for e in evs])
    missing = [e for e, s in zip(evs, snaps) if s is None]
    if missing:
        store.enrich(missing)
        snaps = store.decision_log([e.event_id for e in evs])
    batch = FieldIsolatedEncoder().encode(evs, snaps)
    risk = Inference.from_dir(model_dir)(batch).risk.numpy()
    y = np.array([world.fraud[e.event_id] for e in evs])
    return float(average_precision_score(y, risk))


def label_ids(labels_store: Any) -> dict[str, str]:
    df: pd.DataFrame = labels_store.read()
    return dict(zip(df["event_id"], df["outcome_kind"]))
