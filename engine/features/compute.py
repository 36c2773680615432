"""The one feature implementation: per-key state, what an event sees, how it is recorded.

Both backends run exactly this code. ``MemoryFeatureStore`` keeps the states in dicts (for
the whole stream, or until a key is idle for 31 days when asked to forget, as Redis keys
expire); ``RedisFeatureStore`` loads the states a batch touches, runs the same
``enrich_batch`` on them, and writes back what changed. So a replay through memory and
live serving through Redis compute the same numbers by construction.

State is bounded: a customer keeps its events of the last 30 days (but at least the
history window, at most ``MAX_CUSTOMER_EVENTS``); a terminal keeps hour buckets of the
last 31 days. Windows are in event time; ties (same millisecond) count as "before" when
they were recorded first.

>>> from engine.records import TransactionEvent
>>> ev = lambda i, t, amt: TransactionEvent(f"e{i}", t, "c1", "a1", "t1", "5411", amt,
...     "EUR", "card_present", "BE", device_id="d1")
>>> customers, terminals, seen = {}, {}, {}
>>> t0 = 1_700_000_000_000
>>> snaps = enrich_batch([ev(1, t0, 10.0), ev(2, t0 + 60_000, 30.0)], customers, terminals, seen)
>>> snaps[1].velocity_1h_count, snaps[1].velocity_1h_amount, snaps[1].amount_to_mean_ratio
(1.0, 10.0, 3.0)
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_left, bisect_right
from collections.abc import MutableMapping, Sequence
from itertools import accumulate

from engine.features.history import HistoryOrder, relevant_history
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import (
    BUCKET_MS,
    DAY_MS,
    HISTORY_LEN,
    MAX_CUSTOMER_EVENTS,
    MAX_DEVICES_PER_CUSTOMER,
    NO_PREVIOUS_SECONDS,
    STATE_HORIZON_MS,
    TERMINAL_WINDOWS,
    VELOCITY_WINDOWS,
)
from engine.features.store import LabelArrival
from engine.records import (
    MAX_AMOUNT,
    MAX_EVENT_TIME_MS,
    MIN_EVENT_TIME_MS,
    EventValidationError,
    TransactionEvent,
)

_VEL_MS = tuple(ms for _, ms in VELOCITY_WINDOWS)
_TERM_BUCKETS = tuple(ms // BUCKET_MS for _, ms in TERMINAL_WINDOWS)
#: Terminal buckets older than this (relative to the newest) are dropped.
TERMINAL_KEEP_BUCKETS = STATE_HORIZON_MS // BUCKET_MS + 24


class CustomerState:
    """A customer's recent events, sorted by event time, plus devices it has used."""

    __slots__ = ("times", "amounts", "terminals", "countries", "event_ids", "devices")

    def __init__(self) -> None:
        self.times: list[int] = []
        self.amounts: list[float] = []
        self.terminals: list[str] = []
        self.countries: list[str] = []
        self.event_ids: list[str] = []
        #: device id -> first time seen (ms)
        self.devices: dict[str, int] = {}

    def add(self, event_id: str, t: int, amount: float, terminal: str, country: str) -> None:
        i = bisect_right(self.times, t)
        if i == len(self.times):  # the common, in-order case
            self.times.append(t), self.amounts.append(amount), self.terminals.append(terminal)
            self.countries.append(country), self.event_ids.append(event_id)
        else:
            self.times.insert(i, t), self.amounts.insert(i, amount), self.terminals.insert(i, terminal)
            self.countries.insert(i, country), self.event_ids.insert(i, event_id)

    def trim(self) -> int:
        """Drop events older than the horizon (keeping at least the history window); return
        how many remain."""
        n = len(self.times)
        cut = min(bisect_left(self.times, self.times[-1] - STATE_HORIZON_MS), n - HISTORY_LEN)
        cut = max(cut, n - MAX_CUSTOMER_EVENTS)
        if cut > 0:
            for seq in (self.times, self.amounts, self.terminals, self.countries, self.event_ids):
                del seq[:cut]
        return len(self.times)


class BucketCounter:
    """Integer counts per time bucket, sorted, with prefix sums: a window total is two
    bisects and a subtraction. Counts are integers, so prefix sums are exact and any
    backend that loads the same buckets gets the same totals.

    >>> c = BucketCounter.from_items([(5, 2), (7, 1)]); c.add(9); c.add(6, 3)
    >>> c.total(5, 9), c.total(6, 7), c.get(6), 8 in c
    (7, 4, 3, False)
    """

    __slots__ = ("buckets", "counts", "cum")

    def __init__(self) -> None:
        self.buckets: list[int] = []
        self.counts: list[int] = []
        self.cum: list[int] = [0]  # cum[k] - cum[j] = sum(counts[j:k])

    @classmethod
    def from_items(cls, items) -> BucketCounter:
        c = cls()
        pairs = sorted(items)
        if pairs:  # most terminals of a batch hold none or a few: no work for them
            if any(n <= 0 for _, n in pairs):
                pairs = [p for p in pairs if p[1] > 0]
            c.buckets = [b for b, _ in pairs]
            c.counts = [n for _, n in pairs]
            c.cum = [0, *accumulate(c.counts)]
        return c

    @classmethod
    def from_columns(cls, buckets: list[int], counts: list[int]) -> BucketCounter:
        """From distinct ``buckets`` in any order (a hash's) and their ``counts``; the
        lists become the counter's. Cheaper than ``from_items`` on a whole hash: the
        buckets are sorted as plain integers and the counts follow them by a lookup, with
        no pair built.

        >>> c = BucketCounter.from_columns([9, 5, 7], [1, 2, 0]); c.buckets, c.counts, c.cum
        ([5, 9], [2, 1], [0, 2, 3])
        """
        c = cls()
        if buckets:
            ordered = sorted(buckets)
            if ordered != buckets:
                counts = list(map(dict(zip(buckets, counts)).__getitem__, ordered))
                buckets = ordered
            if min(counts) <= 0:
                kept = [(b, n) for b, n in zip(buckets, counts) if n > 0]
                buckets, counts = [b for b, _ in kept], [n for _, n in kept]
            c.buckets, c.counts = buckets, counts
            c.cum = [0, *accumulate(counts)]
        return c

    def add(self, bucket: int, delta: int = 1) -> None:
        buckets = self.buckets
        if buckets and buckets[-1] == bucket:  # the common case: this hour again
            self.counts[-1] += delta
            self.cum[-1] += delta
            if self.counts[-1] <= 0:
                self._rebuild_from(len(buckets) - 1)
        elif (not buckets or bucket > buckets[-1]) and delta > 0:
            buckets.append(bucket)
            self.counts.append(delta)
            self.cum.append(self.cum[-1] + delta)
        else:  # out of order, or a correction: rare, O(n)
            i = bisect_left(buckets, bucket)
            if i < len(buckets) and buckets[i] == bucket:
                self.counts[i] += delta
            elif delta > 0:
                buckets.insert(i, bucket)
                self.counts.insert(i, delta)
                self.cum.insert(i + 1, 0)
            self._rebuild_from(i)

    def _rebuild_from(self, i: int) -> None:
        keep = [k for k in range(i, len(self.buckets)) if self.counts[k] > 0]
        self.buckets[i:] = [self.buckets[k] for k in keep]
        self.counts[i:] = [self.counts[k] for k in keep]
        del self.cum[i + 1:]
        for n in self.counts[i:]:
            self.cum.append(self.cum[-1] + n)

    def total(self, first: int, last: int) -> int:
        """Sum of counts in buckets ``first..last`` inclusive."""
        b = self.buckets
        return self.cum[bisect_right(b, last)] - self.cum[bisect_left(b, first)]

    def get(self, bucket: int, default: int = 0) -> int:
        i = bisect_left(self.buckets, bucket)
        return self.counts[i] if i < len(self.buckets) and self.buckets[i] == bucket else default

    def __contains__(self, bucket: int) -> bool:
        return self.get(bucket) > 0

    def __len__(self) -> int:
        return len(self.buckets)

    def __iter__(self):
        return iter(self.buckets)

    def items(self):
        return zip(self.buckets, self.counts)

    def newest(self, default: int = 0) -> int:
        return self.buckets[-1] if self.buckets else default

    def prune(self, floor: int) -> None:
        """Forget buckets older than ``floor`` (prefix sums stay valid: only differences count)."""
        cut = bisect_left(self.buckets, floor)
        if cut:
            del self.buckets[:cut], self.counts[:cut], self.cum[:cut]


class TerminalState:
    """Hour-bucketed event counts, and delayed labels bucketed by ARRIVAL hour."""

    __slots__ = ("activity", "known", "bad")

    def __init__(self) -> None:
        self.activity = BucketCounter()
        self.known = BucketCounter()
        self.bad = BucketCounter()

    def prune(self, newest_bucket: int) -> None:
        floor = newest_bucket - TERMINAL_KEEP_BUCKETS
        for table in (self.activity, self.known, self.bad):
            table.prune(floor)


def context_for(event: TransactionEvent, cust: CustomerState | None,
                term: TerminalState | None, history_order: HistoryOrder = "recent") -> ContextSnapshot:
    """The event's context from the state as it is now (before recording the event);
    ``history_order`` picks the history window (``engine.features.history``)."""
    t = event.event_time_ms
    v = [0.0] * 8
    hist_amounts: tuple[float, ...] = ()
    hist_times: tuple[int, ...] = ()
    hist_terms: tuple[str, ...] = ()
    mean30 = 0.0
    since_prev = NO_PREVIOUS_SECONDS
    is_new = 1.0
    country_changed = 0.0
    device_new, device_age = 0.0, 0.0
    if cust is not None and cust.times:
        times, amounts = cust.times, cust.amounts
        i = bisect_right(times, t)
        if i:
            is_new = 0.0
            # Windows are nested (1h within 1d within ...): sum each slice once.
            hi, total = i, 0.0
            for k, ms in enumerate(_VEL_MS):
                j = bisect_left(times, t - ms, 0, hi)
                total += sum(amounts[j:hi])
                v[2 * k] = float(i - j)
                v[2 * k + 1] = total
                hi = j
            if v[6]:
                mean30 = v[7] / v[6]
            since_prev = min((t - times[i - 1]) / 1000.0, NO_PREVIOUS_SECONDS)
            country_changed = 1.0 if cust.countries[i - 1] != event.country else 0.0
            if history_order == "recent":
                # most recent first, one reversed slice each: [i-1, i-2, ..., lo]
                stop = i - HISTORY_LEN - 1 if i > HISTORY_LEN else None
                hist_amounts = tuple(amounts[i - 1:stop:-1])
                hist_times = tuple(times[i - 1:stop:-1])
                hist_terms = tuple(cust.terminals[i - 1:stop:-1])
            else:
                picked = relevant_history(times, amounts, cust.terminals, i, t, event.terminal_id, mean30,
                                          HISTORY_LEN)
                hist_amounts = tuple(amounts[j] for j in picked)
                hist_times = tuple(times[j] for j in picked)
                hist_terms = tuple(cust.terminals[j] for j in picked)
    if event.device_id:
        first = cust.devices.get(event.device_id) if cust is not None else None
        if first is None or first > t:
            device_new = 1.0
        else:
            device_age = (t - first) / DAY_MS
    ratio = event.amount / mean30 if mean30 > 0 else 1.0
    term_counts = [0.0, 0.0, 0.0]
    risk = [0.0] * 6
    if term is not None:
        # BucketCounter.total, inlined: this loop runs for every event of a backtest.
        # Activity counts the current hour (events already recorded in it); labels count
        # only complete hours before the event's hour, so never a label from the future.
        hb = t // BUCKET_MS
        ab, ac = term.activity.buckets, term.activity.cum
        kb, kc = term.known.buckets, term.known.cum
        bb, bc = term.bad.buckets, term.bad.cum
        a_hi = ac[bisect_right(ab, hb)]
        if kb:
            k_hi = kc[bisect_right(kb, hb - 1)]
            b_hi = bc[bisect_right(bb, hb - 1)]
        for k, w in enumerate(_TERM_BUCKETS):
            term_counts[k] = float(a_hi - ac[bisect_left(ab, hb - w + 1)])
            if kb:
                n_known = k_hi - kc[bisect_left(kb, hb - w)]
                if n_known > 0:
                    n_bad = b_hi - bc[bisect_left(bb, hb - w)]
                    risk[2 * k] = min(1.0, max(0.0, n_bad / n_known))
                    risk[2 * k + 1] = float(n_known)
    values = (*v, mean30, ratio, since_prev, is_new, country_changed, device_new, device_age,
              0.0 if event.device_id else 1.0, *term_counts, *risk)
    return ContextSnapshot(event.event_id, t, event.customer_id, event.terminal_id, values,
                           hist_amounts, hist_times, hist_terms, event=event)


def record_event(event: TransactionEvent, cust: CustomerState, term: TerminalState) -> None:
    """Add the event to its customer's and terminal's state."""
    t = event.event_time_ms
    cust.add(event.event_id, t, float(event.amount), event.terminal_id, event.country)
    if len(cust.times) > HISTORY_LEN and cust.times[0] < cust.times[-1] - STATE_HORIZON_MS:
        cust.trim()
    elif len(cust.times) > MAX_CUSTOMER_EVENTS:
        cust.trim()
    if event.device_id:
        first = cust.devices.get(event.device_id)
        if first is None or t < first:
            cust.devices[event.device_id] = t
            if len(cust.devices) > MAX_DEVICES_PER_CUSTOMER:
                del cust.devices[min(cust.devices, key=cust.devices.__getitem__)]
    b = t // BUCKET_MS
    term.activity.add(b)
    # What falls out of the kept span goes at once, however little state there is: the
    # counts then never depend on how much of a terminal a backend loaded (Redis loads
    # day sums, engine.features.terminal_days) and equal what Redis keeps.
    floor = b - TERMINAL_KEEP_BUCKETS
    if term.activity.buckets[0] < floor or (term.known.buckets and term.known.buckets[0] < floor):
        term.prune(b)


def enrich_batch(events: Sequence[TransactionEvent],
                 customers: MutableMapping[str, CustomerState],
                 terminals: MutableMapping[str, TerminalState],
                 seen: MutableMapping[str, ContextSnapshot],
                 history_order: HistoryOrder = "recent") -> list[ContextSnapshot]:
    """The contract of ``FeatureStore.enrich`` over plain mappings; ``history_order`` picks
    each snapshot's history window (``engine.features.history``).

    ``seen`` maps event_id -> the snapshot it got first; an event found there is neither
    recomputed nor recorded again, and a new snapshot is added to it. A snapshot stored
    for a *different* event under the same id (another customer, amount, time...: a
    poisoning attempt or an upstream bug) is never used: the event is computed and
    recorded as new, and its snapshot replaces that one in ``seen``.
    """
    for event in events:  # all or nothing: a bad event must not leave half a batch recorded
        if not same_event(seen.get(event.event_id), event):
            _check(event)
    out: list[ContextSnapshot] = []
    append, seen_get, cust_get, term_get = out.append, seen.get, customers.get, terminals.get
    for event in events:
        snap = seen_get(event.event_id)
        if snap is not None and not same_event(snap, event):
            snap = None  # another event's context under this id: never reuse it
        if snap is None:
            cust = cust_get(event.customer_id)
            if cust is None:
                cust = customers[event.customer_id] = CustomerState()
            term = term_get(event.terminal_id)
            if term is None:
                term = terminals[event.terminal_id] = TerminalState()
            snap = context_for(event, cust, term, history_order)
            record_event(event, cust, term)
            seen[event.event_id] = snap
        append(snap)
    return out


def same_event(snap: ContextSnapshot | None, event: TransactionEvent) -> bool:
    """True when ``snap`` is the stored context of ``event``: every field equal but the
    Kafka position and the user text. No context feature reads user text
    (docs/field-isolation.md), so the context of an event is the same whatever its memo
    or descriptor; an event that differs in a trusted field (another customer, amount or
    time under the same id) gets its own. A snapshot without its event (an old log)
    cannot be checked and counts as the same."""
    if snap is None or snap.event is None or snap.event is event or snap.event == event:
        return snap is not None
    return _without_text(snap.event) == _without_text(event)


def _without_text(event: TransactionEvent) -> TransactionEvent:
    return dataclasses.replace(event, memo=None, merchant_descriptor=None)


def _check(event: TransactionEvent) -> None:
    """The few fields state depends on, checked cheaply (full checks: ``event.validate()``
    in the decode stage). A bad event must fail before it touches any state."""
    t, amount = event.event_time_ms, event.amount
    if type(t) is not int or not MIN_EVENT_TIME_MS <= t <= MAX_EVENT_TIME_MS:
        raise EventValidationError("event_time_ms", f"{t!r} is not epoch ms in 2000..2100")
    if not (isinstance(amount, (int, float)) and 0.0 <= amount <= MAX_AMOUNT):  # False for NaN
        raise EventValidationError("amount", f"{amount!r} is not a finite amount in [0, {MAX_AMOUNT:g}]")
    if not (event.customer_id and event.terminal_id and event.event_id):
        raise EventValidationError("customer_id/terminal_id/event_id", "must be non-empty")


def label_changed(old: LabelArrival | None, new: LabelArrival) -> bool:
    """False when ``new`` is an exact retry of ``old`` (same terminal, arrival hour, verdict)."""
    return old is None or (old.terminal_id, old.arrival_bucket, old.is_bad) != (
        new.terminal_id, new.arrival_bucket, new.is_bad)


def add_label(term: TerminalState, new: LabelArrival) -> None:
    _count_label(term, new.arrival_bucket, new.is_bad, +1)


def remove_label(term: TerminalState, old: LabelArrival) -> None:
    _count_label(term, old.arrival_bucket, old.is_bad, -1)


def _count_label(term: TerminalState, bucket: int, is_bad: bool, delta: int) -> None:
    term.known.add(bucket, delta)
    if is_bad:
        term.bad.add(bucket, delta)
