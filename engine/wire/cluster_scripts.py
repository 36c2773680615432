"""Lua scripts on a Redis Cluster, called by SHA inside per-node pipelines.

redis-py's ``Script`` objects cannot be pipelined on a cluster, and its ``ClusterPipeline``
costs several times the client CPU per command (``python ops/bench/scaling.py --redis``).
``ClusterScripts`` sends each node its share of a batch of script calls and plain commands
on one of its connections, every node's request written before any reply is read, and
answers what a reshard or failover moved (MOVED, ASK, NOSCRIPT) after a topology refresh.
Every call's keys must share one slot (hash tags), as Redis Cluster requires of a script.
Users: the feature store (``engine.features.redis_cluster``) and the feedback worker's
join state (``feedback.stream.joinstate``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError


class ClusterScripts:
    """Named scripts, loaded on every primary and called by SHA inside cluster pipelines."""

    def __init__(self, client: RedisCluster, sources: dict[str, str]):
        self.client = client
        self.sources = dict(sources)
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
