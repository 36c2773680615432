"""What the feedback worker does with a batch, independent of faust.

The faust agents (``feedback.stream.app``) only decode and call ``on_batch``; tests and the
end-to-end run drive ``FeedbackProcessor`` the same way, so the join, the delayed-label
update and the flush are exercised without a worker process.

Per batch, in this order (the agent acks the batch only after ``on_batch`` returns):

1. apply the batch to the join records in Redis (``RedisJoinState.apply``);
2. for every record that holds an outcome and whose terminal and event time are known
   (from the event, the outcome, the verdict or the decision log), hand the label to
   the feature store's ``record_outcomes`` — idempotent per event, a correction
   replaces the earlier label — so the engine's terminal risk sees it;
3. ``flush`` (on a timer, and when enough is pending) writes pending decisions and
   labelled examples to Parquet, then clears them from the pending sets. With a horizon
   (``redis.decision_log_redis_hours``) it first queues the outcomes that waited it for a
   verdict Redis no longer holds (``RedisJoinState.expire_waits``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.features.store import LabelArrival
from engine.records import OutcomeKind
from feedback.store import DecisionRow, DecisionStore, LabelledExample, LabelStore
from feedback.stream.join import JoinRecord, label_arrival_fields, needs_emit
from feedback.stream.joinstate import RedisJoinState

log = logging.getLogger(__name__)


@dataclass(slots=True)
class FlushStats:
    labels_written: int = 0
    decisions_written: int = 0
    labels_without_inputs: int = 0  # snapshot gone from Redis: kept, completed from the decision store on read
    labels_without_verdict: int = 0  # verdict gone from Redis (the horizon): the same
    #: The earliest ``decided_at_ms`` among the decisions written, or ``None``: how far
    #: behind the engine this worker is. Past ``redis.decision_log_redis_hours`` the
    #: snapshots it writes are gone (the alert in ops/prometheus/alerts.yml fires at half).
    oldest_decision_ms: int | None = None


class FeedbackProcessor:
    def __init__(self, join_state: RedisJoinState, labels: LabelStore, decisions: DecisionStore,
                 feature_store: Any | None = None, *, flush_batch: int = 5000):
        self.join = join_state
        self.labels = labels
        self.decisions = decisions
        self.features = feature_store
        self.flush_batch = flush_batch

    @classmethod
    def from_settings(cls, settings: Any, redis_client: Any, feature_store: Any | None = None) -> FeedbackProcessor:
        rs = settings.redis
        examples = settings.paths.examples_dir
        return cls(RedisJoinState(redis_client, rs.key_prefix, rs.decision_log_retention_ms, rs.decision_log_redis_ms),
                   LabelStore(examples / "labels"), DecisionStore(examples / "decisions"), feature_store)

    # ---- per batch --------------------------------------------------------------------

    def on_batch(self, kind: str, payloads: Sequence[Mapping[str, Any]]) -> list[JoinRecord]:
        """Apply one batch of ``event``/``verdict``/``outcome`` dicts (Avro field layout)."""
        records = self.join.apply(kind, payloads)
        if kind != "event" or any(r.outcome is not None for r in records):
            self._record_labels([r for r in records if r.outcome is not None])
        return records

    def _record_labels(self, records: Sequence[JoinRecord]) -> None:
        if self.features is None or not records:
            return
        arrivals: list[LabelArrival] = []
        missing: list[JoinRecord] = []
        for rec in records:
            fields = label_arrival_fields(rec)
            (missing.append(rec) if fields is None else arrivals.append(LabelArrival(**fields)))
        if missing:  # terminal or event time unknown: the decision log has both
            for rec, snap in zip(missing, self.features.decision_log([r.event_id for r in missing])):
                if snap is None:
                    continue  # no verdict and no log yet: recorded when the verdict arrives
                arrivals.append(LabelArrival(
                    rec.event_id, snap.terminal_id, int(snap.event_time_ms),
                    int(rec.outcome["outcome_time_ms"]), _is_bad(rec.outcome["kind"])))
        if arrivals:
            self.features.record_outcomes(arrivals)

    # ---- flush ------------------------------------------------------------------------

    def flush(self, *, now_ms: int | None = None) -> FlushStats:
        """Write everything pending to Parquet; safe to call at any time, from any worker."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        stats = FlushStats()
        self.join.expire_waits(now_ms)
        while True:
            ids = self.join.pending("decisions", self.flush_batch)
            if not ids:
                break
            recs = self.join.load(ids)
            snaps = self._snapshots(ids)
            rows = [DecisionRow.from_verdict(recs[e].verdict, snaps.get(e), recs[e].event)
                    for e in ids if recs[e].verdict is not None]
            decided = [r.decided_at_ms for r in rows if r.decided_at_ms > 0]
            if stats.oldest_decision_ms is not None:
                decided.append(stats.oldest_decision_ms)
            stats.oldest_decision_ms = min(decided, default=None)
            self.decisions.append(rows, now_ms=now_ms)
            self.join.mark_decisions_written(ids)
            stats.decisions_written += len(rows)
        while True:
            ids = self.join.pending("labels", self.flush_batch)
            if not ids:
                break
            recs = self.join.load(ids)
            snaps = self._snapshots(ids)
            ready = [recs[e] for e in ids if needs_emit(recs[e])]
            examples = [LabelledExample.from_join(r, snaps.get(r.event_id)) for r in ready]
            stats.labels_without_inputs += sum(1 for x in examples if x.snapshot_json is None)
            stats.labels_without_verdict += sum(1 for x in examples if x.verdict == "")
            self.labels.append(examples, now_ms=now_ms)
            # ids no longer needing emission (already written by another worker) are
            # marked too, which simply drops them from the pending set.
            where_and_when = {e: _where_and_when(recs[e], snaps.get(e)) for e in ids}
            facts = {e: f for e, f in where_and_when.items() if f is not None}
            self.join.mark_labels_written({e: recs[e].outcome_rev for e in ids}, facts)
            stats.labels_written += len(examples)
        return stats

    def backlog(self) -> dict[str, int]:
        """Join records not yet flushed, and outcomes waiting for their verdict."""
        return {"decisions": self.join.pending_count("decisions"), "labels": self.join.pending_count("labels"),
                "awaiting_verdict": self.join.awaiting_count()}

    def _snapshots(self, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if self.features is None:
            return {}
        out: dict[str, dict[str, Any]] = {}
        for eid, snap in zip(ids, self.features.decision_log(list(ids))):
            if snap is not None:
                out[eid] = snap.to_dict() if hasattr(snap, "to_dict") else dict(snap)
        return out


def _where_and_when(rec: JoinRecord, snapshot: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """The judged transaction's terminal and event time, from the record or its snapshot."""
    fields = label_arrival_fields(rec)
    if fields is not None:
        return fields["terminal_id"], fields["event_time_ms"]
    if snapshot and snapshot.get("terminal_id") and snapshot.get("event_time_ms") is not None:
        return str(snapshot["terminal_id"]), int(snapshot["event_time_ms"])
    return None


def _is_bad(kind: str) -> bool:
    return OutcomeKind(kind).is_bad
