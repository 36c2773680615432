"""Hold a batch while Redis is down, instead of flooding the review queue at once.

Without context the policy decides in degraded mode (review, ``context_unavailable``).
That is right for an event that cannot wait any longer, and wrong for a backlog that a
few seconds of patience would decide properly: a 5 s Redis outage during catch-up once
sent 6,590 events to review. So the worker's feature store is wrapped in
``HoldingStore``: when Redis fails and some event of the batch has waited less than
``settings.worker.redis_hold_s`` since this worker first failed to fetch its context,
it raises ``ContextHeld`` — a transient error, so the worker rewinds the batch and
retries it with back-off (``engine.worker.loop``, at most ``HOLD_RETRY_MAX_S`` apart).
Once the budget of the batch's *oldest* event has run out, ``ContextUnavailable`` goes
through and the batch is decided in degraded mode. Under a backlog the events of a
batch start waiting together, so each was held its full budget; on a live stream a
younger event in the same batch goes with it, having waited less. (Holding until
*every* event's budget had run out was tried first: while records keep arriving, every
retry brings fresh events into the batch and a long outage then decided one batch
every few seconds.)

The clock starts at the first failure seen by *this* worker (a record's Kafka timestamp
says nothing about how long a catch-up may take), so a restarted worker starts afresh.

>>> now = [0.0]; hold = RedisHold(5.0, clock=lambda: now[0])
>>> hold.should_hold(["a"]), hold.waiting
(True, 1)
>>> now[0] = 5.0; hold.should_hold(["a"]), hold.should_hold(["a", "b"]), hold.should_hold(["c"])
(False, False, True)
>>> hold.recovered(); hold.waiting
0
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from engine.features.snapshot import ContextSnapshot
from engine.features.store import ContextUnavailable, FeatureStore, LabelArrival
from engine.records import TransactionEvent

#: Longest back-off between two tries of a held batch: Redis back is noticed soon.
HOLD_RETRY_MAX_S = 0.5
#: Forget the oldest waiting ids past this many (an outage longer than the budget under
#: a huge backlog must not grow memory without bound; forgotten ids restart their wait).
MAX_WAITING = 1_000_000


class ContextHeld(ConnectionError):
    """Redis is down and the batch is still inside its hold budget: retry it later."""


class RedisHold:
    """When this worker first failed to fetch each event's context."""

    def __init__(self, hold_s: float, clock: Callable[[], float] = time.monotonic, *, active: bool = True):
        self.hold_s = hold_s
        self._clock = clock
        self._first_failed: dict[str, float] = {}
        #: Off during warm-up: synthetic events must not hold (nor fail) a start.
        self.active = active

    @property
    def waiting(self) -> int:
        return len(self._first_failed)

    def should_hold(self, event_ids: Sequence[str]) -> bool:
        """Record a failure for these events; True while the one that has waited longest
        is still inside its budget."""
        if not self.active or self.hold_s <= 0 or not event_ids:
            return False
        now = self._clock()
        first = self._first_failed
        if len(first) > MAX_WAITING:
            first.clear()
        oldest = min(first.setdefault(event_id, now) for event_id in event_ids)
        return now - oldest < self.hold_s

    def recovered(self) -> None:
        """Redis answered: every wait starts afresh at the next outage."""
        if self._first_failed:
            self._first_failed.clear()


class HoldingStore:
    """A ``FeatureStore`` whose ``enrich`` holds (``ContextHeld``) instead of degrading
    while the batch is inside its budget; everything else goes straight through."""

    def __init__(self, inner: FeatureStore, hold: RedisHold):
        self.inner = inner
        self.hold = hold

    def enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        try:
            snapshots = self.inner.enrich(events)
        except ContextUnavailable as exc:
            if self.hold.should_hold([e.event_id for e in events]):
                raise ContextHeld(f"Redis unavailable; holding {len(events)} events: {exc}") from exc
            raise
        self.hold.recovered()
        return snapshots

    def record_outcomes(self, labels: Sequence[LabelArrival]) -> None:
        self.inner.record_outcomes(labels)

    def decision_log(self, event_ids: Sequence[str]) -> list[ContextSnapshot | None]:
        return self.inner.decision_log(event_ids)
