"""One way to open Redis from a URL: a single server or a Redis Cluster.

``redis://host:port/db`` (or ``rediss://``, ``unix://``) opens one server, as before.
``redis+cluster://host:port[,host:port...]`` (or ``rediss+cluster://`` for TLS) opens
redis-py's ``RedisCluster`` from those startup nodes; it finds the rest of the cluster
itself. A password or user in the URL applies to every node. ``ops/stack up
--redis-shards 3`` prints such a URL.

>>> is_cluster_url("redis+cluster://127.0.0.1:7000,127.0.0.1:7001")
True
>>> is_cluster_url("redis://127.0.0.1:6379/0")
False
>>> cluster_nodes("redis+cluster://:pw@10.0.0.1:7000,10.0.0.2")
[('10.0.0.1', 7000), ('10.0.0.2', 6379)]
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any
from urllib.parse import unquote, urlsplit

import redis
from redis.cluster import ClusterNode, RedisCluster

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")

#: What every Tollgate Redis client may be. Code that needs to know which one it holds
#: asks ``isinstance(client, RedisCluster)``.
AnyRedis = redis.Redis | RedisCluster


log = logging.getLogger("tollgate.redis")

#: A reply slower than this is logged with the thread that waited for it: a Redis read
#: that times out inside the worker while Redis answers others in time is otherwise
#: invisible (ops/bench/hotswap.py reads these lines from the worker log).
SLOW_REPLY_MS = 200.0


class TimedConnection(redis.Connection):
    """A single-server connection that logs a slow or timed-out reply (``SLOW_REPLY_MS``)
    with the waiting thread's name, and how long since the command was sent."""

    _sent_at: float = 0.0
    _command: str = "pipeline"
    _last: str = ""

    def send_command(self, *args: Any, **kwargs: Any) -> None:
        name = args[0] if args else b"?"
        self._command = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        super().send_command(*args, **kwargs)  # type: ignore[no-untyped-call]  # redis-py is untyped here
        self._command = "pipeline"  # a pipeline sends packed commands without this call

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        self._sent_at = time.perf_counter()
        self._last = self._command
        super().send_packed_command(command, check_health)  # type: ignore[no-untyped-call]  # redis-py is untyped here

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        if "timeout" in kwargs:  # a pub/sub poll: waiting is its purpose
            return super().read_response(*args, **kwargs)
        started = time.perf_counter()
        outcome = "ok"
        try:
            return super().read_response(*args, **kwargs)
        except redis.exceptions.TimeoutError:
            outcome = "timeout"
            raise
        finally:
            waited_ms = (time.perf_counter() - started) * 1000
            if waited_ms >= SLOW_REPLY_MS or outcome != "ok":
                sent_at = self._sent_at or started
                log.warning("slow Redis reply", extra={
                    "waiting_thread": threading.current_thread().name, "outcome": outcome, "command": self._last,
                    "read_ms": round(waited_ms, 1), "since_send_ms": round((time.perf_counter() - sent_at) * 1000, 1)})


def reply_text(raw: str | bytes | bytearray) -> str:
    """A Redis reply as text: redis-py answers bytes unless the client decodes them.

    >>> reply_text(b"v2"), reply_text("v2")
    ('v2', 'v2')
    """
    return raw.decode() if isinstance(raw, (bytes, bytearray)) else str(raw)


def is_cluster_url(url: str) -> bool:
    return url.split("://", 1)[0].lower() in CLUSTER_SCHEMES


def cluster_nodes(url: str) -> list[tuple[str, int]]:
    """The startup nodes of a cluster URL (default port 6379)."""
    netloc = url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
    nodes = []
    for part in filter(None, netloc.split(",")):
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "6379")
        nodes.append((host.strip("[]"), int(port or 6379)))
    if not nodes:
        raise ValueError(f"no host in Redis Cluster URL {url!r}")
    return nodes


def connect(url: str, socket_timeout_s: float | None = 0.5, **kwargs) -> AnyRedis:
    """A client for ``url``; the timeouts bound every command and connection attempt."""
    timeouts = {"socket_timeout": socket_timeout_s, "socket_connect_timeout": socket_timeout_s}
    if not is_cluster_url(url):
        if url.split("://", 1)[0].lower() == "redis":
            kwargs.setdefault("connection_class", TimedConnection)
        return redis.Redis.from_url(url, **timeouts, **kwargs)
    # urlsplit reads the credentials of the first "host" only; the netloc holds them once.
    auth = urlsplit(url.split(",", 1)[0])
    creds = {}
    if auth.username:
        creds["username"] = unquote(auth.username)
    if auth.password:
        creds["password"] = unquote(auth.password)
    return RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in cluster_nodes(url)],
                        ssl=url.lower().startswith("rediss+"), **creds, **timeouts, **kwargs)
