"""Hot reload: watch a rules directory and swap in each good new rule set.

Polling (file names, sizes and mtimes, once a second by default) rather than inotify:
it needs no extra dependency, works on every filesystem including bind mounts and
network shares, and a second of delay is well inside "within seconds".

On a change (that has held still for ``settle_s``, so a multi-file edit is one version):

1. read every file into memory (``read_snapshot``); if a file vanishes halfway,
   nothing is swapped and the next poll tries again;
2. if the content hash equals the running version (a ``touch``), nothing happens;
3. validate and compile the whole set (``build_ruleset``); on any problem the new set
   is refused whole, the problems are logged with file, line and rule, the failure
   counter goes up and the **last good set keeps running**; the same broken files
   are not re-reported until they change again;
4. otherwise the new ``RuleSet`` replaces the reference in one assignment. Readers
   call ``current()`` once per batch, so a batch never mixes two versions.

Redis-backed lists are refreshed on the same thread, each on its own interval.

``on_change(ruleset)`` is called after each swap — the worker uses it to hand the new
guard and policy to the pipeline (see ``engine.stages.guard.follow_rules``).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.rules.lists import RedisClients, refresh_due
from engine.rules.loader import RuleSetError, build_ruleset, content_version, read_snapshot, rule_files
from engine.rules.rule_metrics import RuleMetrics, default_metrics
from engine.rules.ruleset import RuleSet

log = logging.getLogger("tollgate.rules")

Fingerprint = tuple[tuple[str, int, int], ...]


@dataclass(slots=True, frozen=True)
class ReloadResult:
    changed: bool  # a new version is now active
    version: str  # the active version after this poll
    error: str | None = None  # why a changed set was refused


class RuleWatcher:
    """Owns the active ``RuleSet`` of one directory. Thread-safe ``current()``."""

    def __init__(self, directory: str | os.PathLike[str], *, interval_s: float = 1.0,
                 metrics: RuleMetrics | None = None, redis_clients: Callable[[str | None], Any] | None = None,
                 ctx_names: frozenset[str] | None = None,
                 on_change: Callable[[RuleSet], None] | None = None, settle_s: float = 0.0,
                 clock: Callable[[], float] = time.monotonic):
        self.directory = Path(directory)
        #: Seconds, for settling (tests inject one instead of sleeping through settle_s).
        self._clock = clock
        self.interval_s = interval_s
        #: A change must hold still this long before it is loaded, so a multi-file edit
        #: (a `git pull`, an editor saving several files) lands as one version, not two.
        self.settle_s = settle_s
        self._pending: tuple[Fingerprint | None, float] = (None, 0.0)
        self.metrics = metrics or default_metrics()
        self.redis_clients = redis_clients or RedisClients()
        self.ctx_names = ctx_names
        self.on_change = on_change
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._poll_lock = threading.Lock()
        #: Notified after every background poll (``wait_until``).
        self._polled = threading.Condition()
        # The first load has no last good set to fall back on: a bad set fails loudly here.
        self._fingerprint = self._scan()
        self._refused: Fingerprint | None = None
        self._current = build_ruleset(read_snapshot(self.directory), directory=str(self.directory),
                                      ctx_names=ctx_names, redis_clients=self.redis_clients)
        self.metrics.reloaded(self._current.version)
        self.metrics.lists(self._current.lists)
        log.info("rules: loaded %s from %s (%d enforced, %d shadow)", self._current.version,
                 self.directory, len(self._current.enforce), len(self._current.shadow))

    def current(self) -> RuleSet:
        """The active rule set; call once per batch and use it for the whole batch."""
        return self._current

    @property
    def version(self) -> str:
        return self._current.version

    def _scan(self) -> Fingerprint:
        out = []
        try:
            for path in rule_files(self.directory):
                try:
                    st = path.stat()
                except FileNotFoundError:
                    continue
                out.append((path.relative_to(self.directory).as_posix(), st.st_mtime_ns, st.st_size))
        except RuleSetError:  # the directory itself is gone: an empty fingerprint, refused below
            return ()
        return tuple(out)

    def poll_once(self) -> ReloadResult:
        """Check for changes once (the background thread calls this every ``interval_s``)."""
        with self._poll_lock:
            if any(lst.due(time.monotonic()) for lst in self._current.lists.values()):
                refresh_due(self._current.lists, self.redis_clients)
                self.metrics.lists(self._current.lists)
            fingerprint = self._scan()
            if fingerprint == self._fingerprint:
                # e.g. a vanished file restored with its old mtime: the disk is the running set
                self._clear_error(fingerprint)
                return ReloadResult(False, self._current.version, None)
            if fingerprint == self._refused:
                return ReloadResult(False, self._current.version, None)
            if self.settle_s > 0:
                now = self._clock()
                if fingerprint != self._pending[0]:
                    self._pending = (fingerprint, now)
                    return ReloadResult(False, self._current.version, None)
                if now - self._pending[1] < self.settle_s:
                    return ReloadResult(False, self._current.version, None)
            try:
                snapshot = read_snapshot(self.directory)
            except RuleSetError as exc:  # a file vanished mid-read: try again next poll
                return self._refuse(str(exc), None)
            if not snapshot:
                return self._refuse(f"{self.directory}: no rule files found; keeping the last good set",
                                    fingerprint)
            if content_version(snapshot) == self._current.version:
                # a touch, or a broken edit reverted to the running content
                self._clear_error(fingerprint)
                return ReloadResult(False, self._current.version, None)
            try:
                new = build_ruleset(snapshot, directory=str(self.directory), ctx_names=self.ctx_names,
                                    redis_clients=self.redis_clients, previous=self._current)
            except RuleSetError as exc:
                return self._refuse(str(exc), fingerprint)
            except Exception as exc:  # noqa: BLE001 - a reload must never take the worker down
                log.exception("rules: unexpected error while loading %s", self.directory)
                return self._refuse(f"internal error while loading rules: {type(exc).__name__}: {exc}", fingerprint)
            old = self._current
            self._current = new
            self._fingerprint, self._refused, self.last_error = fingerprint, None, None
            self.metrics.reloaded(new.version)
            self.metrics.lists(new.lists)
            log.info("rules: swapped %s -> %s (%d enforced, %d shadow)", old.version, new.version,
                     len(new.enforce), len(new.shadow))
        if self.on_change is not None:
            try:
                self.on_change(new)
            except Exception:  # noqa: BLE001
                log.exception("rules: on_change callback failed for %s", new.version)
        return ReloadResult(True, new.version, None)

    def _clear_error(self, fingerprint: Fingerprint) -> None:
        """The files are the running set again: forget the refusal and say the rules are ok."""
        self._fingerprint, self._refused = fingerprint, None
        if self.last_error is not None:
            self.last_error = None
            self.metrics.recovered()
            log.info("rules: the refused change was undone; %s is running and matches the files",
                     self._current.version)

    def _refuse(self, message: str, fingerprint: Fingerprint | None) -> ReloadResult:
        if fingerprint is not None:
            self._refused = fingerprint
        self.last_error = message
        self.metrics.refused()
        log.error("rules: change refused, still running %s:\n%s", self._current.version, message)
        return ReloadResult(False, self._current.version, message)

    # -- background thread -----------------------------------------------------------
    def start(self) -> RuleWatcher:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="tollgate-rules-watcher", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def wait_until(self, done: Callable[[], bool], timeout: float) -> bool:
        """Block until ``done()`` is true, checked now and after each background poll, or
        ``timeout`` seconds pass; return ``done()``. For a tool (or a test) that edits the
        files and must know the watcher has acted on them, without sleeping in a loop."""
        with self._polled:
            return self._polled.wait_for(done, timeout)

    def __enter__(self) -> RuleWatcher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.poll_once()
            except Exception:  # noqa: BLE001 - keep watching whatever happens
                log.exception("rules: watcher poll failed")
            with self._polled:
                self._polled.notify_all()
