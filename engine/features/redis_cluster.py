"""The feature store's batch operations on a Redis Cluster: one script per slot, one
pipeline for the whole batch (redis-py sends each node its share and reads the replies).

Every key carries a hash tag (``{customer}``, ``{terminal}``, ``{event id}``), so a
customer's two keys share a slot, a terminal's two keys share a slot, and each script
touches one slot only, as Redis Cluster requires. A batch then costs:

1. one pipeline of reads: ``GET`` per snapshot, the read script per customer and per
   terminal (the same script as on one server, given one slot's keys);
2. one pipeline of ``SET snapshot NX`` per new event: which events this worker records;
3. one pipeline of per-slot write scripts for the events it won: per customer (its
   events, trim, devices) and per terminal (activity buckets, stale buckets).

On a single server the whole batch is two atomic scripts; here step 2 happens before
step 3, so an event is never counted twice, but a worker killed between them (a few
milliseconds) leaves that event's snapshot recorded without its contribution to its
customer's and terminal's history. Verdicts stay exactly once either way (Kafka
transactions); docs/scaling.md says so. ``python ops/bench/scaling.py --redis`` counts
the round trips and commands per batch on both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

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
redis.call('HDEL', KEYS[2], unpack(op.stale))
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], op.ttl) end
if (redis.call('GET', KEYS[3]) or '') == op.expect then
  redis.call('SET', KEYS[3], op.token, 'PX', op.ttl)
  return 1
end
redis.call('DEL', KEYS[3])
return 0
"""

_TERMINAL_WRITE = """
-- KEYS[1] terminal's activity HASH, KEYS[2] its label HASH (one slot: {terminal}).
-- ARGV[1] JSON {b: [bucket per event], act: [stale...], lab: [stale...], ttl}
local op = cjson.decode(ARGV[1])
for _, b in ipairs(op.b) do redis.call('HINCRBY', KEYS[1], b, 1) end
redis.call('HDEL', KEYS[1], unpack(op.act))
redis.call('HDEL', KEYS[2], unpack(op.lab))
redis.call('PEXPIRE', KEYS[1], op.ttl)
return 1
"""


class ClusterScripts:
    """The store's scripts, loaded on every primary and called by SHA inside cluster
    pipelines (redis-py's ``Script`` objects cannot be pipelined on a cluster)."""

    def __init__(self, client: RedisCluster, sources: dict[str, str]):
        self.client = client
        self.sources = dict(sources, customer_write=_CUSTOMER_WRITE, terminal_write=_TERMINAL_WRITE)
        self.sha: dict[str, str] = {}
        #: Sequential waits on the network and commands sent, for ops/bench/scaling.py.
        self.round_trips = 0
        self.commands = 0

    def load(self) -> None:
        # SCRIPT LOAD goes to every primary; a restarted or new primary has none,
        # which ``run`` notices (NOSCRIPT) and answers by loading again.
        self.sha = {name: self.client.script_load(src) for name, src in self.sources.items()}

    def run(self, calls: Sequence[tuple[str, Sequence[Any], Sequence[Any]]]) -> list[Any]:
        """Run ``(script, keys, args)`` calls and plain ``("cmd:NAME", keys, args)``
        commands, replies in order: each node's share pipelined on one of its
        connections, every node's request written before any reply is read (one wait).

        redis-py's ``ClusterPipeline`` does the same, at several times the client CPU
        per command (``python ops/bench/scaling.py --redis``); it still answers what a
        reshard or failover moved (MOVED, ASK, TRYAGAIN), after a topology refresh."""
        if not calls:
            return []
        if not self.sha:
            self.load()
        self.round_trips += 1
        self.commands += len(calls)
        results = self._send_per_node(calls)
        moved = [i for i, r in enumerate(results) if isinstance(r, ResponseError)]
        if not moved:
            return results
        if any("NOSCRIPT" in str(results[i]) for i in moved):
            self.load()
        self.client.nodes_manager.initialize()  # slots moved, or a node restarted
        self.round_trips += 1
        pipe = self.client.pipeline()
        for i in moved:
            pipe.execute_command(*self._command(calls[i]))
        for i, reply in zip(moved, pipe.execute()):  # raises what is still wrong
            results[i] = reply
        return results

    def _command(self, call: tuple[str, Sequence[Any], Sequence[Any]]) -> tuple[Any, ...]:
        name, keys, args = call
        if name.startswith("cmd:"):
            return (name[4:], *keys, *args)
        return ("EVALSHA", self.sha[name], len(keys), *keys, *args)

    def _send_per_node(self, calls: Sequence[tuple[str, Sequence[Any], Sequence[Any]]]) -> list[Any]:
        by_node: dict[str, tuple[Any, list[int]]] = {}
        nodes = self.client.nodes_manager
        for i, (_, keys, _args) in enumerate(calls):
            node = nodes.get_node_from_slot(self.client.keyslot(keys[0]))
            by_node.setdefault(node.name, (node, []))[1].append(i)
        results: list[Any] = [None] * len(calls)
        held = []
        try:
            for node, idxs in by_node.values():
                pool = node.redis_connection.connection_pool
                conn = pool.get_connection()
                held.append((pool, conn, idxs))
                conn.send_packed_command(conn.pack_commands([self._command(calls[i]) for i in idxs]))
            for _, conn, idxs in held:
                for i in idxs:
                    try:
                        results[i] = conn.read_response()
                    except ResponseError as exc:  # per command: MOVED, NOSCRIPT, ...
                        results[i] = exc
        except BaseException:
            for _, conn, _ in held:  # replies may be left unread: never reuse these
                conn.disconnect()
            raise
        finally:
            for pool, conn, _ in held:
                pool.release(conn)
        return results
