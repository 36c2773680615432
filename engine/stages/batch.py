"""Batch stage: a micro-batch closes at ``max_events`` records or ``max_wait_ms``, whichever first.

Why: one forward pass and one Kafka transaction per batch amortise their fixed cost
over many events, while the wait bound keeps a quiet stream's latency low. The clock
starts when the *first* record of a batch arrives, so an idle stream never makes an
event wait longer than ``max_wait_ms`` for company. The defaults (``settings.batch``)
are chosen by ``ops/bench/engine.py``. The worker may close a batch earlier still, as
soon as the consumer has nothing more fetched (``settings.batch.close_when_idle``).

The batcher is pure bookkeeping with an injectable clock, so its rules are tested
without Kafka.

>>> t = [0.0]
>>> b = MicroBatcher(max_events=3, max_wait_ms=5.0, clock=lambda: t[0])
>>> b.add(["a", "b"]); b.ready()
False
>>> b.room()
1
>>> t[0] = 0.006; b.ready()        # 6 ms after the first record: the wait bound closes it
True
>>> b.take()
['a', 'b']
>>> b.add(["c", "d", "e"]); b.ready()   # full: closes at once
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class MicroBatcher(Generic[T]):
    """Collects records into one batch; the worker asks ``ready()`` and ``take()``s it."""

    __slots__ = ("max_events", "max_wait_s", "_clock", "_items", "_opened_at")

    def __init__(self, max_events: int, max_wait_ms: float,
                 clock: Callable[[], float] = time.monotonic):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        if max_wait_ms < 0:
            raise ValueError("max_wait_ms must be >= 0")
        self.max_events = max_events
        self.max_wait_s = max_wait_ms / 1000.0
        self._clock = clock
        self._items: list[T] = []
        self._opened_at: float | None = None

    def add(self, items: Iterable[T]) -> None:
        for item in items:
            if self._opened_at is None:
                self._opened_at = self._clock()
            self._items.append(item)

    def __len__(self) -> int:
        return len(self._items)

    def room(self) -> int:
        """How many more records fit before the batch is full (never negative)."""
        return max(0, self.max_events - len(self._items))

    def remaining_s(self) -> float:
        """Seconds until the wait bound closes the open batch; the poll timeout to use.

        With no open batch there is nothing to wait for, so this is ``inf``.
        """
        if self._opened_at is None:
            return float("inf")
        return max(0.0, self._opened_at + self.max_wait_s - self._clock())

    def ready(self) -> bool:
        if not self._items:
            return False
        return len(self._items) >= self.max_events or self.remaining_s() <= 0.0

    def take(self) -> list[T]:
        """Close the batch and return it (possibly empty); the next record opens a new one."""
        items, self._items, self._opened_at = self._items, [], None
        return items

    def drop(self, keep: Callable[[T], bool]) -> int:
        """Remove the records ``keep`` rejects (revoked partitions); return how many went."""
        before = len(self._items)
        self._items = [item for item in self._items if keep(item)]
        if not self._items:
            self._opened_at = None
        return before - len(self._items)
