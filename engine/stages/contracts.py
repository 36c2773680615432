"""The typed contracts between ``DecisionPipeline`` and the stages it calls.

One ``Protocol`` per pluggable stage, between typed records: the real implementations
(``FieldIsolatedEncoder``, ``Inference`` / ``ProcessInference``, ``InjectionDetector``,
``Guard``) satisfy them, and so must any test double. The feature store's contract is
``engine.features.store.FeatureStore``; the policy (``engine.stages.decide.decide``) is
a plain function.

The record types are imported for the checker only: the pipeline must stay importable
without loading torch, the rules engine or the detector's weights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine.records import TransactionEvent

if TYPE_CHECKING:
    from engine.features.snapshot import ContextSnapshot
    from engine.stages.decide import PolicyDecision, ScoreColumns, ScoreRow
    from engine.stages.detect import DetectorResult
    from engine.stages.encode import ArrayBatch, EncodedBatch
    from engine.stages.guard import GuardedDecision

__all__ = ["Detector", "Encoder", "RuleGuard", "Scorer", "Scores"]


class Encoder(Protocol):
    """encode: events and their context → one batch (user text in its own segment), as
    tensors (``EncodedBatch``) or, for a worker whose model runs in its model process,
    the same arrays in NumPy (``ArrayBatch``)."""

    def encode(self, events: Sequence[TransactionEvent],
               snapshots: Sequence[ContextSnapshot]) -> EncodedBatch | ArrayBatch: ...


class Scores(Protocol):
    """A batch's calibrated outputs (``ModelOutputs``, or ``ArrayOutputs`` from a model
    process): the policy reads them as columns (``score_columns``); ``score_rows`` gives
    one ``ScoreRow`` per row, for the offline tools."""

    @property
    def model_version(self) -> str: ...

    def __len__(self) -> int: ...

    def score_rows(self) -> list[ScoreRow]: ...

    def score_columns(self) -> ScoreColumns: ...


class Scorer(Protocol):
    """infer: one forward pass over a batch → calibrated outputs. Pure: never changes state."""

    def __call__(self, batch: EncodedBatch | ArrayBatch) -> Scores: ...


class Detector(Protocol):
    """detect: one result per event over its untrusted text fields (``field`` is None
    when the event carries no text)."""

    def screen_events(self, events: Sequence[TransactionEvent]) -> list[DetectorResult]: ...


class RuleGuard(Protocol):
    """guard: the hard rules, applied after the policy; they always win. One rule-set
    version decides a whole batch. Each result's reasons start with its proposal's
    reasons, unchanged; the guard's own follow (``engine.pipeline.guard_batch`` takes them
    as that suffix)."""

    @property
    def version(self) -> str: ...

    def apply_batch(self, events: Sequence[TransactionEvent], contexts: Sequence[Mapping[str, float]],
                    model_views: Sequence[Mapping[str, Any]],
                    proposed: Sequence[PolicyDecision]) -> list[GuardedDecision]: ...
