"""The feature-store contract both backends satisfy, and the records it takes.

>>> LabelArrival("e1", "t1", 0, 86_400_000, True).arrival_bucket
24
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol, runtime_checkable

from engine.features.snapshot import ContextSnapshot
from engine.features.spec import BUCKET_MS
from engine.records import Outcome, TransactionEvent


class ContextUnavailable(RuntimeError):
    """The feature state could not be read or written (Redis down, timeout, bad reply).

    The worker catches this and decides in degraded mode with ``ContextSnapshot.empty``.
    Nothing was recorded for the batch that raised it, so a retry is safe.
    """


class LabelArrival(NamedTuple):
    """A delayed outcome as the feature stores see it: which terminal it judges and when
    it became known. A second arrival for the same ``event_id`` replaces the first.

    A NamedTuple rather than a frozen dataclass: a backtest builds one per transaction,
    and a frozen dataclass's constructor costs more (docs/performance.md, "Small figures
    behind code comments")."""

    event_id: str
    terminal_id: str
    event_time_ms: int
    arrival_time_ms: int
    is_bad: bool

    @property
    def arrival_bucket(self) -> int:
        return self.arrival_time_ms // BUCKET_MS

    @classmethod
    def from_outcome(cls, outcome: Outcome, logged: ContextSnapshot) -> LabelArrival:
        """Join an outcome to its decision-log entry: terminal and event time come from what
        was logged, the arrival time is when the outcome became known."""
        if outcome.event_id != logged.event_id:
            raise ValueError(f"outcome {outcome.event_id!r} joined to snapshot {logged.event_id!r}")
        return cls(outcome.event_id, logged.terminal_id, logged.event_time_ms,
                   outcome.outcome_time_ms, outcome.kind.is_bad)


@runtime_checkable
class FeatureStore(Protocol):
    def enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        """For each event, in order: its context as of just before its event time, then
        record it (unless the store is read-only). Idempotent per event_id (a retry gets
        its first snapshot back and is never counted twice); a stored snapshot of a
        different event under the same id is never returned."""

    def record_outcomes(self, labels: Sequence[LabelArrival]) -> None:
        """Delayed labels; idempotent per event_id; a correction replaces the earlier label."""

    def decision_log(self, event_ids: Sequence[str]) -> list[ContextSnapshot | None]:
        """The snapshot each event got when first enriched (None if unknown or expired)."""
