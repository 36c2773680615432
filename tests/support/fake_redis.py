"""In-memory stand-ins for the few Redis calls the model registry and the label store use.

For unit tests only; integration tests use the real server.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import Any


class FakeRedis:
    """The few Redis calls the registry and the label store use, in memory.

    Unit tests only; integration tests use the real server.
    """

    def __init__(self) -> None:
        self.kv: dict[str, Any] = {}
        self.published: list[tuple[str, str]] = []

    def get(self, key: str) -> Any:
        v = self.kv.get(key)
        return v.encode() if isinstance(v, str) else v

    def set(self, key: str, value: Any) -> bool:
        self.kv[key] = value
        return True

    def lindex(self, key: str, i: int) -> Any:
        lst = self.kv.get(key, [])
        return lst[i].encode() if -len(lst) <= i < len(lst) else None

    def lpush(self, key: str, value: str) -> int:
        self.kv.setdefault(key, []).insert(0, value)
        return len(self.kv[key])

    def lpop(self, key: str) -> Any:
        lst = self.kv.get(key, [])
        return lst.pop(0).encode() if lst else None

    def xadd(self, key: str, fields: Mapping[str, Any]) -> str:
        self.kv.setdefault(key, []).append(dict(fields))
        return f"{len(self.kv[key])}-0"

    def publish(self, channel: str, message: str) -> int:
        self.published.append((channel, message))
        return 0

    def keys(self, pattern: str = "*") -> list[bytes]:
        return [k.encode() for k in self.kv if fnmatch.fnmatch(k, pattern)]

    def pipeline(self, transaction: bool = True) -> _FakePipeline:
        return _FakePipeline(self)


class _FakePipeline:
    def __init__(self, r: FakeRedis) -> None:
        self.r, self.ops = r, []

    def __getattr__(self, name: str):
        def queue(*args: Any, **kwargs: Any) -> _FakePipeline:
            self.ops.append((name, args, kwargs))
            return self
        return queue

    def execute(self) -> list[Any]:
        return [getattr(self.r, n)(*a, **k) for n, a, k in self.ops]
