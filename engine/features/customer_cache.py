"""A worker's own copies of the customer states it wrote last, so enrich need not read
a returning customer's whole event list back from Redis every batch.

Why: a customer's events are partitioned to one worker, which wrote them last; reading
them back (up to ``MAX_CUSTOMER_EVENTS`` JSON rows a customer) was the largest share of
enrich's CPU, in Redis and in the worker (docs/performance.md, "The worker's own CPU at
saturation"; what the copies save: ``python ops/bench/customer_cache.py``). Correctness does not rest on partitioning: every write of a customer's
state stores a fresh token beside it (``{p}:cver:{customer}``), the read script sends a
customer's rows only when the token it holds is not the one this store wrote, and a
write that finds another token than the one it read deletes the token (a second writer
came in between: nobody's copy is current). A rebalance, a second worker, a failed
write, an expired or evicted key: each ends in a full read, never in a stale copy
(``tests/integration/test_feature_store_contract.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from engine.features.compute import CustomerState


def copy_state(state: CustomerState) -> CustomerState:
    """An independent copy: ``compute.enrich_batch`` appends to the state it is given,
    and a failed batch must leave the cached copy as it was."""
    c = CustomerState()
    c.times, c.amounts, c.terminals = state.times[:], state.amounts[:], state.terminals[:]
    c.countries, c.event_ids, c.devices = state.countries[:], state.event_ids[:], dict(state.devices)
    return c


def has_ties(state: CustomerState) -> bool:
    """Two events at the same millisecond: Redis orders them by their stored row, which
    ``CustomerState.add`` does not; such a state is read back rather than kept."""
    # in C: a loop in Python over every held event showed in enrich's profile on a month
    # of history (python ops/bench/enrich_ab.py measures enrich)
    return len(set(state.times)) != len(state.times)


class CustomerCache:
    """Least recently used customer states with the token their write stored, bounded
    by the events they hold (0: nothing is kept). Thread-safe: a store in write mode can
    serve concurrent callers (the worker's is used by its prepare thread alone).

    >>> s = CustomerState(); s.add("e1", 1, 9.5, "t1", "BE")
    >>> cache = CustomerCache(max_events=1); cache.put("c1", "tok", s)
    >>> token, count, copy = cache.get("c1"); token, count, copy.amounts, cache.get("c2")
    ('tok', 1, [9.5], None)
    >>> cache.put("c2", "tok", s); cache.get("c1")   # over the bound: c1 evicted
    """

    def __init__(self, max_events: int):
        self.max_events = max_events
        self._entries: OrderedDict[str, tuple[str, CustomerState]] = OrderedDict()
        self._events = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, customer_id: str) -> tuple[str, int, CustomerState] | None:
        """The token, event count and a copy of the state held for ``customer_id``; the
        copy is the caller's to change (``compute.enrich_batch`` appends to it)."""
        if not self._entries:
            return None
        with self._lock:
            entry = self._entries.get(customer_id)
            if entry is None:
                return None
            self._entries.move_to_end(customer_id)
            token, state = entry
        return token, len(state.times), copy_state(state)

    def put(self, customer_id: str, token: str, state: CustomerState) -> None:
        """Hold ``state`` as written under ``token``; the caller hands it over (no copy)."""
        keep = self.max_events > 0 and not has_ties(state) and len(state.times) <= self.max_events
        with self._lock:
            self._drop(customer_id)
            if not keep:
                return
            self._entries[customer_id] = (token, state)
            self._events += len(state.times)
            while self._events > self.max_events:
                _, (_, old) = self._entries.popitem(last=False)
                self._events -= len(old.times)

    def drop(self, customer_id: str) -> None:
        if self._entries:
            with self._lock:
                self._drop(customer_id)

    def _drop(self, customer_id: str) -> None:
        entry = self._entries.pop(customer_id, None)
        if entry is not None:
            self._events -= len(entry[1].times)
