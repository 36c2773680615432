"""``MemoryFeatureStore``: the offline backend (training, backtests, tests).

Runs ``compute.enrich_batch`` over dicts kept for the whole stream. Snapshots are kept
for ``snapshot_retention_ms`` of event time (idempotent retries and the decision log);
a backtest that never retries can set it small to keep memory flat over a million
events.

>>> from engine.records import TransactionEvent
>>> store = MemoryFeatureStore()
>>> e = TransactionEvent("e1", 1_700_000_000_000, "c1", "a1", "t1", "5411", 5.0, "EUR",
...                      "card_present", "BE")
>>> first = store.enrich([e])[0]
>>> store.enrich([e])[0] is first, store.decision_log(["e1", "nope"])[1]
(True, None)
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from engine.features.compute import (
    CustomerState, TerminalState, add_label, enrich_batch, label_changed, remove_label,
)
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import DAY_MS, STATE_HORIZON_MS
from engine.features.store import LabelArrival
from engine.records import TransactionEvent


class _RetainedSnapshots:
    """event_id -> snapshot, forgetting entries older than the retention (in event time).
    Bookkeeping runs once per batch, not per event (it is on the backtest's hot path)."""

    def __init__(self, retention_ms: int):
        self.retention_ms = retention_ms
        self.by_id: dict[str, ContextSnapshot] = {}
        self._order: deque[tuple[int, str]] = deque()
        self._newest = 0

    def added(self, snaps: Sequence[ContextSnapshot], before: int) -> None:
        if len(self.by_id) == before:
            return
        new = [(s.event_time_ms, s.event_id) for s in snaps]
        self._order.extend(new)
        self._newest = max(self._newest, max(t for t, _ in new))
        floor = self._newest - self.retention_ms
        order, by_id = self._order, self.by_id
        while order and order[0][0] < floor:
            old_t, old_id = order.popleft()
            snap = by_id.get(old_id)
            if snap is not None and snap.event_time_ms == old_t:
                del by_id[old_id]

    def get(self, event_id: str) -> ContextSnapshot | None:
        return self.by_id.get(event_id)

    def __len__(self) -> int:
        return len(self.by_id)


class MemoryFeatureStore:
    """In-process feature state; same contract and numbers as ``RedisFeatureStore``."""

    def __init__(self, snapshot_retention_ms: int | None = None):
        if snapshot_retention_ms is None:
            from engine.settings import get_settings

            snapshot_retention_ms = get_settings().redis.decision_log_retention_days * DAY_MS
        self.customers: dict[str, CustomerState] = {}
        self.terminals: dict[str, TerminalState] = {}
        self.snapshots = _RetainedSnapshots(snapshot_retention_ms)
        self.labels: dict[str, LabelArrival] = {}
        self._label_order: deque[tuple[int, str]] = deque()

    def enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        before = len(self.snapshots)
        snaps = enrich_batch(events, self.customers, self.terminals, self.snapshots.by_id)
        self.snapshots.added(snaps, before)
        return snaps

    def record_outcomes(self, labels: Sequence[LabelArrival]) -> None:
        for label in labels:
            old = self.labels.get(label.event_id)
            if not label_changed(old, label):
                continue
            if old is not None and old.terminal_id in self.terminals:
                remove_label(self.terminals[old.terminal_id], old)
            term = self.terminals.get(label.terminal_id)
            if term is None:
                term = self.terminals[label.terminal_id] = TerminalState()
            add_label(term, label)
            self.labels[label.event_id] = label
            self._forget_old_labels(label.event_id, label.arrival_time_ms)

    def _forget_old_labels(self, event_id: str, arrival_ms: int) -> None:
        # A correction to a label older than every window changes no feature, so its
        # original need not be remembered: keeps the index bounded like Redis's TTLs.
        self._label_order.append((arrival_ms, event_id))
        floor = arrival_ms - STATE_HORIZON_MS - DAY_MS
        order = self._label_order
        while order and order[0][0] < floor:
            _, old_id = order.popleft()
            label = self.labels.get(old_id)
            if label is not None and label.arrival_time_ms < floor:
                del self.labels[old_id]

    def decision_log(self, event_ids: Sequence[str]) -> list[ContextSnapshot | None]:
        return [self.snapshots.get(eid) for eid in event_ids]
