"""``MemoryFeatureStore``: the offline backend (training, backtests, tests).

Runs ``compute.enrich_batch`` over dicts kept for the whole stream. Snapshots are kept
for ``snapshot_retention_ms`` of event time (idempotent retries and the decision log);
a backtest that never retries can set it small to keep memory flat over a million
events.

Customers and terminals are kept for the whole stream unless ``forget_idle_after_ms``
is set (``tollgate score`` and ``load_model`` set it to ``IDLE_STATE_TTL_MS``, 31 days):
then a key whose latest event (or, for a terminal, latest label) is older than that, in
event time, is forgotten — the state its Redis keys would have expired with. Memory is
then bounded by the keys active within the last 31 days, not by the length of the
stream. It changes no feature of any later event that is less than a day out of order,
except for a customer who comes back after 31 idle days: like the stream's Redis state,
the store no longer knows them (new customer, empty history, new devices).

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
from collections.abc import Sequence

from engine.features.compute import (
    CustomerState,
    TerminalState,
    add_label,
    enrich_batch,
    label_changed,
    remove_label,
)
from engine.features.history import HistoryOrder, resolve_history_order
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import BUCKET_MS, DAY_MS, STATE_HORIZON_MS
from engine.features.store import LabelArrival
from engine.records import TransactionEvent
from engine.settings import get_settings


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
            if snap is None:
                continue
            if snap.event_time_ms == old_t:
                del by_id[old_id]
            elif snap.event_time_ms < floor:  # replaced by another event under this id (compute.same_event)
                del by_id[old_id]
            else:  # ... which expires later, at its own time
                order.append((snap.event_time_ms, old_id))

    def get(self, event_id: str) -> ContextSnapshot | None:
        return self.by_id.get(event_id)

    def __len__(self) -> int:
        return len(self.by_id)


#: How often (in event time) the store looks for idle keys: each sweep visits every key
#: once, so its cost per event is (keys) / (events a day) — small, amortised.
IDLE_SWEEP_EVERY_MS = DAY_MS


class MemoryFeatureStore:
    """In-process feature state; same contract and numbers as ``RedisFeatureStore``."""

    def __init__(self, snapshot_retention_ms: int | None = None, forget_idle_after_ms: int | None = None,
                 history_order: HistoryOrder | None = None):
        """``history_order``: None = ``settings.features.history_order``."""
        #: Which past events fill each snapshot's history window (``engine.features.history``).
        self.history_order = resolve_history_order(history_order)
        if snapshot_retention_ms is None:
            snapshot_retention_ms = get_settings().redis.decision_log_redis_ms
        if forget_idle_after_ms is not None and forget_idle_after_ms < STATE_HORIZON_MS:
            raise ValueError(f"forget_idle_after_ms={forget_idle_after_ms} is shorter than the feature horizon "
                             f"({STATE_HORIZON_MS} ms): state still inside some window would be lost")
        self.customers: dict[str, CustomerState] = {}
        self.terminals: dict[str, TerminalState] = {}
        self.snapshots = _RetainedSnapshots(snapshot_retention_ms)
        self.labels: dict[str, LabelArrival] = {}
        self._label_order: deque[tuple[int, str]] = deque()
        self.forget_idle_after_ms = forget_idle_after_ms
        #: The newest event time seen: the store's clock for forgetting idle keys.
        self.newest_event_ms: int | None = None
        self._next_sweep_ms: int | None = None
        #: Keys forgotten so far (customers, terminals) — for benchmarks and tests.
        self.forgotten = [0, 0]

    def enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        before = len(self.snapshots)
        snaps = enrich_batch(events, self.customers, self.terminals, self.snapshots.by_id, self.history_order)
        self.snapshots.added(snaps, before)
        if self.forget_idle_after_ms is not None and snaps:
            # After the batch: every event of it has been recorded, so none of them can
            # see a key removed here that it would otherwise have found.
            self._advance_clock(max(s.event_time_ms for s in snaps))
        return snaps

    def _advance_clock(self, newest_in_batch: int) -> None:
        if self.newest_event_ms is None or newest_in_batch > self.newest_event_ms:
            self.newest_event_ms = newest_in_batch
        if self._next_sweep_ms is None:
            self._next_sweep_ms = self.newest_event_ms + IDLE_SWEEP_EVERY_MS
        elif self.newest_event_ms >= self._next_sweep_ms:
            self.forget_idle(self.newest_event_ms)
            self._next_sweep_ms = self.newest_event_ms + IDLE_SWEEP_EVERY_MS

    def forget_idle(self, now_ms: int) -> tuple[int, int]:
        """Forget customers whose latest event, and terminals whose latest event and latest
        label arrival, are more than ``forget_idle_after_ms`` before ``now_ms``. Returns
        how many of each were forgotten.

        Why this changes no window: every window reaches back at most the horizon (30
        days) from an event's hour, and the idle limit is at least that; a terminal's
        buckets older than every window of a later event only ever cancel out of its
        prefix-sum differences. A customer's history window, devices and previous
        country do reach further back — hence "like the stream's Redis state" above."""
        if self.forget_idle_after_ms is None:
            return 0, 0
        floor_ms = now_ms - self.forget_idle_after_ms
        idle_customers = [k for k, c in self.customers.items() if not c.times or c.times[-1] < floor_ms]
        for k in idle_customers:
            del self.customers[k]
        floor_bucket = floor_ms // BUCKET_MS
        idle_terminals = [k for k, t in self.terminals.items()
                          if max(t.activity.newest(-1), t.known.newest(-1), t.bad.newest(-1)) < floor_bucket]
        for k in idle_terminals:
            del self.terminals[k]
        self.forgotten[0] += len(idle_customers)
        self.forgotten[1] += len(idle_terminals)
        return len(idle_customers), len(idle_terminals)

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
