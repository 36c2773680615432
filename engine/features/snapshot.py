"""``ContextSnapshot``: what the stores knew about an event's customer and terminal just
before the event, frozen at the moment it was first enriched.

It is three things at once: the enrich stage's output (the encoder reads ``values`` and
the history window), the rules' view (``as_rule_inputs()``, names from ``spec``), and —
stored per event in Redis — the decision log the feedback worker joins outcomes to
(``to_dict``/``from_dict`` round-trip through JSON).

>>> s = ContextSnapshot.empty()
>>> s.velocity_1h_count, s.amount_to_mean_ratio, s.available
(0.0, 1.0, False)
>>> d = ContextSnapshot.from_dict(s.to_dict())
>>> d == s, d.as_rule_inputs()["context_available"]
(True, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.features.spec import CONTEXT_FEATURES, NO_PREVIOUS_SECONDS
from engine.records import TransactionEvent

_INDEX = {name: i for i, name in enumerate(CONTEXT_FEATURES)}

#: Neutral values for a context that could not be read (degraded mode) or has no history.
EMPTY_VALUES: tuple[float, ...] = tuple(
    1.0 if name == "amount_to_mean_ratio" else NO_PREVIOUS_SECONDS if name == "seconds_since_prev" else 0.0
    for name in CONTEXT_FEATURES
)


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """Context of one event. History tuples hold at most ``HISTORY_LEN`` past events in the
    window order of the store's history order (most recent first unless it is
    ``relevance``: ``engine.features.history``)."""

    event_id: str
    event_time_ms: int
    customer_id: str
    terminal_id: str
    #: One finite float per name in ``spec.CONTEXT_FEATURES``, in that order.
    values: tuple[float, ...]
    history_amounts: tuple[float, ...] = ()
    history_times_ms: tuple[int, ...] = ()
    history_terminals: tuple[str, ...] = ()
    #: False for ``empty()``: the stores were unreachable, the values are neutral defaults.
    available: bool = True
    #: The event itself when the snapshot came from a decision log (so a labelled example
    #: can be re-encoded); not part of equality.
    event: TransactionEvent | None = field(default=None, compare=False)

    def __getattr__(self, name: str) -> float:
        # Only reached when normal lookup fails: expose features as attributes.
        try:
            return self.values[_INDEX[name]]
        except KeyError:
            raise AttributeError(name) from None

    def as_rule_inputs(self) -> dict[str, float]:
        """Feature name -> value for rules (``ctx.<name>``), plus ``context_available``
        and ``history_length``."""
        out = dict(zip(CONTEXT_FEATURES, self.values))
        out["context_available"] = 1.0 if self.available else 0.0
        out["history_length"] = float(len(self.history_amounts))
        return out

    @classmethod
    def empty(cls, event: TransactionEvent | None = None) -> ContextSnapshot:
        """Neutral context for degraded mode (Redis down): no history, ``available=False``."""
        if event is None:
            return cls("", 0, "", "", EMPTY_VALUES, available=False)
        return cls(event.event_id, event.event_time_ms, event.customer_id, event.terminal_id,
                   EMPTY_VALUES, available=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict; features by name so stored logs survive a reordered spec."""
        out: dict[str, Any] = {
            "event_id": self.event_id, "event_time_ms": self.event_time_ms,
            "customer_id": self.customer_id, "terminal_id": self.terminal_id,
            "features": dict(zip(CONTEXT_FEATURES, self.values)),
            "history_amounts": list(self.history_amounts),
            "history_times_ms": list(self.history_times_ms),
            "history_terminals": list(self.history_terminals),
            "available": self.available,
        }
        if self.event is not None:
            out["event"] = self.event.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ContextSnapshot:
        """Inverse of ``to_dict``. A feature missing from an older log gets its neutral value;
        a non-finite value is replaced by it too (nothing non-finite leaves this class)."""
        feats = data.get("features") or {}
        values = []
        for name, default in zip(CONTEXT_FEATURES, EMPTY_VALUES):
            v = float(feats.get(name, default))
            values.append(v if math.isfinite(v) else default)
        event = data.get("event")
        return cls(
            event_id=str(data["event_id"]), event_time_ms=int(data["event_time_ms"]),
            customer_id=str(data["customer_id"]), terminal_id=str(data["terminal_id"]),
            values=tuple(values),
            history_amounts=tuple(float(a) for a in data.get("history_amounts", ())),
            history_times_ms=tuple(int(t) for t in data.get("history_times_ms", ())),
            history_terminals=tuple(str(t) for t in data.get("history_terminals", ())),
            available=bool(data.get("available", True)),
            event=None if event is None else TransactionEvent.from_dict(event),
        )


class RuleContexts(Sequence[Mapping[str, float]]):
    """What rules read as ``ctx.*`` for a batch of snapshots, held as the snapshots.

    ``column(name)`` is one variable over the batch, read from the snapshots without a
    dict per event (what a rule in column form reads, ``engine.stages.guard.BatchInputs``);
    ``contexts[i]`` is event i's ``as_rule_inputs()``, built on first use (for a rule
    evaluated row by row). Both give the same values (``tests/unit/test_rules_columns.py``).
    """

    __slots__ = ("_dicts", "_snapshots")

    def __init__(self, snapshots: Sequence[ContextSnapshot]):
        self._snapshots = snapshots
        self._dicts: list[dict[str, float] | None] = [None] * len(snapshots)

    def __len__(self) -> int:
        return len(self._snapshots)

    def __getitem__(self, i: int) -> dict[str, float]:  # type: ignore[override]  # no slices
        found = self._dicts[i]
        if found is None:
            found = self._dicts[i] = self._snapshots[i].as_rule_inputs()
        return found

    def __iter__(self) -> Iterator[dict[str, float]]:
        return (self[i] for i in range(len(self._snapshots)))

    def column(self, name: str) -> list[float]:
        """``[ctx[name] for ctx in self]``; ``KeyError`` for a name rules cannot read."""
        at = _INDEX.get(name)
        if at is not None:
            return [s.values[at] for s in self._snapshots]
        if name == "context_available":
            return [1.0 if s.available else 0.0 for s in self._snapshots]
        if name == "history_length":
            return [float(len(s.history_amounts)) for s in self._snapshots]
        raise KeyError(name)

    def take(self, index: Sequence[int]) -> RuleContexts:
        """The contexts of the events ``index`` names (an event's text-free twins share its)."""
        return RuleContexts([self._snapshots[i] for i in index])
