"""The model registry: versioned model directories plus the serving pointer in Redis.

Why it looks like this:

* A model version is a directory ``<models_dir>/<version>/`` holding
  ``model.safetensors`` and ``model_card.json`` — nothing else is needed to load it,
  and directories are never rewritten once registered (a new model is a new version).
* Which version serves is one Redis string, ``<prefix>:model:serving``. Engine workers
  read it at start and subscribe to ``<prefix>:model:events``; every change is
  published there as JSON ``{version, previous, action, who, why, at}`` so running
  workers hot-swap without a restart.
* Rollback needs to know what served before, so every promotion pushes the version
  it replaced onto ``<prefix>:model:history`` (a Redis list used as a stack).
* Every promotion and rollback is appended, with who and why, to an audit log: a Redis
  stream ``<prefix>:model:audit`` for live tooling, and ``<models_dir>/audit.jsonl``
  as the durable record that survives a Redis flush.

The whole walk (register, promote, roll back, audit) is
``tests/unit/test_feedback_registry.py::test_register_promote_rollback_audit``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from redis.cluster import RedisCluster

from engine.settings import Settings
from engine.wire.redisconn import reply_text

WEIGHTS_FILE = "model.safetensors"
CARD_FILE = "model_card.json"
AUDIT_FILE = "audit.jsonl"
META_FILE = "registry.json"  # registry facts, kept out of the (strict) model card
#: Versions are path components: keep them boring so nobody can escape models_dir.
_VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def serving_key(key_prefix: str) -> str:
    """The Redis string naming the serving model version."""
    return f"{key_prefix}:model:serving"


def events_channel(key_prefix: str) -> str:
    """The pub/sub channel on which every promotion and rollback is announced."""
    return f"{key_prefix}:model:events"


class RegistryError(RuntimeError):
    """A registry operation was refused (unknown version, nothing to roll back to, ...)."""


@dataclass(slots=True, frozen=True)
class ModelEvent:
    """One change of the serving pointer, as published and as audited."""

    version: str
    previous: str | None
    action: str  # "promote" | "rollback"
    who: str
    why: str
    at: int  # wall-clock epoch milliseconds (UTC) when the pointer moved: the audit's order
    #: The event-time "now" of the cycle that asked for it (an accelerated or backfilled
    #: run), beside the wall clock; None when the caller gave none.
    event_time_ms: int | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> ModelEvent:
        d = json.loads(raw)
        event_time = d.get("event_time_ms")
        return cls(str(d["version"]), d.get("previous"), str(d["action"]), str(d["who"]),
                   str(d["why"]), int(d["at"]), None if event_time is None else int(event_time))


@dataclass(slots=True, frozen=True)
class ModelVersion:
    """A registered model directory and its card, as listed by ``ModelRegistry.list``."""

    version: str
    path: Path
    card: Mapping[str, Any]
    serving: bool

    registered_at_ms: int = 0


class ModelRegistry:
    """Versioned model directories on disk plus the serving pointer in Redis."""

    def __init__(self, settings: Settings, redis: Any, *, models_dir: Path | None = None,
                 wall_clock: Callable[[], int] = lambda: int(time.time() * 1000)):
        self.settings = settings
        self.redis = redis
        self.wall_clock = wall_clock
        self.models_dir = Path(models_dir or settings.paths.models_dir)
        prefix = settings.redis.key_prefix
        self.serving_key = serving_key(prefix)
        self.history_key = f"{prefix}:model:history"
        self.events_channel = events_channel(prefix)
        self.audit_stream = f"{prefix}:model:audit"

    # ---- versions on disk -------------------------------------------------------------

    def path_of(self, version: str) -> Path:
        _check_version(version)
        return self.models_dir / version

    def exists(self, version: str) -> bool:
        p = self.path_of(version)
        return (p / WEIGHTS_FILE).is_file() and (p / CARD_FILE).is_file()

    def card(self, version: str) -> dict[str, Any]:
        if not self.exists(version):
            raise RegistryError(f"unknown model version {version!r} in {self.models_dir}")
        return json.loads((self.path_of(version) / CARD_FILE).read_text())

    def list(self) -> list[ModelVersion]:
        """Every complete version directory, oldest registration first."""
        serving = self.serving_version()
        out: list[ModelVersion] = []
        if not self.models_dir.is_dir():
            return out
        for child in self.models_dir.iterdir():
            if child.name.startswith(".") or not child.is_dir() or not _VERSION_RE.match(child.name):
                continue
            if not ((child / WEIGHTS_FILE).is_file() and (child / CARD_FILE).is_file()):
                continue
            try:
                card = json.loads((child / CARD_FILE).read_text())
            except (OSError, ValueError):
                continue
            try:
                registered = int(json.loads((child / META_FILE).read_text())["registered_at_ms"])
            except (OSError, ValueError, KeyError):
                registered = int(card.get("created_at_ms") or 0)
            out.append(ModelVersion(child.name, child, card, child.name == serving, registered))
        out.sort(key=lambda m: (m.registered_at_ms, m.version))
        return out

    def register(self, model_dir_or_model: Any, card: Any = None, *,
                 version: str | None = None, now_ms: int | None = None) -> str:
        """Store a model as a new immutable version and return the version string.

        ``model_dir_or_model`` is either a directory holding ``model.safetensors`` (its
        ``model_card.json`` is kept, with ``card`` — a dict or ``ModelCard`` — laid over
        it) or a ``DecisionModel``, saved with ``card`` (a ``ModelCard``) through
        ``engine.model.save_model_dir``. Only the card's ``version`` is rewritten; the
        registry's own facts (weights hash, registration time) go to ``registry.json``
        so the card stays valid for ``engine.model.load_model_dir``. The directory is
        built under a temporary name and renamed, so a crash never leaves half a version.
        """
        now_ms = _now(now_ms)
        self.models_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.models_dir))
        try:
            card_dict: dict[str, Any] = {}
            overlay = _card_dict(card)
            if isinstance(model_dir_or_model, (str, os.PathLike)):
                src = Path(model_dir_or_model)
                if not (src / WEIGHTS_FILE).is_file():
                    raise RegistryError(f"{src} holds no {WEIGHTS_FILE}")
                for item in src.iterdir():
                    if item.is_file() and item.name != META_FILE:
                        shutil.copy2(item, staging / item.name)
                self._add_serving_graph(staging)
                if (staging / CARD_FILE).is_file():
                    card_dict = json.loads((staging / CARD_FILE).read_text())
                card_dict.update(overlay)
            else:
                # local: the model writer loads torch; listing and promoting need none of it
                from engine.model import save_model_dir

                if card is None:
                    raise RegistryError("registering a model object needs its ModelCard")
                save_model_dir(model_dir_or_model, card, staging)
                self._add_serving_graph(staging)
                card_dict = json.loads((staging / CARD_FILE).read_text())
            digest = _sha256(staging / WEIGHTS_FILE)
            if version is None:
                stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_ms / 1000))
                version = f"v{stamp}-{digest[:8]}"
            _check_version(version)
            target = self.models_dir / version
            if target.exists():
                raise RegistryError(f"model version {version!r} already exists; versions are immutable")
            card_dict["version"] = version
            (staging / CARD_FILE).write_text(json.dumps(card_dict, indent=2, sort_keys=True, default=str))
            meta = {"version": version, "weights_sha256": digest, "registered_at_ms": now_ms}
            (staging / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True))
            os.replace(staging, target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
        return version

    def _add_serving_graph(self, staging: Path) -> None:
        """An ONNX graph of the weights beside them, as ``settings.model.serving_graph`` says."""
        if self.settings.model.serving_graph == "onnx" and (staging / CARD_FILE).is_file():
            # local: exporting needs PyTorch; listing and promoting need none of it
            from engine.model.export import add_serving_graph

            add_serving_graph(staging)

    # ---- the serving pointer ----------------------------------------------------------

    def serving_version(self) -> str | None:
        raw = self.redis.get(self.serving_key)
        return None if raw is None else reply_text(raw)

    def serving_path(self) -> Path | None:
        v = self.serving_version()
        return None if v is None else self.path_of(v)

    def promote(self, version: str, who: str, why: str, *, now_ms: int | None = None) -> ModelEvent:
        """Point serving at ``version``; the replaced version becomes the rollback target.
        ``now_ms`` (event time) is recorded beside the wall clock, never instead of it."""
        if not self.exists(version):
            raise RegistryError(f"cannot promote {version!r}: no complete model directory")
        previous = self.serving_version()
        if previous == version:
            raise RegistryError(f"{version!r} is already serving")
        event = ModelEvent(version, previous, "promote", who, why, self.wall_clock(), now_ms)
        self._swap(event, push_previous=previous is not None)
        return event

    def rollback(self, who: str, why: str, *, now_ms: int | None = None) -> ModelEvent:
        """Return serving to the version that served before the current one."""
        current = self.serving_version()
        while True:
            raw = self.redis.lindex(self.history_key, 0)
            if raw is None:
                raise RegistryError("nothing to roll back to: no earlier serving version")
            target = reply_text(raw)
            if target != current and self.exists(target):
                break
            self.redis.lpop(self.history_key)  # a deleted or duplicate entry: skip it
        event = ModelEvent(target, current, "rollback", who, why, self.wall_clock(), now_ms)
        self._swap(event, push_previous=False)
        return event

    def _swap(self, event: ModelEvent, *, push_previous: bool) -> None:
        # Pointer, history and stream change in one MULTI/EXEC so a reader never sees
        # the pointer moved without the rollback target recorded.
        if isinstance(self.redis, RedisCluster):
            self._swap_on_cluster(event, push_previous=push_previous)
        else:
            pipe = self.redis.pipeline(transaction=True)
            pipe.set(self.serving_key, event.version)
            if event.action == "rollback":
                pipe.lpop(self.history_key)
            elif push_previous:
                pipe.lpush(self.history_key, event.previous)
            pipe.xadd(self.audit_stream, {"event": event.to_json()})
            pipe.publish(self.events_channel, event.to_json())
            pipe.execute()
        self.models_dir.mkdir(parents=True, exist_ok=True)
        with open(self.models_dir / AUDIT_FILE, "a", encoding="utf-8") as fh:
            fh.write(event.to_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def _swap_on_cluster(self, event: ModelEvent, *, push_previous: bool) -> None:
        """On a Redis Cluster the three keys live in three slots, where MULTI cannot span
        them; the rollback target is written first, so a crash part-way leaves at worst
        a spare history entry (``rollback`` skips a duplicate), never a moved pointer
        without its way back. PUBLISH is plain (cluster-wide) pub/sub: a subscriber on
        any node hears it."""
        if push_previous and event.action != "rollback":
            self.redis.lpush(self.history_key, event.previous)
        self.redis.set(self.serving_key, event.version)
        if event.action == "rollback":
            self.redis.lpop(self.history_key)
        self.redis.xadd(self.audit_stream, {"event": event.to_json()})
        self.redis.publish(self.events_channel, event.to_json())

    def audit(self) -> list[ModelEvent]:
        """Every promotion and rollback, oldest first (from the durable JSONL file)."""
        path = self.models_dir / AUDIT_FILE
        if not path.is_file():
            return []
        return [ModelEvent.from_json(line) for line in path.read_text().splitlines() if line.strip()]

    def subscribe(self, timeout_s: float = 1.0) -> Iterator[ModelEvent]:
        """Yield pointer changes as they are published, until ``timeout_s`` passes
        without one (for tools and tests; engine workers run their own listener)."""
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        pubsub.subscribe(self.events_channel)
        try:
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                msg = pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
                if msg and msg.get("type") == "message":
                    yield ModelEvent.from_json(msg["data"])
                    deadline = time.monotonic() + timeout_s
        finally:
            pubsub.close()


def _check_version(version: str) -> None:
    if not isinstance(version, str) or not _VERSION_RE.match(version):
        raise RegistryError(f"invalid model version {version!r}: letters, digits, . _ - only")


def _card_dict(card: Any) -> dict[str, Any]:
    if card is None:
        return {}
    if hasattr(card, "model_dump"):
        return json.loads(card.model_dump_json())
    return dict(card)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _now(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else int(now_ms)
