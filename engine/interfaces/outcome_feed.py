"""Delayed outcomes for the in-memory context of ``tollgate score --outcomes`` and of
``load_model(...).decide(..., outcomes=...)``: the file/notebook counterpart of the
feedback worker, which feeds the stream's Redis state.

In the stream, an outcome reaches the feature store when the feedback worker reads it
from ``tx.outcomes`` — as it happens, i.e. at its ``outcome_time_ms`` — joined to its
event for the terminal; ``terminal_risk_*`` then counts it for events in later hours.
``OutcomeFeed`` reproduces that over a replay: before each batch of events it records,
in outcome-time order, every outcome whose time is at or before the batch's newest
event. That is exact, not approximate: the store counts a label only for events in
hours after the one it arrived in, so an outcome recorded a little early (after some
events of its batch that are older than it) changes none of their features. A
correction is the exception — it *moves* its event's label to its own arrival hour, so
recorded early it would hide the first outcome from events between the two — hence a
batch is cut in two where a correction falls inside it (corrections are rare).

The join: an outcome needs its event's terminal. Outcomes given before their events
(the file case) wait in an index by ``event_id`` and are joined when their event comes
by; outcomes given after their events are joined through the store's decision log. An
outcome whose event never comes by is counted (``unmatched``), never guessed — like the
feedback worker, which has nothing to join it to either. A later outcome for the same
event is a correction and replaces the earlier one, as in the stream.

>>> from engine.features.memory import MemoryFeatureStore
>>> from engine.records import Outcome, OutcomeKind, TransactionEvent
>>> store, feed = MemoryFeatureStore(), OutcomeFeed()
>>> day = 86_400_000
>>> e = TransactionEvent("e1", 1_700_000_000_000, "c1", "a1", "t1", "5411", 5.0, "EUR", "ecommerce", "BE")
>>> feed.add([Outcome("e1", OutcomeKind.CONFIRMED_FRAUD, e.event_time_ms + day, "bank")], store)
>>> [len(store.enrich(part)) for part in feed.parts([e], store)]
[1]
>>> later = TransactionEvent("e2", e.event_time_ms + 2 * day, "c2", "a2", "t1", "5411", 5.0, "EUR", "ecommerce", "BE")
>>> [store.enrich(part)[0].terminal_risk_7d for part in feed.parts([later], store)], feed.applied
([1.0], 1)
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.features.store import LabelArrival
from engine.interfaces.file_rows import file_format, read_rows
from engine.records import Outcome, TransactionEvent


@dataclass(slots=True)
class OutcomeFeed:
    """Outcomes waiting for their event (``waiting``) or for their time (``_due``)."""

    #: event_id -> [(outcome_time_ms, order, is_bad)], for events not seen yet
    waiting: dict[str, list[tuple[int, int, bool]]] = field(default_factory=dict)
    #: heap of (outcome_time_ms, order, LabelArrival, is_correction): joined, not yet recorded
    _due: list[tuple[int, int, LabelArrival, bool]] = field(default_factory=list)
    #: heap of the times of the corrections in ``_due`` (where a batch must be cut)
    _correction_times: list[int] = field(default_factory=list)
    #: events with an outcome joined already: a further one is a correction
    _labelled: set[str] = field(default_factory=set)
    _order: Any = field(default_factory=itertools.count)
    applied: int = 0
    invalid: int = 0

    def add(self, outcomes: Iterable[Outcome | Mapping[str, Any]], store: Any) -> None:
        """Take outcomes (``Outcome`` records or dicts in the ``tx.outcomes`` layout, any
        order). Those of events the store already logged are joined now."""
        fresh: list[tuple[str, int, int, bool]] = []
        for item in outcomes:
            try:
                outcome = item if isinstance(item, Outcome) else Outcome.from_dict(_clean(item))
            except (KeyError, TypeError, ValueError):
                self.invalid += 1
                continue
            fresh.append((outcome.event_id, outcome.outcome_time_ms, next(self._order), outcome.kind.is_bad))
        fresh.sort(key=lambda f: (f[1], f[2]))  # time order: the first of an event's outcomes is not a correction
        logged = store.decision_log([eid for eid, *_ in fresh]) if fresh else []
        for (eid, when, order, is_bad), snap in zip(fresh, logged):
            if snap is not None:
                self._push(LabelArrival(eid, snap.terminal_id, int(snap.event_time_ms), when, is_bad), order)
            else:
                self.waiting.setdefault(eid, []).append((when, order, is_bad))

    def parts(self, events: Sequence[TransactionEvent], store: Any) -> Iterator[Sequence[TransactionEvent]]:
        """Yield ``events`` (in order, usually in one piece) for the caller to enrich,
        having recorded before each piece every outcome known by its newest event; a
        piece ends before the first event at or after a pending correction."""
        if not events:
            return
        if self.waiting:
            for e in events:
                for when, order, is_bad in self.waiting.pop(e.event_id, ()):
                    self._push(LabelArrival(e.event_id, e.terminal_id, e.event_time_ms, when, is_bad), order)
        start = 0
        while start < len(events):
            cut = self._correction_times[0] if self._correction_times else None
            end = start
            if cut is None:
                end = len(events)
            else:
                while end < len(events) and events[end].event_time_ms < cut:
                    end += 1
                if end == start:  # the next event is at or after the correction: record it first
                    end = start + 1
            piece = events[start:end]
            self.reveal(max(e.event_time_ms for e in piece), store)
            yield piece
            start = end

    def reveal(self, now_ms: int, store: Any) -> None:
        """Record every joined outcome dated at or before ``now_ms``, oldest first."""
        due, batch = self._due, []
        while due and due[0][0] <= now_ms:
            _, _, label, is_correction = heapq.heappop(due)
            if is_correction:
                heapq.heappop(self._correction_times)
            batch.append(label)
        if batch:
            store.record_outcomes(batch)
            self.applied += len(batch)

    def _push(self, label: LabelArrival, order: int) -> None:
        is_correction = label.event_id in self._labelled
        self._labelled.add(label.event_id)
        heapq.heappush(self._due, (label.arrival_time_ms, order, label, is_correction))
        if is_correction:
            heapq.heappush(self._correction_times, label.arrival_time_ms)

    @property
    def not_yet_due(self) -> int:
        """Joined outcomes dated after the newest event seen (they changed nothing)."""
        return len(self._due)

    @property
    def unmatched(self) -> int:
        """Outcomes whose event has not come by."""
        return sum(len(v) for v in self.waiting.values())

    def describe(self) -> str:
        text = f"{self.applied} outcomes fed to the context"
        extra = [f"{n} {what}" for n, what in (
            (self.not_yet_due, "dated after the last event"), (self.unmatched, "for events not scored"),
            (self.invalid, "invalid")) if n]
        return text + (f" ({', '.join(extra)})" if extra else "")

    @classmethod
    def from_file(cls, path: Path, store: Any, chunk_rows: int = 65_536) -> OutcomeFeed:
        """Outcomes from a .csv/.parquet/.jsonl file with the ``tx.outcomes`` columns
        (``tollgate simulate --out week.parquet`` writes ``week.outcomes.parquet``). The index holds
        about 220 bytes per outcome (measured): outcomes are a small share of events."""
        feed = cls()
        # The event files' reader: no NA-guessing in CSV; an unreadable row counts as invalid.
        for chunk in read_rows(path, file_format(path), chunk_rows):
            feed.invalid += sum(1 for row in chunk if row.data is None)
            feed.add([row.data for row in chunk if row.data is not None], store)
        return feed


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    """Table quirks: numbers stored as floats, NaN for missing optionals."""
    out = {k: v for k, v in row.items() if not (isinstance(v, float) and v != v)}
    when = out.get("outcome_time_ms")
    if hasattr(when, "timestamp"):
        out["outcome_time_ms"] = int(when.timestamp() * 1000)
    if "event_id" in out and not isinstance(out["event_id"], str):
        value = out["event_id"]
        out["event_id"] = str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
    return out


__all__ = ["OutcomeFeed"]
