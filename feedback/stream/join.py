"""The outcome ↔ verdict ↔ event join, as pure functions over one ``JoinRecord``.

faust-streaming has no stream-to-stream ``join()``, and the three inputs are keyed
differently (events and verdicts by customer, outcomes by event), so the join state is
one record per ``event_id`` that each input updates in place. The record lives in
Redis (``feedback.stream.joinstate``); everything here is pure so it can be tested without a
server and reasoned about one message at a time.

Rules, in the order the issue asks for them:

* **Outcome before verdict** — the record simply waits; it becomes complete, and is
  emitted, when both verdict and outcome are there. The event itself (the model's raw
  input) is optional here: the engine's decision log holds it next to the context
  snapshot, and is read when the example is written; the worker can also consume
  ``tx.events`` to keep it in the record (for decision logs that expire early).
* **Duplicates** — an identical event, verdict or outcome changes nothing (the first
  event and verdict win; Kafka redelivery after a crash is the usual source).
* **A verdict that left Redis** — with ``redis.decision_log_redis_hours`` set, a
  verdict-only record expires hours after its decision reached the decision store. An
  outcome that arrives later finds no verdict; once it has waited that horizon too
  (``RedisJoinState.expire_waits``), the record is marked ``decision_in_store`` and is
  emitted without one: the fine-tune takes the verdict and the inputs from the
  decision store (``feedback.store.complete_from_decisions``).
* **Corrections** — a later outcome (larger ``outcome_time_ms``) replaces the earlier
  one and bumps ``outcome_rev``, so the example is emitted again; the store keeps the
  highest revision. An outcome *older* than the one held is stale and ignored, so a
  replayed topic converges to the same state.

>>> r = JoinRecord("e1")
>>> r = apply_outcome(r, {"event_id": "e1", "kind": "chargeback", "outcome_time_ms": 10, "source": "issuer"})
>>> needs_emit(r)          # the verdict has not arrived yet
False
>>> r = apply_verdict(r, {"event_id": "e1", "verdict": "pass"})
>>> needs_emit(r), r.outcome_rev
(True, 1)
>>> r = mark_emitted(r, r.outcome_rev)
>>> apply_outcome(r, {"event_id": "e1", "kind": "chargeback", "outcome_time_ms": 10, "source": "issuer"}) == r
True
>>> r2 = apply_outcome(r, {"event_id": "e1", "kind": "confirmed_legitimate", "outcome_time_ms": 20, "source": "desk"})
>>> needs_emit(r2), r2.outcome_rev, preferred_verdict(r2.outcome["kind"])
(True, 2, 'pass')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from engine.records import Decision, OutcomeKind


@dataclass(slots=True, frozen=True)
class JoinRecord:
    """The join state of one event. Payloads are plain dicts in the Avro field layout."""

    event_id: str
    event: Mapping[str, Any] | None = None
    verdict: Mapping[str, Any] | None = None
    outcome: Mapping[str, Any] | None = None
    #: Bumped each time the held outcome changes (1 = first outcome, 2 = first correction).
    outcome_rev: int = 0
    #: Highest ``outcome_rev`` already written to the example store.
    emitted_rev: int = 0
    #: The verdict is not in Redis any more (it outlived ``redis.decision_log_redis_hours``)
    #: but is in the decision store: the record is complete with its outcome alone.
    decision_in_store: bool = False
    #: Where and when the judged transaction happened, kept when a written record drops
    #: its verdict and event (``RedisJoinState.mark_labels_written`` with a horizon), so a
    #: correction still reaches the delayed-label state.
    terminal_id: str | None = None
    event_time_ms: int | None = None

    def to_redis(self) -> dict[str, str]:
        """Flat string fields for a Redis hash."""
        out = {"event_id": self.event_id, "outcome_rev": str(self.outcome_rev),
               "emitted_rev": str(self.emitted_rev)}
        if self.decision_in_store:
            out["decision_in_store"] = "1"
        if self.terminal_id is not None:
            out["terminal_id"] = self.terminal_id
        if self.event_time_ms is not None:
            out["event_time_ms"] = str(self.event_time_ms)
        for name in ("event", "verdict", "outcome"):
            value = getattr(self, name)
            if value is not None:
                out[name] = json.dumps(dict(value), sort_keys=True, default=str)
        return out

    @classmethod
    def from_redis(cls, event_id: str, fields: Mapping[Any, Any]) -> JoinRecord:
        """Inverse of ``to_redis``; an empty hash is a fresh record."""
        f = {(k.decode() if isinstance(k, bytes) else k): (v.decode() if isinstance(v, bytes) else v)
             for k, v in fields.items()}
        load = lambda name: json.loads(f[name]) if f.get(name) else None  # noqa: E731
        return cls(event_id, load("event"), load("verdict"), load("outcome"),
                   int(f.get("outcome_rev") or 0), int(f.get("emitted_rev") or 0),
                   f.get("decision_in_store") == "1", f.get("terminal_id") or None,
                   int(f["event_time_ms"]) if f.get("event_time_ms") else None)


def apply_event(rec: JoinRecord, event: Mapping[str, Any]) -> JoinRecord:
    """Attach the transaction event (the model's raw input). First one wins.

    Attaching an event never triggers an emission by itself, but it does let the
    delayed-label state be updated for an outcome that arrived before its verdict."""
    return rec if rec.event is not None else replace(rec, event=dict(event))


def apply_verdict(rec: JoinRecord, verdict: Mapping[str, Any]) -> JoinRecord:
    """Attach the verdict. Every event gets exactly one, so a second is a redelivery."""
    return rec if rec.verdict is not None else replace(rec, verdict=dict(verdict))


def apply_outcome(rec: JoinRecord, outcome: Mapping[str, Any]) -> JoinRecord:
    """Attach or correct the outcome; identical or older outcomes change nothing."""
    new = _outcome_key(outcome)
    if rec.outcome is not None:
        held = _outcome_key(rec.outcome)
        if new == held or new[0] < held[0]:
            return rec  # duplicate, or a stale outcome replayed after its correction
        if new[0] == held[0] and new < held:
            return rec  # same instant, two different reports: the larger key wins, always
    return replace(rec, outcome=dict(outcome), outcome_rev=rec.outcome_rev + 1)


def _outcome_key(o: Mapping[str, Any]) -> tuple[int, str, str]:
    return int(o["outcome_time_ms"]), str(o["kind"]), str(o.get("source") or "")


def is_complete(rec: JoinRecord) -> bool:
    return rec.outcome is not None and (rec.verdict is not None or rec.decision_in_store)


def needs_emit(rec: JoinRecord) -> bool:
    """Complete, and holding an outcome revision the store has not seen yet."""
    return is_complete(rec) and rec.outcome_rev > rec.emitted_rev


def mark_emitted(rec: JoinRecord, rev: int) -> JoinRecord:
    return replace(rec, emitted_rev=max(rec.emitted_rev, rev))


def label_arrival_fields(rec: JoinRecord) -> dict[str, Any] | None:
    """The facts the delayed-label risk state needs, once they are all known.

    ``terminal_id`` and ``event_time_ms`` come from the event, or failing that from the
    verdict and the outcome, so risk state is updated as early as possible.
    """
    if rec.outcome is None:
        return None
    terminal = (rec.event or {}).get("terminal_id") or rec.terminal_id or rec.outcome.get("terminal_id")
    event_time = ((rec.event or {}).get("event_time_ms") or (rec.verdict or {}).get("event_time_ms")
                  or rec.event_time_ms or rec.outcome.get("event_time_ms"))
    if not terminal or event_time is None:
        return None
    return {"event_id": rec.event_id, "terminal_id": str(terminal), "event_time_ms": int(event_time),
            "arrival_time_ms": int(rec.outcome["outcome_time_ms"]),
            "is_bad": OutcomeKind(rec.outcome["kind"]).is_bad}


def preferred_verdict(kind: str | OutcomeKind) -> str:
    """The verdict an outcome proves right: reject for a bad outcome, pass for a good one.

    Review is never "proved right": it is the hedge between the two, priced by the
    review cost in the preference loss.
    """
    return (Decision.REJECT if OutcomeKind(kind).is_bad else Decision.PASS).value


def dispreferred_verdict(kind: str | OutcomeKind) -> str:
    return (Decision.PASS if OutcomeKind(kind).is_bad else Decision.REJECT).value
