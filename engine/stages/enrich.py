"""The enrich stage: events in, one context snapshot per event out, never an exception
for an unreachable store.

``DecisionPipeline.prepare`` calls ``EnrichStage`` over the components' feature store
(Redis for the stream, in memory for files, notebooks and backtests). When the store
is unreachable (``ContextUnavailable``) the stage answers an empty context for every
event and says ``degraded=True``; the policy then applies
``settings.policy.degraded_mode`` (review, or model on an empty context). Nothing was
recorded for a degraded batch, so replaying it later counts it once.

>>> from engine.features.memory import MemoryFeatureStore
>>> from engine.records import TransactionEvent
>>> stage = EnrichStage(MemoryFeatureStore())
>>> e = TransactionEvent("e1", 1_700_000_000_000, "c1", "a1", "t1", "5411", 5.0, "EUR",
...                      "card_present", "BE")
>>> r = stage([e])
>>> r.degraded, r.snapshots[0].customer_is_new
(False, 1.0)
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.features.snapshot import ContextSnapshot
from engine.features.store import ContextUnavailable, FeatureStore
from engine.records import TransactionEvent

log = logging.getLogger(__name__)

__all__ = ["EnrichResult", "EnrichStage"]


@dataclass(frozen=True, slots=True)
class EnrichResult:
    snapshots: list[ContextSnapshot]
    #: True when the store was unreachable and ``snapshots`` are empty contexts.
    degraded: bool = False
    error: str | None = None


class EnrichStage:
    """Calls ``store.enrich`` and turns an unreachable store into a degraded result.

    ``empty_context`` builds the context of one event when the store is away (None: the
    error propagates, there is no degraded mode); ``unavailable`` are the errors that
    mean "away" (``ContextUnavailable``; tests may add their own).
    """

    __slots__ = ("empty_context", "store", "unavailable")

    def __init__(self, store: FeatureStore,
                 empty_context: Callable[[TransactionEvent], ContextSnapshot] | None = ContextSnapshot.empty,
                 unavailable: tuple[type[BaseException], ...] = (ContextUnavailable,)) -> None:
        self.store = store
        self.empty_context = empty_context
        self.unavailable = unavailable

    def __call__(self, events: Sequence[TransactionEvent]) -> EnrichResult:
        try:
            snapshots = list(self.store.enrich(events))
        except self.unavailable as exc:
            if self.empty_context is None:
                raise
            log.debug("enrich degraded for %d events: %s", len(events), exc)  # counted per verdict by the metrics
            return EnrichResult([self.empty_context(e) for e in events], True, str(exc))
        if len(snapshots) != len(events):
            raise RuntimeError(f"feature store returned {len(snapshots)} snapshots for {len(events)} events")
        return EnrichResult(snapshots)
