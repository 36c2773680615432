"""A rehearsal of the feedback loop on a simulated stream, without Kafka.

What the engine and the feedback worker would write, written straight into the real
stores (``LabelStore``, ``DecisionStore``) in event time, so the real scheduler — its
Redis lock and state, registry, fine-tune, final-verdict gate — runs cycles on it:

1. ``build_world``: a seeded simulated stream (``engine.offline.simulate.simulator``), every event's
   context snapshot from the in-memory feature store (history features; no
   delayed-label features, which the stores do not need), ground truth kept aside;
2. ``train_initial``: a deliberately weak first model (one epoch on the first days'
   ground truth), registered and promoted;
3. ``LoopRehearsal.advance_to(t)``: the serving model decides every event before ``t``
   (model + policy; the decision rows carry the current rule set's version, so the
   gate's replay applies its hard rules), and every outcome that *arrived* before ``t``
   becomes a labelled example of the decision it judges.

``ops/bench/feedback_loop.py`` drives three cycles of it and prints what the verdicts
did; ``tollgate feedback drill`` rehearses a poisoning; the integration tests use it on
a small world.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from engine.features.memory import MemoryFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.model import InputSpec, ModelConfig, load_model_dir
from engine.offline.simulate.frames import events_from_frame, outcomes_from_frame
from engine.offline.simulate.simulator import Simulator
from engine.offline.train.fit import train_model
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.records import Outcome, TransactionEvent
from engine.stages.encode import FeatureSchema
from feedback.learn.dataset import score
from feedback.learn.gate import heldout_metrics
from feedback.store import DecisionRow, LabelledExample
from feedback.stream.join import preferred_verdict

DAY_MS = 86_400_000


@dataclass
class World:
    events: list[TransactionEvent]  # event-time order
    snapshots: list[dict[str, Any]]  # per event, ContextSnapshot.to_dict() without the event
    fraud: np.ndarray  # [N] ground truth
    outcomes: list[Outcome]  # arrival order
    start_ms: int
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {e.event_id: i for i, e in enumerate(self.events)}


def build_world(config: Any) -> World:
    """``config``: an ``engine.offline.simulate.simulator.SimConfig``."""
    sim = Simulator(config)
    events: list[TransactionEvent] = []
    fraud: dict[str, int] = {}
    outcomes: list[Outcome] = []
    for day in sim.days():
        if len(day.events):
            events.extend(events_from_frame(day.events))
            fraud.update(zip(day.events["event_id"].astype(str), day.events["tx_fraud"].astype(int)))
        outcomes.extend(outcomes_from_frame(day.outcomes))
    events.sort(key=lambda e: e.event_time_ms)
    outcomes.sort(key=lambda o: o.outcome_time_ms)
    snaps = MemoryFeatureStore(snapshot_retention_ms=60 * DAY_MS).enrich(events)
    snap_dicts = []
    for s in snaps:
        d = s.to_dict()
        d.pop("event", None)
        snap_dicts.append(d)
    return World(events, snap_dicts, np.array([fraud[e.event_id] for e in events], dtype=int), outcomes,
                 sim.config.start_ms)


def encode(world: World, idx: np.ndarray, encoder: Any) -> Any:
    return encoder.encode([world.events[i] for i in idx],
                          [ContextSnapshot.from_dict(world.snapshots[i]) for i in idx])


def train_initial(world: World, until_ms: int, registry: Any, encoder: Any, *, epochs: int = 1,
                  seed: int = 0, derived: bool = False, tree_blend: float = 0.0) -> str:
    """A weak first model on ground truth before ``until_ms``; registered and promoted.
    ``derived``: with the derivations a trainer turns on by default
    (``ModelConfig.default_for``, as ``tollgate model train`` does), at the same small size.
    ``tree_blend``: with trees blended in at that weight (``TrainConfig.tree_blend``; 0, the
    rehearsal's first model as docs/feedback.md measured it: the network alone)."""
    idx = np.array([i for i, e in enumerate(world.events) if e.event_time_ms < until_ms])
    data = LabelledSet(encode(world, idx, encoder), torch.tensor(world.fraud[idx], dtype=torch.float32),
                       torch.tensor([world.events[i].amount for i in idx], dtype=torch.float32),
                       torch.tensor([world.events[i].event_time_ms for i in idx], dtype=torch.int64))
    inputs, small = InputSpec.from_schema(FeatureSchema.default()), {"d_model": 32, "n_layers": 1, "n_heads": 2}
    cfg = ModelConfig.default_for(inputs, **small) if derived else ModelConfig(inputs=inputs, **small)
    training = TrainConfig(epochs=epochs, threads=1, progress=False, seed=seed, tree_blend=tree_blend)
    result = train_model(data, cfg, training, version="initial")
    version = registry.register(result.model, result.card, version="v0-initial", now_ms=until_ms)
    registry.promote(version, who="rehearsal", why="weak initial model", now_ms=until_ms)
    return version


class LoopRehearsal:
    """Writes decisions and labelled examples in event time, as the stream would."""

    def __init__(self, world: World, scheduler: Any, *, serve_from_ms: int, rules_version: str):
        self.world = world
        self.scheduler = scheduler
        self.rules_version = rules_version
        self.verdict_of: dict[str, dict[str, Any]] = {}
        self._ei = next((i for i, e in enumerate(world.events) if e.event_time_ms >= serve_from_ms),
                        len(world.events))
        self._oi = 0

    def advance_to(self, t_ms: int) -> tuple[int, int]:
        """Decide events and store outcomes before ``t_ms``; returns (decided, labelled)."""
        decided = self._decide_until(t_ms)
        labelled = self._label_until(t_ms)
        return decided, labelled

    def _decide_until(self, t_ms: int) -> int:
        w = self.world
        end = self._ei
        while end < len(w.events) and w.events[end].event_time_ms < t_ms:
            end += 1
        if end == self._ei:
            return 0
        idx = np.arange(self._ei, end)
        reg = self.scheduler.registry
        version = reg.serving_version()
        loaded = load_model_dir(reg.path_of(version))
        s = score(loaded.model, loaded.card, encode(w, idx, self.scheduler.encoder), self.scheduler._policy())
        labels = ("pass", "review", "reject")
        rows = []
        for k, i in enumerate(idx):
            e = w.events[i]
            verdict = {"event_id": e.event_id, "event_time_ms": e.event_time_ms, "customer_id": e.customer_id,
                       "verdict": labels[int(s.verdicts[k])],
                       "probabilities": dict(zip(labels, map(float, s.probs[k]))),
                       "risk_score": float(s.risk[k]), "model_version": version,
                       "rules_version": self.rules_version, "decided_at_ms": e.event_time_ms}
            self.verdict_of[e.event_id] = verdict
            rows.append(DecisionRow.from_verdict(verdict, w.snapshots[i], e.to_dict()))
        self.scheduler.decisions.append(rows, now_ms=t_ms)
        self._ei = end
        return len(rows)

    def _label_until(self, t_ms: int) -> int:
        w = self.world
        rows = []
        while self._oi < len(w.outcomes) and w.outcomes[self._oi].outcome_time_ms < t_ms:
            o = w.outcomes[self._oi]
            self._oi += 1
            vd = self.verdict_of.get(o.event_id)
            if vd is None:  # decided before the rehearsal served: no decision log to join
                continue
            i = w.index[o.event_id]
            e = w.events[i]
            probs = vd["probabilities"]
            rows.append(LabelledExample(
                event_id=e.event_id, event_time_ms=e.event_time_ms, customer_id=e.customer_id,
                terminal_id=e.terminal_id, event_json=json.dumps(e.to_dict(), sort_keys=True, default=str),
                snapshot_json=json.dumps(w.snapshots[i], sort_keys=True, default=str), verdict=vd["verdict"],
                p_pass=probs["pass"], p_review=probs["review"], p_reject=probs["reject"],
                risk_score=vd["risk_score"], model_version=vd["model_version"], rules_version=vd["rules_version"],
                decided_at_ms=vd["decided_at_ms"], outcome_kind=o.kind.value, outcome_source=o.source,
                outcome_time_ms=o.outcome_time_ms, outcome_rev=1, is_bad=int(o.kind.is_bad),
                preferred=preferred_verdict(o.kind)))
        if rows:
            self.scheduler.labels.append(rows, now_ms=t_ms)
        return len(rows)


def future_metrics(world: World, model_dir: Any, encoder: Any, policy: Any, lo_ms: int, hi_ms: int) -> dict[str, float]:
    """Model + policy verdicts on *every* event in ``[lo_ms, hi_ms)`` against ground truth
    (not only the outcomes that got reported): the yardstick no outcome stream can bend."""
    idx = np.array([i for i, e in enumerate(world.events) if lo_ms <= e.event_time_ms < hi_ms])
    loaded = load_model_dir(model_dir)
    s = score(loaded.model, loaded.card, encode(world, idx, encoder), policy)
    return heldout_metrics(s, world.fraud[idx])
