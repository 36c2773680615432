"""The feature store's batch operations on a Redis Cluster: one script per slot, one
pipeline for the whole batch (redis-py sends each node its share and reads the replies).

Every key carries a hash tag (``{customer}``, ``{terminal}``, ``{event id}``), so a
customer's two keys share a slot, a terminal's two keys share a slot, and each script
touches one slot only, as Redis Cluster requires. A batch then costs:

1. one pipeline of reads: ``GET`` per snapshot, the read script per customer and per
   terminal (the same script as on one server, given one slot's keys);
2. one pipeline of ``SET snapshot NX`` per new event: which events this worker records;
3. one pipeline of per-slot write scripts for the events it won: per customer (its
   events, trim, devices) and per terminal (activity buckets and day sums, stale
   buckets: ``engine.features.terminal_days``).

On a single server the whole batch is two atomic scripts; here step 2 happens before
step 3, so an event is never counted twice, but a worker killed between them (a few
milliseconds) leaves that event's snapshot recorded without its contribution to its
customer's and terminal's history. Verdicts stay exactly once either way (Kafka
transactions); docs/scaling.md says so. ``python ops/bench/scaling.py --redis`` counts
the round trips and commands per batch on both.
"""

from __future__ import annotations

from engine.features.terminal_days import LUA_WRITE_TERMINAL

_CUSTOMER_WRITE = """
-- KEYS[1] customer's event ZSET, KEYS[2] its device HASH, KEYS[3] its state token
-- (one slot: {customer}). ARGV[1] JSON {e: [[score, member, device], ...], keep,
-- stale: [device...], ttl, token, expect}. Returns 0 when the token was not `expect`
-- (another writer since our read: the token is deleted, no copy is current), else 1.
local op = cjson.decode(ARGV[1])
for _, e in ipairs(op.e) do
  redis.call('ZADD', KEYS[1], e[1], e[2])
  if e[3] ~= '' then
    local cur = redis.call('HGET', KEYS[2], e[3])
    if (not cur) or tonumber(cur) > tonumber(e[1]) then redis.call('HSET', KEYS[2], e[3], e[1]) end
  end
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(op.keep + 1))
redis.call('PEXPIRE', KEYS[1], op.ttl)
-- HDEL only with fields (it needs one); PEXPIRE of a key that is gone does nothing
if #op.stale > 0 then redis.call('HDEL', KEYS[2], unpack(op.stale)) end
redis.call('PEXPIRE', KEYS[2], op.ttl)
if (redis.call('GET', KEYS[3]) or '') == op.expect then
  redis.call('SET', KEYS[3], op.token, 'PX', op.ttl)
  return 1
end
redis.call('DEL', KEYS[3])
return 0
"""

_TERMINAL_WRITE = LUA_WRITE_TERMINAL + """
-- KEYS[1] terminal's activity HASH, KEYS[2] its label HASH (one slot: {terminal}).
-- ARGV[1] JSON {b: [bucket per event], act: [stale hour...], lab: [stale label...],
-- floor: the labels' floor, days: 1 if the labels were read as day sums, size: the hours
-- read whole, ttl}
-- (engine.features.terminal_days)
local op = cjson.decode(ARGV[1])
local counts = {}
for _, b in ipairs(op.b) do counts[b] = (counts[b] or 0) + 1 end
record_activity(KEYS[1], counts, op.act, op.size)
if op.days == 1 or #op.lab > 0 then prune_labels(KEYS[2], op.floor, op.lab) end
redis.call('PEXPIRE', KEYS[1], op.ttl)
return 1
"""


#: The per-slot write scripts, by the names ``RedisFeatureStore`` calls them.
SLOT_WRITE_SCRIPTS = {"customer_write": _CUSTOMER_WRITE, "terminal_write": _TERMINAL_WRITE}
