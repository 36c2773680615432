"""The enrich stage: events in, one context snapshot per event out, never an exception
for an unreachable store.

The worker and ``DecisionPipeline`` call ``EnrichStage``; which backend sits behind it
is a deployment choice (``open_feature_store``). When Redis is down the stage answers
``ContextSnapshot.empty`` for every event and says ``degraded=True``; the policy then
applies ``settings.policy.degraded_mode`` (review, or model on an empty context).
Nothing was recorded for a degraded batch, so replaying it later counts it once.

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
from dataclasses import dataclass
from typing import Literal, Sequence

from engine.features.snapshot import ContextSnapshot
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival
from engine.records import TransactionEvent
from engine.settings import Settings, get_settings

log = logging.getLogger(__name__)

__all__ = ["ContextUnavailable", "EnrichResult", "EnrichStage", "LabelArrival", "open_feature_store"]


@dataclass(frozen=True, slots=True)
class EnrichResult:
    snapshots: list[ContextSnapshot]
    #: True when the store was unreachable and ``snapshots`` are ``ContextSnapshot.empty``.
    degraded: bool = False
    error: str | None = None


class EnrichStage:
    """Calls ``store.enrich`` and turns ``ContextUnavailable`` into a degraded result."""

    def __init__(self, store: FeatureStore):
        self.store = store

    def __call__(self, events: Sequence[TransactionEvent]) -> EnrichResult:
        try:
            return EnrichResult(self.store.enrich(events))
        except ContextUnavailable as exc:
            log.warning("enrich degraded for %d events: %s", len(events), exc)
            return EnrichResult([ContextSnapshot.empty(e) for e in events], True, str(exc))


def open_feature_store(settings: Settings | None = None, backend: Literal["redis", "memory"] = "redis",
                       namespace: str | None = None) -> FeatureStore:
    """The serving store (Redis, from settings) or an in-process one for offline work."""
    if backend == "memory":
        from engine.features.memory import MemoryFeatureStore

        return MemoryFeatureStore()
    from engine.features.redis_store import RedisFeatureStore

    return RedisFeatureStore(settings=settings or get_settings(), namespace=namespace)
