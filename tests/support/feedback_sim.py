"""Shared scaffolding for the feedback loop's accelerated event-time tests.

A small simulated world (``engine.offline.simulate.simulator``): an initial model is trained offline on
its first week, registered and promoted; then days are streamed in event-time order in
four-hour slices — events to the engine's input topic (a running ``tollgate run``
worker decides them, with the Redis feature store and its decision log) and outcomes
to the outcome topic when they arrive, about seven days later.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import average_precision_score

from engine.records import Outcome, TransactionEvent
from engine.settings import Settings


def start_feedback_worker(env: dict[str, str], log: Path, *, flush_interval_s: float,
                          batch_size: int) -> subprocess.Popen:
    """``tollgate feedback worker`` as a subprocess (no metrics port: tests may overlap)."""
    return subprocess.Popen([sys.executable, "-c", "from engine.interfaces.cli import main; main()", "feedback", "worker",
                             "--flush-interval-s", str(flush_interval_s), "--batch-size", str(batch_size),
                             "--metrics-port", "0"],
                            env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT)


def stop_feedback_worker(proc: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """SIGTERM (the worker flushes once more and leaves its group); killed if it has not
    stopped within ``timeout_s``."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()


HOUR = 3_600_000
DAY = 24 * HOUR
SLICE = 4 * HOUR


def sim_config(days: int):
    from engine.offline.simulate.simulator import SimConfig

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
    from engine.offline.simulate.frames import events_from_frame, outcomes_from_frame
    from engine.offline.simulate.simulator import Simulator

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


def train_initial(world: World, until_ms: int, settings: Settings, registry: Any, *, epochs: int = 2) -> str:
    """The offline first model: trained on ground truth before ``until_ms``, promoted.

    Two epochs leave it under-trained on purpose: learning from outcomes then has
    something to gain, so the first cycle's candidate clears the gate by a wide margin,
    not by noise; a six-epoch start lands within the gate's AP margin, a coin flip on the
    hundred-odd outcomes a cycle sees (figures: docs/performance.md, "Feedback loop
    end-to-end test").
    The network alone, for the same reason: a blend's trees (``TrainConfig.tree_blend``)
    make the same two-epoch model strong from the start, and the cycles then have nothing
    to gain (figures: docs/feedback.md, "The loop with the served blend"; the blend's fine-tune is
    tested in tests/unit/test_model_trees.py)."""
    from engine.features.memory import MemoryFeatureStore
    from engine.model import InputSpec, ModelConfig
    from engine.offline.train.fit import train_model
    from engine.offline.train.sets import LabelledSet, TrainConfig
    from engine.stages.encode import FeatureSchema, FieldIsolatedEncoder

    evs = [e for e in world.events if e.event_time_ms < until_ms]
    enc = FieldIsolatedEncoder()
    snaps = MemoryFeatureStore(snapshot_retention_ms=60 * DAY).enrich(evs)
    data = LabelledSet(enc.encode(evs, snaps),
                       torch.tensor([float(world.fraud[e.event_id]) for e in evs]),
                       torch.tensor([e.amount for e in evs], dtype=torch.float32),
                       torch.tensor([e.event_time_ms for e in evs], dtype=torch.int64))
    cfg = ModelConfig(inputs=InputSpec.from_schema(FeatureSchema.default()), d_model=32, n_layers=1, n_heads=2)
    result = train_model(data, cfg, TrainConfig(epochs=epochs, threads=1, progress=False, tree_blend=0.0),
                         version="initial")
    version = registry.register(result.model, result.card, version="v0-initial")
    registry.promote(version, who="test", why="initial offline model")
    return version


@dataclass
class Streamer:
    """Streams the world in event-time order: events and outcomes in four-hour slices
    (``advance_to``), or events alone at a steady wall-clock rate (``live``)."""

    world: World
    send_events: Callable[[list[TransactionEvent]], None]
    send_outcomes: Callable[[list[Outcome]], None]
    sent_events: list[str] = field(default_factory=list)  # in the order sent
    sent_outcomes: dict[str, str] = field(default_factory=dict)
    _ei: int = 0
    _oi: int = 0

    def advance_to(self, t_ms: int) -> None:
        """Send every event and outcome before ``t_ms`` not sent yet, slice by slice."""
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
                self.send_events(batch)
                self.sent_events.extend(e.event_id for e in batch)
            arrived = []
            while self._oi < len(out) and out[self._oi].outcome_time_ms < end:
                arrived.append(out[self._oi])
                self._oi += 1
            if arrived:
                self.send_outcomes(arrived)
                self.sent_outcomes.update((o.event_id, o.kind.value) for o in arrived)

    def live(self, until: Callable[[], bool], rate_per_s: float) -> list[str]:
        """Send the next events one at a time, ``rate_per_s`` a second, until ``until()``
        (checked before each) or the world runs out; returns the ids sent. Outcomes
        wait for the next ``advance_to``: they are days late anyway."""
        sent: list[str] = []
        ev = self.world.events
        next_at = time.monotonic()
        while self._ei < len(ev) and not until():
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            event = ev[self._ei]
            self._ei += 1
            self.send_events([event])
            self.sent_events.append(event.event_id)
            sent.append(event.event_id)
            next_at += 1.0 / rate_per_s
        return sent


def slices(start_ms: int, end_ms: int) -> Iterator[int]:
    t = start_ms
    while t <= end_ms:
        yield t
        t += SLICE


def evaluate_ap(world: World, store: Any, model_dir: Path, events: list[TransactionEvent]) -> float:
    """AP of a model's risk score against ground truth on ``events``, scored on the very
    inputs the engine decided them with (its decision log in ``store``)."""
    from engine.stages.encode import FieldIsolatedEncoder
    from engine.stages.infer import Inference

    snaps = store.decision_log([e.event_id for e in events])
    missing = [e.event_id for e, s in zip(events, snaps) if s is None]
    assert not missing, f"{len(missing)} events have no decision-log entry, e.g. {missing[:3]}"
    batch = FieldIsolatedEncoder().encode(events, snaps)
    risk = Inference.from_dir(model_dir)(batch).risk.numpy()
    y = np.array([world.fraud[e.event_id] for e in events])
    return float(average_precision_score(y, risk))


def stored_rows(store: Any) -> int:
    """Rows in a store's committed files, duplicates included, from the Parquet footers
    alone: a cheap lower bound to poll before a full ``read`` (which costs seconds once
    the worker has flushed hundreds of small files)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for f in store._files(None, None))


def label_ids(labels_store: Any) -> dict[str, str]:
    df: pd.DataFrame = labels_store.read()
    return dict(zip(df["event_id"], df["outcome_kind"]))
