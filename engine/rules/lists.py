"""Named lists (blocklists, allowlists) that rules test membership in.

A rule reads ``event.device_id in lists.blocked_devices``. The compiled condition
holds the ``NamedList`` object itself and reads ``.values`` (a frozenset) at each
evaluation, so a Redis-backed list can be refreshed in the background by swapping
that one reference — no lock on the hot path, and never a network call per event.

If Redis cannot be read, a list keeps the values it last had (also across a rule
reload, through ``previous``) and is marked ``stale``; a list that was never read
starts empty and says so in the log and metrics. A blocklist outage therefore
degrades to "the last known blocklist", never to a crash.

>>> n = NamedList("blocked_devices", frozenset({"d1"}))
>>> "d1" in n.values, n.source
(True, 'yaml')
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from engine.settings import get_settings
from engine.wire.redisconn import connect

log = logging.getLogger("tollgate.rules")

#: Refuse absurd Redis sets rather than stall a reload reading millions of members.
MAX_REDIS_LIST_SIZE = 1_000_000


class NamedList:
    __slots__ = ("name", "values", "source", "key", "url", "refresh_s", "loaded_at", "stale", "error")

    def __init__(self, name: str, values: frozenset[str] = frozenset(), source: str = "yaml",
                 key: str | None = None, url: str | None = None, refresh_s: float = 10.0):
        self.name, self.values, self.source = name, values, source
        self.key, self.url, self.refresh_s = key, url, refresh_s
        self.loaded_at = time.monotonic() if source == "yaml" else 0.0
        self.stale = False
        self.error: str | None = None

    def __repr__(self) -> str:
        return f"NamedList({self.name!r}, {len(self.values)} values, source={self.source!r})"

    def refresh(self, client_for: Callable[[str | None], Any]) -> bool:
        """Re-read a Redis list; True when it was read. Never raises."""
        if self.source != "redis":
            return True
        try:
            client = client_for(self.url)
            size = client.scard(self.key)
            if size > MAX_REDIS_LIST_SIZE:
                raise ValueError(f"set has {size} members (limit {MAX_REDIS_LIST_SIZE})")
            members = client.smembers(self.key)
        except Exception as exc:  # noqa: BLE001 - any Redis/network failure keeps the last values
            self.stale = True
            self.loaded_at = time.monotonic()  # retry after refresh_s, not on every poll
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("rules: list %s (redis key %s) not refreshed, keeping %d values: %s",
                        self.name, self.key, len(self.values), self.error)
            return False
        self.values = frozenset(m.decode("utf-8", "replace") if isinstance(m, bytes) else str(m) for m in members)
        self.loaded_at, self.stale, self.error = time.monotonic(), False, None
        return True

    def due(self, now: float) -> bool:
        return self.source == "redis" and now - self.loaded_at >= self.refresh_s


class RedisClients:
    """One client per Redis URL, created lazily (``None`` → the engine's default URL)."""

    def __init__(self, default_url: str | None = None, factory: Callable[[str], Any] | None = None):
        self.default_url = default_url
        self._factory = factory
        self._clients: dict[str, Any] = {}

    def __call__(self, url: str | None) -> Any:
        url = url or self.default_url
        if url is None:
            url = get_settings().redis.url
        client = self._clients.get(url)
        if client is None:
            if self._factory is not None:
                client = self._factory(url)
            else:
                client = connect(url, socket_timeout_s=0.5)
            self._clients[url] = client
        return client


def refresh_due(lists: Mapping[str, NamedList], clients: Callable[[str | None], Any],
                now: float | None = None) -> int:
    """Refresh every Redis list whose interval has passed; returns how many were read."""
    now = time.monotonic() if now is None else now
    return sum(1 for lst in lists.values() if lst.due(now) and lst.refresh(clients))
