"""Join records in Redis: one hash per event id, plus the sets of work not yet flushed.

Redis rather than a faust Table because the three inputs are partitioned differently
(events and verdicts by customer, outcomes by event): a Table would need a repartition
topic per input. Redis already holds the engine's state, persists with AOF, and lets
any number of feedback workers share the join with optimistic transactions
(``WATCH``/``MULTI``), so a worker killed at any point loses nothing:

1. a batch is applied to the records and, in the same ``MULTI``, every record that now
   needs writing is added to a pending set (``labels`` and/or ``decisions``);
2. only then does the faust agent ack the batch, so its offsets can be committed;
3. the flusher writes pending records to Parquet and *then* removes them from the
   pending set (a crash in between writes them twice; the stores dedup on read).

Keys (``<p>`` = ``settings.redis.key_prefix``): ``<p>:fb:join:<event_id>`` (hash, expires
with the decision-log retention), ``<p>:fb:pending:labels`` and
``<p>:fb:pending:decisions`` (sets of event ids).

With a horizon (``redis.decision_log_redis_hours``), Redis holds per-outcome state, not
per-event state, for the retention: a verdict-only record expires ``horizon`` after its
decision was written to the decision store, and ``<p>:fb:awaiting`` (sorted set, score =
when the outcome arrived) lists the records holding an outcome but no verdict. One that
has waited the horizon will not see its verdict in Redis (verdicts follow their events
by seconds; a verdict-only record lives that long after its flush), so ``expire_waits``
marks it ``decision_in_store`` and queues its label: the fine-tune joins it to the
decision store (docs/scaling.md, "The decision log at scale").
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import redis as redis_lib

from feedback.stream.join import JoinRecord, apply_event, apply_outcome, apply_verdict, needs_emit

APPLY: dict[str, Callable[[JoinRecord, Mapping[str, Any]], JoinRecord]] = {
    "event": apply_event, "verdict": apply_verdict, "outcome": apply_outcome,
}

# Mark a label revision as written, and drop it from the pending set unless a newer
# revision arrived while it was being written (then it stays pending).
_MARK_LABEL = """
local rev = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'outcome_rev') or '0')
local em = tonumber(redis.call('HGET', KEYS[1], 'emitted_rev') or '0')
if rev > em then redis.call('HSET', KEYS[1], 'emitted_rev', ARGV[1]) end
if cur <= rev then redis.call('SREM', KEYS[2], ARGV[2]) end
return cur
"""


# A decision written to the store: its record keeps only the horizon unless it holds an
# outcome (then the outcome's own wait for corrections keeps the retention).
_SHORTEN = """
if redis.call('HEXISTS', KEYS[1], 'outcome') == 0 and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
"""

# An outcome that waited the horizon without its verdict: complete it without one.
_STOP_WAITING = """
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HEXISTS', KEYS[1], 'verdict') == 1 or redis.call('HEXISTS', KEYS[1], 'outcome') == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'decision_in_store', '1')
redis.call('SADD', KEYS[3], ARGV[1])
return 1
"""


class RedisJoinState:
    def __init__(self, client: Any, key_prefix: str, retention_ms: int, horizon_ms: int | None = None):
        self.r = client
        self.prefix = f"{key_prefix}:fb"
        self.retention_ms = int(retention_ms)
        #: ``None`` when Redis keeps every record for the retention (no horizon set).
        self.horizon_ms = int(horizon_ms) if horizon_ms and horizon_ms < retention_ms else None
        self.pending_labels = f"{self.prefix}:pending:labels"
        self.pending_decisions = f"{self.prefix}:pending:decisions"
        self.awaiting = f"{self.prefix}:awaiting"
        self._mark_label = client.register_script(_MARK_LABEL)
        self._shorten = client.register_script(_SHORTEN)
        self._stop_waiting = client.register_script(_STOP_WAITING)

    def key(self, event_id: str) -> str:
        return f"{self.prefix}:join:{event_id}"

    def apply(self, kind: str, payloads: Sequence[Mapping[str, Any]], *,
              now_ms: int | None = None) -> list[JoinRecord]:
        """Apply one batch of one input kind; returns the records after the update
        (one per distinct event id, in first-seen order). ``now_ms`` (wall clock by
        default) starts an outcome's wait for its verdict."""
        step = APPLY[kind]
        now_ms = int(time.time() * 1000) if now_ms is None else int(now_ms)
        by_id: dict[str, list[Mapping[str, Any]]] = {}
        for p in payloads:
            by_id.setdefault(str(p["event_id"]), []).append(p)
        if not by_id:
            return []
        keys = [self.key(e) for e in by_id]
        with self.r.pipeline(transaction=True) as pipe:
            while True:
                try:
                    pipe.watch(*keys)
                    before = self._load(pipe, list(by_id))
                    after: dict[str, JoinRecord] = {}
                    for eid, items in by_id.items():
                        rec = before[eid]
                        for item in items:
                            rec = step(rec, item)
                        after[eid] = rec
                    pipe.multi()
                    for eid, rec in after.items():
                        if rec == before[eid]:
                            continue
                        k = self.key(eid)
                        pipe.hset(k, mapping=rec.to_redis())
                        pipe.pexpire(k, self.retention_ms)
                        if needs_emit(rec):
                            pipe.sadd(self.pending_labels, eid)
                        if kind == "verdict" and before[eid].verdict is None:
                            pipe.sadd(self.pending_decisions, eid)
                        if self.horizon_ms is not None:
                            if kind == "outcome" and rec.verdict is None and not rec.decision_in_store:
                                pipe.zadd(self.awaiting, {eid: now_ms}, nx=True)
                            elif kind == "verdict" and before[eid].verdict is None:
                                pipe.zrem(self.awaiting, eid)
                    pipe.execute()
                    return list(after.values())
                except redis_lib.WatchError:
                    continue  # another worker touched one of these events: redo the batch

    def _load(self, client: Any, event_ids: Sequence[str]) -> dict[str, JoinRecord]:
        # Inside WATCH the pipeline runs commands immediately; one round trip per key is
        # fine at feedback rates (outcomes are a trickle next to events).
        return {e: JoinRecord.from_redis(e, client.hgetall(self.key(e))) for e in event_ids}

    def load(self, event_ids: Sequence[str]) -> dict[str, JoinRecord]:
        pipe = self.r.pipeline(transaction=False)
        for e in event_ids:
            pipe.hgetall(self.key(e))
        return {e: JoinRecord.from_redis(e, h) for e, h in zip(event_ids, pipe.execute())}

    def pending(self, which: str, limit: int) -> list[str]:
        key = self.pending_labels if which == "labels" else self.pending_decisions
        return sorted(_text(x) for x in self.r.srandmember(key, limit) or [])

    def pending_count(self, which: str) -> int:
        return int(self.r.scard(self.pending_labels if which == "labels" else self.pending_decisions))

    def mark_labels_written(self, revs: Mapping[str, int]) -> None:
        pipe = self.r.pipeline(transaction=False)
        for eid, rev in revs.items():
            self._mark_label(keys=[self.key(eid), self.pending_labels], args=[rev, eid], client=pipe)
        pipe.execute()

    def mark_decisions_written(self, event_ids: Iterable[str]) -> None:
        ids = list(event_ids)
        if not ids:
            return
        self.r.srem(self.pending_decisions, *ids)
        if self.horizon_ms is not None:
            pipe = self.r.pipeline(transaction=False)
            for eid in ids:
                self._shorten(keys=[self.key(eid)], args=[self.horizon_ms], client=pipe)
            pipe.execute()

    def expire_waits(self, now_ms: int, limit: int = 5000) -> int:
        """Outcomes that waited the horizon for a verdict Redis no longer holds: mark them
        ``decision_in_store`` and queue their labels. Returns how many were queued."""
        if self.horizon_ms is None:
            return 0
        ids = [_text(x) for x in self.r.zrangebyscore(self.awaiting, "-inf", now_ms - self.horizon_ms,
                                                      start=0, num=limit)]
        if not ids:
            return 0
        pipe = self.r.pipeline(transaction=False)
        for eid in ids:
            self._stop_waiting(keys=[self.key(eid), self.awaiting, self.pending_labels], args=[eid], client=pipe)
        return sum(int(x) for x in pipe.execute())


def _text(x: Any) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)
