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

On a Redis Cluster a ``WATCH``/``MULTI`` may only touch one slot, so records are spread
over ``CLUSTER_GROUPS`` groups by a hash of the event id, each group's records and sets
sharing a hash tag: ``<p>:fb:{fb<g>}:join:<event_id>``, ``<p>:fb:{fb<g>}:pending:labels``,
and so on. A batch is then one transaction per group it touches; the flusher reads every
group's sets, each node's share in one pipeline (``engine.wire.cluster_scripts``).

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
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import redis as redis_lib
from redis.cluster import RedisCluster

from engine.wire.cluster_scripts import ClusterScripts
from engine.wire.redisconn import reply_text
from feedback.stream.join import JoinRecord, apply_event, apply_outcome, apply_verdict, needs_emit

APPLY: dict[str, Callable[[JoinRecord, Mapping[str, Any]], JoinRecord]] = {
    "event": apply_event, "verdict": apply_verdict, "outcome": apply_outcome,
}

# Mark a label revision as written, and drop it from the pending set unless a newer
# revision arrived while it was being written (then it stays pending).
#
# With ARGV[3] = '1' (a horizon is set) a record whose current revision is written and
# whose decision is in the decision store (not pending, KEYS[3]) drops its verdict and
# event, keeping where and when (ARGV[4], ARGV[5]): it waits the retention for
# corrections in less memory (``python ops/bench/scaling.py --memory``; docs/scaling.md).
_MARK_LABEL = """
local rev = tonumber(ARGV[1])
local cur = tonumber(redis.call('HGET', KEYS[1], 'outcome_rev') or '0')
local em = tonumber(redis.call('HGET', KEYS[1], 'emitted_rev') or '0')
if rev > em then redis.call('HSET', KEYS[1], 'emitted_rev', ARGV[1]) end
if cur <= rev then
  redis.call('SREM', KEYS[2], ARGV[2])
  if ARGV[3] == '1' and redis.call('SISMEMBER', KEYS[3], ARGV[2]) == 0
     and redis.call('EXISTS', KEYS[1]) == 1 then
    redis.call('HDEL', KEYS[1], 'verdict', 'event')
    redis.call('HSET', KEYS[1], 'decision_in_store', '1')
    if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'terminal_id', ARGV[4]) end
    if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'event_time_ms', ARGV[5]) end
  end
end
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


#: Hash-tag groups of join records on a Redis Cluster: enough to spread the feedback
#: worker's writes over a cluster's shards (a group lives on one), few enough that a
#: flush reads every group's sets in one pipeline per node. Changing it renames keys.
CLUSTER_GROUPS = 64

_SCRIPTS = {"mark_label": _MARK_LABEL, "shorten": _SHORTEN, "stop_waiting": _STOP_WAITING}


class RedisJoinState:
    def __init__(self, client: Any, key_prefix: str, retention_ms: int, horizon_ms: int | None = None):
        self.r = client
        self.prefix = f"{key_prefix}:fb"
        self.retention_ms = int(retention_ms)
        #: ``None`` when Redis keeps every record for the retention (no horizon set).
        self.horizon_ms = int(horizon_ms) if horizon_ms and horizon_ms < retention_ms else None
        cluster = isinstance(client, RedisCluster)
        self.groups = CLUSTER_GROUPS if cluster else 1
        self._cluster_scripts = ClusterScripts(client, _SCRIPTS) if cluster else None
        self._scripts = {name: client.register_script(src) for name, src in _SCRIPTS.items()}

    # ---- key names --------------------------------------------------------------------

    def group(self, event_id: str) -> int:
        return zlib.crc32(event_id.encode()) % self.groups if self.groups > 1 else 0

    def _at(self, group: int) -> str:
        # The hash tag puts a group's records and sets in one slot; one Redis needs none.
        return self.prefix if self.groups == 1 else f"{self.prefix}:{{fb{group}}}"

    def key(self, event_id: str) -> str:
        return f"{self._at(self.group(event_id))}:join:{event_id}"

    def pending_key(self, which: str, group: int = 0) -> str:
        if which not in ("labels", "decisions"):
            raise ValueError(f"no pending set {which!r}")
        return f"{self._at(group)}:pending:{which}"

    def awaiting_key(self, group: int = 0) -> str:
        """Records holding an outcome but no verdict (sorted set; score: the outcome's arrival)."""
        return f"{self._at(group)}:awaiting"

    # ---- per batch --------------------------------------------------------------------

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
        after: dict[str, JoinRecord] = {}
        for group, ids in self._by_group(by_id).items():
            after.update(self._apply_group(kind, step, group, {e: by_id[e] for e in ids}, now_ms))
        return [after[eid] for eid in by_id]

    def _apply_group(self, kind: str, step: Callable[[JoinRecord, Mapping[str, Any]], JoinRecord], group: int,
                     by_id: Mapping[str, Sequence[Mapping[str, Any]]], now_ms: int) -> dict[str, JoinRecord]:
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
                            pipe.sadd(self.pending_key("labels", group), eid)
                        if kind == "verdict" and before[eid].verdict is None:
                            pipe.sadd(self.pending_key("decisions", group), eid)
                            if self.horizon_ms is not None:
                                pipe.zrem(self.awaiting_key(group), eid)
                        elif (kind == "outcome" and self.horizon_ms is not None and rec.verdict is None
                              and not rec.decision_in_store):
                            pipe.zadd(self.awaiting_key(group), {eid: now_ms}, nx=True)
                    pipe.execute()
                    return after
                except redis_lib.WatchError:
                    continue  # another worker touched one of these events: redo the group

    def _load(self, client: Any, event_ids: Sequence[str]) -> dict[str, JoinRecord]:
        # Inside WATCH the pipeline runs commands immediately; one round trip per key is
        # fine at feedback rates (outcomes are a trickle next to events).
        return {e: JoinRecord.from_redis(e, client.hgetall(self.key(e))) for e in event_ids}

    # ---- the flusher's side -------------------------------------------------------------

    def load(self, event_ids: Sequence[str]) -> dict[str, JoinRecord]:
        replies = self._run([("cmd:HGETALL", [self.key(e)], []) for e in event_ids])
        return {e: JoinRecord.from_redis(e, _mapping(h)) for e, h in zip(event_ids, replies)}

    def pending(self, which: str, limit: int) -> list[str]:
        replies = self._run([("cmd:SRANDMEMBER", [self.pending_key(which, g)], [limit]) for g in range(self.groups)])
        return sorted(reply_text(x) for reply in replies for x in (reply or []))[:limit]

    def pending_count(self, which: str) -> int:
        return sum(int(n) for n in self._run([("cmd:SCARD", [self.pending_key(which, g)], [])
                                              for g in range(self.groups)]))

    def awaiting_count(self) -> int:
        return sum(int(n) for n in self._run([("cmd:ZCARD", [self.awaiting_key(g)], []) for g in range(self.groups)]))

    def mark_labels_written(self, revs: Mapping[str, int],
                            facts: Mapping[str, tuple[str, int]] | None = None) -> None:
        """Record that these revisions are in the label store. ``facts`` (terminal, event
        time) per event are what a record keeps when, with a horizon, it drops the rest."""
        facts = facts or {}
        compact = "1" if self.horizon_ms is not None else "0"
        calls = []
        for e, rev in revs.items():
            g = self.group(e)
            terminal, event_time = facts.get(e, ("", ""))
            calls.append(("mark_label", [self.key(e), self.pending_key("labels", g), self.pending_key("decisions", g)],
                          [rev, e, compact, str(terminal), str(event_time)]))
        self._run(calls)

    def mark_decisions_written(self, event_ids: Iterable[str]) -> None:
        ids = list(event_ids)
        calls: list[tuple[str, list[str], list[Any]]] = [
            ("cmd:SREM", [self.pending_key("decisions", g)], members) for g, members in self._by_group(ids).items()]
        if self.horizon_ms is not None:
            calls += [("shorten", [self.key(e)], [self.horizon_ms]) for e in ids]
        self._run(calls)

    def expire_waits(self, now_ms: int, limit: int = 5000) -> int:
        """Outcomes that waited the horizon for a verdict Redis no longer holds: mark them
        ``decision_in_store`` and queue their labels. Returns how many were queued."""
        if self.horizon_ms is None:
            return 0
        due = self._run([("cmd:ZRANGEBYSCORE", [self.awaiting_key(g)],
                          ["-inf", now_ms - self.horizon_ms, "LIMIT", 0, limit]) for g in range(self.groups)])
        calls = [("stop_waiting", [self.key(eid), self.awaiting_key(g), self.pending_key("labels", g)], [eid])
                 for g, ids in enumerate(due) for eid in map(reply_text, ids or [])]
        return sum(int(x) for x in self._run(calls))

    def _by_group(self, event_ids: Iterable[str]) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for e in event_ids:
            out.setdefault(self.group(e), []).append(e)
        return out

    def _run(self, calls: Sequence[tuple[str, Sequence[Any], Sequence[Any]]]) -> list[Any]:
        """Script calls and ``cmd:NAME`` commands in one pipeline (per node on a cluster)."""
        if not calls:
            return []
        if self._cluster_scripts is not None:
            return self._cluster_scripts.run(calls)
        pipe = self.r.pipeline(transaction=False)
        for name, keys, args in calls:
            if name.startswith("cmd:"):
                pipe.execute_command(name[4:], *keys, *args)
            else:
                self._scripts[name](keys=list(keys), args=list(args), client=pipe)
        return pipe.execute()


def _mapping(reply: Any) -> Mapping[Any, Any]:
    # A pipeline's HGETALL answers a dict; a raw cluster reply (RESP2) a flat list.
    if isinstance(reply, Mapping):
        return reply
    items = list(reply or [])
    return dict(zip(items[::2], items[1::2]))

