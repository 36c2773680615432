"""The verdicts downstream consumers receive, replayed: detector → policy → hard rules.

The gate used to judge a model's *own* verdict (model + policy). What a consumer acts on
is the final verdict: the detector's floor and the hard rules come after the policy and
always win. ``FinalReplay`` rebuilds that verdict for stored decisions, each with the
rule set that decided it (its ``rules_version``), from a model's calibrated scores:

1. **detect**: the shipped injection detector on each event's untrusted text (run once
   per row set: it does not depend on the model);
2. **decide**: ``engine.stages.decide.decide`` with the base policy overridden by *that* rule
   set's ``policy.yaml``, and the detector's result;
3. **guard**: that rule set's hard rules, on the event and the context snapshot the
   engine recorded.

A decision whose rules version is not among the known rule sets is judged by the
current one and counted in ``missing_rules``: the report says how many, rather than
guessing silently. Not replayed: the pipeline's text-blind twin (the "user text may
only add suspicion" step) and degraded mode; both are rare and model-independent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from engine.features.snapshot import ContextSnapshot, RuleContexts
from engine.pipeline import detect_events, guard_batch
from engine.records import DECISIONS, TransactionEvent
from engine.stages.contracts import Detector
from engine.stages.contracts import RuleGuard as GuardStage
from engine.stages.decide import Policy, ScoreColumns, decide_columns
from feedback.learn.gate import Scores

_INDEX = {d: i for i, d in enumerate(DECISIONS)}


class RuleGuard(GuardStage, Protocol):
    """What the replay needs of ``engine.stages.guard.Guard``: the guard stage's contract
    and the rule set's policy overrides."""

    @property
    def policy(self) -> Mapping[str, Any]: ...


@dataclass(slots=True, frozen=True)
class ReplayRows:
    """Decoded inputs of stored rows (model-independent, so decoded and screened once)."""

    events: list[TransactionEvent]
    contexts: RuleContexts
    rules_versions: list[str]
    detections: list[Any]


@dataclass(slots=True, frozen=True)
class FinalVerdicts:
    verdicts: np.ndarray  # [N] index into DECISIONS
    missing_rules: int  # rows judged by the current rules: their own version is unknown


class FinalReplay:
    """Final verdicts of a model's scores on stored rows, rule set by rule set."""

    def __init__(self, base_policy: Policy, guards: Mapping[str, RuleGuard], current: RuleGuard | None,
                 detector: Detector | None):
        self.base_policy = base_policy
        self.guards = dict(guards)
        self.current = current
        if current is not None:
            self.guards.setdefault(current.version, current)
        self.detector = detector

    def policy_for(self, guard: RuleGuard | None) -> Policy:
        return self.base_policy if guard is None else self.base_policy.with_overrides(dict(guard.policy))

    def prepare(self, rows: pd.DataFrame) -> ReplayRows:
        """Events, rule contexts and detector results of the rows (``event_json``,
        ``snapshot_json``, ``rules_version`` columns, as the stores keep them)."""
        events = [TransactionEvent.from_dict(json.loads(s)) for s in rows["event_json"]]
        snaps = [ContextSnapshot.from_dict(json.loads(s)) for s in rows["snapshot_json"]]
        contexts = RuleContexts(snaps)
        return ReplayRows(events, contexts, [str(v) for v in rows["rules_version"]],
                          detect_events(self.detector, events))

    def verdicts(self, prepared: ReplayRows, scores: Scores) -> FinalVerdicts:
        n = len(prepared.events)
        out = np.zeros(n, dtype=int)
        missing = 0
        groups: dict[str, list[int]] = {}
        for i, version in enumerate(prepared.rules_versions):
            if version not in self.guards:
                missing += 1
                version = self.current.version if self.current is not None else ""
            groups.setdefault(version, []).append(i)
        for version, idx in groups.items():
            guard = self.guards.get(version)
            policy = self.policy_for(guard)
            rows = ScoreColumns.of(scores.probs[idx], scores.risk[idx], np.full(len(idx), -1))
            proposed = decide_columns(rows, [prepared.detections[i] for i in idx], policy)
            finals = guard_batch(guard, [prepared.events[i] for i in idx], prepared.contexts.take(idx), proposed)
            for i, final in zip(idx, finals):
                out[i] = _INDEX[final.verdict]
        return FinalVerdicts(out, missing)
