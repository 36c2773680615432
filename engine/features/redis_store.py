"""``RedisFeatureStore``: the serving backend. Same numbers as memory, bounded round trips.

How a batch of ``enrich`` costs **two round trips**:

1. one read script: ``GET`` every event's snapshot key (retries), and for every
   distinct customer ``ZRANGE`` its recent events and ``HGETALL`` its devices — unless
   the customer's state token is the one this store wrote with the copy it holds
   (``engine.features.customer_cache``: then only the token comes back) — for every
   distinct terminal the day sums and the hours around the batch's window edges of its
   activity (``engine.features.terminal_days``), and its label buckets; the keys sent as one
   JSON argument, the whole reply one JSON array (read-only, so it never blocks writers
   for long);
2. the states are loaded into ``compute``'s structures and ``compute.enrich_batch`` runs
   on them exactly as in memory (so a later event of a customer sees an earlier one of
   the same batch), then one Lua script writes everything back atomically, given two
   arguments: the operations as JSON and the new snapshots concatenated.

The script records an event only if ``SET snapshot NX`` succeeds, so a retried or
concurrently processed event is never counted twice; an event that lost such a race
gets the stored snapshot back (one extra read, only then). A stored snapshot is reused
only for the very event it was computed for (it stores the event; ``compute.same_event``):
another event under the same id (a caller posting ``victim-evt-42`` with its own
customer and amount first) is computed afresh, recorded, and replaces that snapshot.
``record_outcomes`` is one Lua script per batch (compare-and-swap per label, correction
= move the count, also to another terminal: ``{p}:labt:{<event_id>}`` says where the
label was counted).

``read_only=True`` (what ``tollgate serve``, ``tollgate score --redis`` and
``engine.interfaces.api`` get by default) runs round trip 1 and the computation only: the
stream's state is read and never written.

Keys (``{p}`` = settings ``redis.key_prefix`` plus an optional namespace), all with TTLs
so memory is bounded without a janitor, and each with a hash tag (``{...}``) naming the
one entity it belongs to, so a Redis Cluster keeps an entity's keys in one slot:

* ``{p}:snap:{<event_id>}`` JSON snapshot + event — the decision log; TTL = settings
  ``decision_log_redis_hours`` (0: ``decision_log_retention_days``);
* ``{p}:cev:{<customer>}`` ZSET of recent events (score = event time) trimmed to what
  ``compute`` keeps; ``{p}:cdev:{<customer>}`` HASH device -> first seen;
  ``{p}:cver:{<customer>}`` the token of the write that left them so (a fresh one per
  batch; deleted when a write finds another writer's token than the one it read);
* ``{p}:tact:{<terminal>}`` HASH hour bucket -> events, with a sum per day
  (``engine.features.terminal_days`` has the layout); ``{p}:tlab:{<terminal>}`` HASH
  ``k:<hour>``/``b:<hour>`` -> labels known/bad by arrival hour; old buckets are deleted;
* ``{p}:lab:{<terminal>}:<event_id>`` the current label of an event (to apply corrections);
  ``{p}:labt:{<event_id>}`` the label key it was last counted under (a correction that
  names another terminal moves the count).

State TTLs are 31 days of wall-clock time since the last write. On a single Redis the
keys travel in the scripts' ARGV and a batch is the two scripts above. On a Redis
Cluster (``redis+cluster://`` URL, ``engine.wire.redisconn``) the same reads run once per slot
and the writes are split per slot (``engine.features.redis_cluster`` says how, and what
that costs). ``round_trips`` and ``commands`` count what was sent, for
``python ops/bench/scaling.py --redis``.
Any Redis failure raises ``ContextUnavailable``; nothing is half-written (scripts are atomic).
"""

from __future__ import annotations

import itertools
import json
import logging
import uuid
from collections.abc import Sequence
from typing import Any

import redis
from redis.cluster import RedisCluster

from engine.features.compute import (
    CustomerState,
    enrich_batch,
    same_event,
)
from engine.features.customer_cache import CustomerCache
from engine.features.redis_cluster import SLOT_WRITE_SCRIPTS
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import BUCKET_MS, IDLE_STATE_TTL_MS
from engine.features.store import ContextUnavailable, LabelArrival
from engine.features.terminal_days import LUA_READ_TERMINAL, LUA_WRITE_TERMINAL, read_plans, terminal_state, wire_plan
from engine.records import EventValidationError, TransactionEvent
from engine.settings import Settings, get_settings
from engine.wire.cluster_scripts import ClusterScripts
from engine.wire.redisconn import AnyRedis, connect, reply_text

STATE_TTL_MS = IDLE_STATE_TTL_MS
log = logging.getLogger("tollgate.features")

def _json_dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


try:  # optional: several times faster (de)serialisation of snapshots, same values back
    import orjson

    def _dumps(obj: Any) -> bytes:
        try:
            return orjson.dumps(obj)
        except TypeError:  # e.g. a lone surrogate in a memo: stdlib json escapes it
            return _json_dumps(obj)

    def _loads(raw: bytes | str) -> Any:
        try:
            return orjson.loads(raw)
        except ValueError:
            return json.loads(raw)
except ImportError:  # pragma: no cover - exercised where orjson is absent
    _dumps, _loads = _json_dumps, json.loads

_READ_STATE = LUA_READ_TERMINAL + """
-- ARGV[1..3]: n_snapshots, n_customers, n_terminals; ARGV[4]: the keys in that order as
-- one JSON array (snapshot keys; per customer its event ZSET, device HASH and state
-- token; per terminal its two HASHes); ARGV[5] (optional): per customer the token and
-- event count of the copy the client holds (engine.features.customer_cache); ARGV[6]
-- (optional): what to read of each terminal's two hashes (terminal_days.wire_plan), as
-- [distinct plans, per terminal the index of its plan] (a batch's terminals share a few). The reply
-- is ONE JSON array, one document per key (null: no snapshot): the client parses one
-- string per batch instead of a RESP element per key, and sends one argument instead
-- of a thousand (docs/performance.md, "The worker's own CPU at saturation"). A
-- customer whose token is the client's (and whose event count matches: an evicted list
-- never passes) answers null, null and its token instead of its rows.
local ns, nc, nt = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local keys = cjson.decode(ARGV[4])
local held = ARGV[5] and cjson.decode(ARGV[5]) or {}
local plan_table = ARGV[6] and cjson.decode(ARGV[6]) or {{}, {}}
local plans, plan_of = plan_table[1], plan_table[2]
local out, i = {}, 1
local function flat(h) if #h == 0 then return '[]' end return cjson.encode(h) end
for _ = 1, ns do
  local snap = redis.call('GET', keys[i])
  if snap and #snap > 0 then out[#out + 1] = snap else out[#out + 1] = 'null' end
  i = i + 1
end
for c = 1, nc do
  local tok = redis.call('GET', keys[i + 2])
  local mine = held[c]
  if tok and mine and mine[1] == tok and redis.call('ZCARD', keys[i]) == mine[2] then
    out[#out + 1] = 'null'
    out[#out + 1] = 'null'
  else
    out[#out + 1] = '[' .. table.concat(redis.call('ZRANGE', keys[i], 0, -1), ',') .. ']'
    out[#out + 1] = flat(redis.call('HGETALL', keys[i + 1]))
  end
  -- tokens are [0-9a-f:] (RedisFeatureStore._new_token): no escaping needed
  if tok then out[#out + 1] = '"' .. tok .. '"' else out[#out + 1] = 'null' end
  i = i + 3
end
for t = 1, nt do
  local plan = plans[plan_of[t] or 0] or {}
  out[#out + 1] = read_terminal_hash(keys[i], plan[1], ACTIVITY)
  out[#out + 1] = read_terminal_hash(keys[i + 1], plan[2], LABELS)
  i = i + 2
end
return '[' .. table.concat(out, ',') .. ']'
"""

_WRITE_EVENTS = LUA_WRITE_TERMINAL + """
-- ARGV[1]: the batch's operations (JSON); ARGV[2]: every new snapshot, concatenated;
-- snapshot n is bytes ops.cuts[n-1]+1 .. ops.cuts[n] of it (one argument, not one per
-- event: the client sends the batch in a few writes, not one per snapshot).
local ops = cjson.decode(ARGV[1])
local blob, cuts = ARGV[2], ops.cuts
local lost, stale, activity = {}, {}, {}
for _, op in ipairs(ops.events) do
  local n = op[2]
  local snap = string.sub(blob, (n > 1 and cuts[n - 1] or 0) + 1, cuts[n])
  local recorded
  if op[10] == 1 then  -- replaces another event's snapshot under this id
    recorded = redis.call('SET', op[1], snap, 'PX', ops.snap_ttl)
  else
    recorded = redis.call('SET', op[1], snap, 'NX', 'PX', ops.snap_ttl)
  end
  if recorded then
    redis.call('ZADD', op[3], op[4], op[5])
    local counts = activity[op[6]] or {}
    activity[op[6]] = counts
    counts[op[7]] = (counts[op[7]] or 0) + 1
    if op[8] ~= '' then
      local cur = redis.call('HGET', op[8], op[9])
      if (not cur) or tonumber(cur) > tonumber(op[4]) then redis.call('HSET', op[8], op[9], op[4]) end
    end
  else
    table.insert(lost, op[1])
  end
end
for _, c in ipairs(ops.customers) do
  redis.call('ZREMRANGEBYRANK', c[1], 0, -(c[2] + 1))
  redis.call('PEXPIRE', c[1], ops.state_ttl)
  -- HDEL only with fields (it needs one); PEXPIRE of a key that is gone does nothing
  if #c[4] > 0 then redis.call('HDEL', c[3], unpack(c[4])) end
  redis.call('PEXPIRE', c[3], ops.state_ttl)
  -- c[5] the state token, c[6] the token this batch read: still it, our state is the
  -- one of record; another writer in between, and no copy anywhere is current
  if (redis.call('GET', c[5]) or '') == c[6] then
    redis.call('SET', c[5], ops.token, 'PX', ops.state_ttl)
  else
    redis.call('DEL', c[5])
    table.insert(stale, c[5])
  end
end
for _, t in ipairs(ops.terminals) do
  -- t[3], t[4]: the hours and labels the client read whole and found stale; t[5] the
  -- labels' floor, t[6] 1 if it read them as day sums (the script prunes those itself),
  -- t[7] how many hours it read whole (terminal_days.LoadedTerminal.write_args)
  record_activity(t[1], activity[t[1]] or {}, t[3], t[7])
  if t[6] == 1 or #t[4] > 0 then prune_labels(t[2], t[5], t[4]) end
  redis.call('PEXPIRE', t[1], ops.state_ttl)
end
return {lost, stale}
"""

_LUA_UNLABEL = """
-- Takes the label stored under `key` back out of its terminal's counts and deletes it
-- (nothing when there is none: a retry after it went).
local function unlabel(key)
  local old = redis.call('GET', key)
  if old then
    local o = cjson.decode(old)
    count_label(o[1], o[2], o[3] == 1, -1)
    redis.call('DEL', key)
  end
end
"""

_WRITE_LABELS = LUA_WRITE_TERMINAL + _LUA_UNLABEL + """
-- ARGV[1]: [[label key, terminal's label HASH, arrival hour, bad, event's pointer key], ...];
-- ARGV[2]: the TTL. A label that changed (another hour or verdict) moves its count. The
-- pointer (single Redis only; a cluster's client does its part, record_outcomes) names
-- the label key the event was last counted under: a label now naming another terminal
-- is taken out of the old one's counts first, as the memory store does.
local labels = cjson.decode(ARGV[1])
local ttl = tonumber(ARGV[2])
local changed = 0
for _, l in ipairs(labels) do
  local key, tkey, bucket, bad, pointer = l[1], l[2], l[3], l[4], l[5]
  if pointer then
    local previous = redis.call('GET', pointer)
    if previous and previous ~= key then unlabel(previous) end
  end
  local old = redis.call('GET', key)
  local same = false
  if old then
    local o = cjson.decode(old)
    same = (o[1] == tkey and o[2] == bucket and o[3] == bad)
    if not same then count_label(o[1], o[2], o[3] == 1, -1) end
  end
  if not same then
    count_label(tkey, bucket, bad == 1, 1)
    redis.call('PEXPIRE', tkey, ttl)
    redis.call('SET', key, cjson.encode({tkey, bucket, bad}), 'PX', ttl)
    changed = changed + 1
  end
  if pointer then redis.call('SET', pointer, key, 'PX', ttl) end
end
return changed
"""

# A cluster's half of a move: the old label key and its terminal share a slot.
_UNLABEL = LUA_WRITE_TERMINAL + _LUA_UNLABEL + """
unlabel(KEYS[1])
return 1
"""


class RedisFeatureStore:
    """Feature state in Redis; ``namespace`` isolates tests and tenants (``{prefix}:{ns}``)."""

    def __init__(self, client: AnyRedis | None = None, settings: Settings | None = None,
                 namespace: str | None = None, *, read_only: bool = False):
        self.settings = settings or get_settings()
        #: Read context, never write it (no history, no decision log, no labels).
        self.read_only = read_only
        #: Stored snapshots found to belong to another event with the same id.
        self.conflicts = 0
        rs = self.settings.redis
        self.client = client or connect(rs.url, rs.socket_timeout_s)
        self.prefix = rs.key_prefix + (f":{namespace}" if namespace else "")
        self.snapshot_ttl_ms = rs.decision_log_redis_ms
        self._cluster = (ClusterScripts(self.client, {"read": _READ_STATE, "labels": _WRITE_LABELS, "unlabel": _UNLABEL,
                                                    **SLOT_WRITE_SCRIPTS})
                         if isinstance(self.client, RedisCluster) else None)
        self._read_state = self.client.register_script(_READ_STATE)
        self._write_events = self.client.register_script(_WRITE_EVENTS)
        self._write_labels = self.client.register_script(_WRITE_LABELS)
        self._round_trips = self._commands = 0
        #: States this store wrote last, reused while Redis holds the token written with
        #: them (engine.features.customer_cache); a read-only store never writes, so holds none.
        self.customers = CustomerCache(0 if read_only else rs.customer_cache_events)
        #: Customers whose rows the read script sent, and those answered from the copy.
        self.customer_reads = self.customer_hits = 0
        self._token_base = uuid.uuid4().hex[:16]
        self._token_seq = itertools.count(1)

    @property
    def round_trips(self) -> int:
        """Sequential requests to Redis so far (a cluster pipeline counts once)."""
        return self._cluster.round_trips if self._cluster else self._round_trips

    @property
    def commands(self) -> int:
        """Commands and script calls sent so far."""
        return self._cluster.commands if self._cluster else self._commands

    # -- key names ---------------------------------------------------------------------
    def _k(self, kind: str, ident: str) -> str:
        # The braces are a Redis Cluster hash tag: the slot is the entity's alone.
        return f"{self.prefix}:{kind}:{{{ident}}}"

    def _label_key(self, terminal_id: str, event_id: str) -> str:
        # In its terminal's slot, so one script per terminal applies its labels.
        return f"{self.prefix}:lab:{{{terminal_id}}}:{event_id}"

    # -- enrich ------------------------------------------------------------------------
    def enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        if not events:
            return []
        try:
            return self._enrich(events)
        except EventValidationError:
            raise  # the event is bad, not the store: the worker dead-letters it
        except (redis.RedisError, ValueError, KeyError, TypeError) as exc:
            raise ContextUnavailable(f"feature state unavailable: {exc!r}") from exc

    def _new_token(self) -> str:
        return f"{self._token_base}:{next(self._token_seq):x}"

    def _enrich(self, events: Sequence[TransactionEvent]) -> list[ContextSnapshot]:
        customer_ids = list(dict.fromkeys(e.customer_id for e in events))
        try:
            return self._enrich_customers(events, customer_ids)
        except BaseException:
            # The write may have been applied, in part or whole, without us hearing so:
            # the next batch reads these customers back.
            for cid in customer_ids:
                self.customers.drop(cid)
            raise

    def _enrich_customers(self, events: Sequence[TransactionEvent], customer_ids: list[str]) -> list[ContextSnapshot]:
        event_ids = list(dict.fromkeys(e.event_id for e in events))
        terminal_ids = list(dict.fromkeys(e.terminal_id for e in events))
        copies = {cid: held for cid in customer_ids if (held := self.customers.get(cid)) is not None}
        mine = [[copies[cid][0], copies[cid][1]] if cid in copies else ["", 0] for cid in customer_ids]
        hours: dict[str, set[int]] = {tid: set() for tid in terminal_ids}
        for e in events:
            hours[e.terminal_id].add(e.event_time_ms // BUCKET_MS)
        # most terminals of a live batch share its hour or two: each distinct plan is
        # worked out and sent once, and a terminal names its plan by index (1-based, Lua's)
        plan_index: dict[frozenset[int], int] = {}
        plans: list[Any] = []
        plan_of = []
        for tid in terminal_ids:
            key = frozenset(hours[tid])
            if key not in plan_index:
                plans.append([wire_plan(plan) for plan in read_plans(key)])
                plan_index[key] = len(plans)
            plan_of.append(plan_index[key])
        replies = iter(self._read(event_ids, customer_ids, terminal_ids, mine, (plans, plan_of)))  # round trip 1

        seen: dict[str, ContextSnapshot] = {}
        for eid in event_ids:
            stored = next(replies)
            if stored is not None:
                seen[eid] = ContextSnapshot.from_dict(stored)
        customers: dict[str, CustomerState] = {}
        read_tokens: dict[str, str] = {}
        for cid in customer_ids:
            rows, devices, token = next(replies), next(replies), next(replies)
            read_tokens[cid] = token or ""
            if rows is None:  # the token is the one we wrote with our copy: it is current
                customers[cid] = copies[cid][2]
                self.customer_hits += 1
            else:
                customers[cid] = _customer_from(rows, devices)
                self.customer_reads += 1
        read = {tid: terminal_state(next(replies), next(replies)) for tid in terminal_ids}
        terminals = {tid: r.state for tid, r in read.items()}
        loaded = dict(seen)
        devices_before = {cid: set(c.devices) for cid, c in customers.items()}

        snaps = enrich_batch(events, customers, terminals, seen, self.settings.features.history_order)

        # Computed here (not found in Redis, or found but for another event).
        new = [s for s in dict((s.event_id, s) for s in snaps).values() if loaded.get(s.event_id) is not s]
        replaced = {s.event_id for s in new if s.event_id in loaded}
        if replaced:
            self.conflicts += len(replaced)
            log.warning("stored context belongs to another event with the same id; not used",
                        extra={"event_ids": sorted(replaced)[:10], "read_only": self.read_only})
        if not new or self.read_only:
            return snaps
        ops_events = []
        # One blob, cut at byte offsets by the script: no JSON-inside-JSON escaping, and
        # one argument instead of one per event.
        snapshot_args: list[bytes] = []
        cuts: list[int] = []
        end = 0
        for s in new:
            e = s.event
            snapshot_args.append(_dumps(s.to_dict()))
            end += len(snapshot_args[-1])
            cuts.append(end)
            ops_events.append([
                self._k("snap", s.event_id), len(snapshot_args),
                # times travel as strings: Lua 5.1 prints numbers with 14 significant digits
                self._k("cev", e.customer_id), str(e.event_time_ms),
                json.dumps([e.event_time_ms, float(e.amount), e.terminal_id, e.country, e.event_id],
                           separators=(",", ":")),
                self._k("tact", e.terminal_id), str(e.event_time_ms // BUCKET_MS),
                self._k("cdev", e.customer_id) if e.device_id else "", e.device_id or "",
                1 if s.event_id in replaced else 0,
            ])
        touched_c = list(dict.fromkeys(s.customer_id for s in new))
        touched_t = list(dict.fromkeys(s.terminal_id for s in new))
        for s in new:
            if s.event.device_id:
                devices_before[s.customer_id].add(s.event.device_id)
        token = self._new_token()
        ops = {
            "snap_ttl": self.snapshot_ttl_ms, "state_ttl": STATE_TTL_MS, "events": ops_events, "cuts": cuts,
            "token": token,
            "customers": [[self._k("cev", c), len(customers[c].times), self._k("cdev", c),
                           sorted(devices_before[c] - set(customers[c].devices)),
                           self._k("cver", c), read_tokens[c]]
                          for c in touched_c],
            "terminals": [[self._k("tact", t), self._k("tlab", t), *read[t].write_args()] for t in touched_t],
        }
        if self._cluster is None:
            self._round_trips += 1
            self._commands += 1
            lost, stale = self._write_events(args=[_dumps(ops), b"".join(snapshot_args)])  # round trip 2
        else:
            lost, stale = self._write_sliced(ops, snapshot_args)
        # Our state is the one of record for a touched customer unless another writer
        # came between our read and write (stale) or recorded one of its events first.
        lost_keys = {reply_text(k) for k in lost}
        not_ours = {reply_text(k) for k in stale} | {
            self._k("cver", s.customer_id) for s in new if self._k("snap", s.event_id) in lost_keys}
        for cid in touched_c:
            if self._k("cver", cid) in not_ours:
                self.customers.drop(cid)
            else:
                self.customers.put(cid, token, customers[cid])
        if lost:  # another worker recorded these first: its snapshot is the one of record
            stored = self._mget(lost)
            by_key = {reply_text(k): v for k, v in zip(lost, stored)}
            out = []
            for s in snaps:
                raw = by_key.get(self._k("snap", s.event_id))
                first = ContextSnapshot.from_dict(_loads(raw)) if raw else None
                # ...unless it is another event's: then this event keeps its own context.
                out.append(first if first is not None and s.event is not None and same_event(first, s.event) else s)
            snaps = out
        return snaps

    def _read(self, event_ids: list[str], customer_ids: list[str], terminal_ids: list[str],
              mine: list[list[Any]], plans: tuple[list[Any], list[int]]) -> list[Any]:
        """Snapshots (a dict, or None), then per customer (events, devices, token), then
        per terminal (activity and labels as its plan asks, ``terminal_days``; ``plans``:
        the distinct plans, and per terminal the 1-based index of its own): one parsed
        document per key, in that order. A customer whose token and event count are
        ``mine``'s (the copy this store wrote; ``["", 0]``: none) answers None, None and
        the token."""
        if self._cluster is None:
            keys = [self._k("snap", eid) for eid in event_ids]
            for cid in customer_ids:
                keys += [self._k("cev", cid), self._k("cdev", cid), self._k("cver", cid)]
            for tid in terminal_ids:
                keys += [self._k("tact", tid), self._k("tlab", tid)]
            self._round_trips += 1
            self._commands += 1
            return _loads(self._read_state(
                args=[len(event_ids), len(customer_ids), len(terminal_ids), _dumps(keys), _dumps(mine),
                      _dumps(plans)]))
        calls: list[tuple[str, list[str], list[Any]]] = [
            ("cmd:GET", [self._k("snap", eid)], []) for eid in event_ids]
        for cid, held_copy in zip(customer_ids, mine):  # one slot each: the read script given that slot's keys
            cev, cdev, cver = self._k("cev", cid), self._k("cdev", cid), self._k("cver", cid)
            calls.append(("read", [cev], [0, 1, 0, _dumps([cev, cdev, cver]), _dumps([held_copy])]))
        table, plan_of = plans
        for tid, index in zip(terminal_ids, plan_of):
            tact, tlab = self._k("tact", tid), self._k("tlab", tid)
            calls.append(("read", [tact], [0, 0, 1, _dumps([tact, tlab]), b"[]", _dumps([[table[index - 1]], [1]])]))
        replies = self._cluster.run(calls)
        out: list[Any] = [_loads(r) if r else None for r in replies[:len(event_ids)]]
        for packed in replies[len(event_ids):]:
            out.extend(_loads(packed))
        return out

    def _write_sliced(self, ops: dict[str, Any], snapshot_args: list[bytes]) -> tuple[list[str], list[str]]:
        """The cluster's write: claim each snapshot (SET NX), then one script per slot for
        the events this worker won (``engine.features.redis_cluster``)."""
        assert self._cluster is not None
        events = ops["events"]
        claimed = self._cluster.run([
            # op[9]: this event replaces another event's snapshot under its id (no NX)
            ("cmd:SET", [op[0]], [snapshot_args[op[1] - 1], *(() if op[9] else ("NX",)), "PX", ops["snap_ttl"]])
            for op in events])
        won = [op for op, ok in zip(events, claimed) if ok]
        per_customer: dict[str, list[list[str]]] = {}
        per_terminal: dict[str, list[str]] = {}
        for op in won:
            per_customer.setdefault(op[2], []).append([op[3], op[4], op[8]])
            per_terminal.setdefault(op[5], []).append(op[6])
        calls: list[tuple[str, list[str], list[Any]]] = []
        for cev, keep, cdev, stale, cver, expect in ops["customers"]:
            if cev in per_customer:
                calls.append(("customer_write", [cev, cdev, cver], [_dumps(
                    {"e": per_customer[cev], "keep": keep, "stale": stale, "ttl": ops["state_ttl"],
                     "token": ops["token"], "expect": expect})]))
        written = [keys[2] for _, keys, _ in calls]
        for tact, tlab, stale_act, stale_lab, floor, label_days, size_read in ops["terminals"]:
            if tact in per_terminal:
                calls.append(("terminal_write", [tact, tlab], [_dumps(
                    {"b": per_terminal[tact], "act": stale_act, "lab": stale_lab, "floor": floor,
                     "days": label_days, "size": size_read, "ttl": ops["state_ttl"]})]))
        replies = self._cluster.run(calls)
        stale_tokens = [cver for cver, ours in zip(written, replies) if not ours]
        return [op[0] for op, ok in zip(events, claimed) if not ok], stale_tokens

    def _mget(self, keys: list[str]) -> list[Any]:
        if isinstance(self.client, RedisCluster):
            # One GET per slot, grouped per node by redis-py.
            return self.client.mget_nonatomic(keys)
        return self.client.mget(keys)

    # -- labels ------------------------------------------------------------------------
    def record_outcomes(self, labels: Sequence[LabelArrival]) -> None:
        if not labels:
            return
        if self.read_only:
            raise PermissionError("this feature store is read-only: outcomes are recorded by the feedback worker")
        payload = [[self._label_key(lab.terminal_id, lab.event_id), self._k("tlab", lab.terminal_id),
                    lab.arrival_bucket, 1 if lab.is_bad else 0, self._k("labt", lab.event_id)] for lab in labels]
        try:
            if self._cluster is None:
                self._write_labels(args=[json.dumps(payload, separators=(",", ":")), STATE_TTL_MS])
                return
            for wave in _waves(payload):
                self._record_labels_sliced(wave)
        except redis.RedisError as exc:
            raise ContextUnavailable(f"could not record outcomes: {exc!r}") from exc

    def _record_labels_sliced(self, payload: list[list[Any]]) -> None:
        """The cluster's label write, each event once: an event's pointer and the label
        keys of its old and new terminal sit in three slots, so a move is four calls,
        each safe to repeat: read the pointers; take a label that now names another
        terminal out of the old one's counts (deleting it there); count the labels per
        terminal as a single Redis does; then point each event at its new label key. A
        worker stopped between two calls leaves the counts right once the batch is
        retried (the old label key is gone, and the new one compares as unchanged)."""
        assert self._cluster is not None
        previous = self._cluster.run([("cmd:GET", [row[4]], []) for row in payload])
        moved = [old for row, raw in zip(payload, previous) if raw is not None and (old := reply_text(raw)) != row[0]]
        if moved:
            self._cluster.run([("unlabel", [old], []) for old in moved])
        per_terminal: dict[str, list[list[Any]]] = {}
        for row in payload:  # a label's keys share its terminal's slot
            per_terminal.setdefault(row[1], []).append(row[:4])
        self._cluster.run([("labels", [tlab], [json.dumps(rows, separators=(",", ":")), STATE_TTL_MS])
                           for tlab, rows in per_terminal.items()])
        self._cluster.run([("cmd:SET", [row[4]], [row[0], "PX", STATE_TTL_MS]) for row in payload])

    # -- decision log ------------------------------------------------------------------
    def decision_log(self, event_ids: Sequence[str]) -> list[ContextSnapshot | None]:
        if not event_ids:
            return []
        try:
            raws = self._mget([self._k("snap", eid) for eid in event_ids])
        except redis.RedisError as exc:
            raise ContextUnavailable(f"decision log unavailable: {exc!r}") from exc
        return [None if r is None else ContextSnapshot.from_dict(_loads(r)) for r in raws]


def _waves(payload: list[list[Any]]) -> list[list[list[Any]]]:
    """The label rows in order, cut where an event comes again: on a cluster the pointers
    are read before the batch's scripts run, so an event must appear once per wave."""
    waves: list[list[list[Any]]] = [[]]
    seen: set[str] = set()
    for row in payload:
        if row[4] in seen:
            waves.append([])
            seen = set()
        waves[-1].append(row)
        seen.add(row[4])
    return waves


def _customer_from(rows: list[list[Any]], flat: list[str]) -> CustomerState:
    """A customer's state from its read documents: event rows (already sorted by event
    time, the ZSET score) and its device hash as a flat [field, value, ...] list."""
    c = CustomerState()
    if rows:
        c.times, c.amounts, c.terminals, c.countries, c.event_ids = (list(col) for col in zip(*rows))
    c.devices = {flat[i]: int(flat[i + 1]) for i in range(0, len(flat), 2)}
    return c
