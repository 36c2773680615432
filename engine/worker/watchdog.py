"""Bounds on the waits that librdkafka does not bound, and the exits that follow.

Why: some transactional librdkafka calls block past the timeout they are given
(``send_offsets_to_transaction`` with the group coordinator away: librdkafka issues
#5456 and #5511), and a call in progress holds the producer's transactional API, so
nothing else — not even ``abort_transaction`` — can be called on it meanwhile. A
worker that only waited would hang for good after a broker crash. So:

* ``BoundedCaller`` runs each such call on a daemon thread and waits at most a
  bound. When the bound runs out the call is abandoned (it cannot be cancelled)
  and ``CallOverran`` — a ``FatalKafkaError`` — is raised: the producer's state is
  unknown, so the worker exits non-zero and its supervisor restarts it; the restarted
  worker's ``init_transactions`` fences this one and aborts what it left open, so no
  verdict is lost or doubled (``docs/operations.md``).
* ``ExitDeadline`` ends the process with ``os._exit`` when an orderly stop (SIGTERM)
  or the clean-up after a failure takes longer than stated — a stuck librdkafka call
  also blocks ``close`` and interpreter shutdown.
* ``StallWatchdog`` ends the process when the worker has made no progress (no
  transaction committed, no idle poll) for ``stall_after_s``: the last resort for a
  wait nobody thought of.

>>> caller = BoundedCaller(bound_s=1.0)
>>> caller("add", lambda: 1 + 1)
2
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from collections.abc import Callable
from typing import Any, Protocol

from engine.stages.consume import FatalKafkaError

log = logging.getLogger("tollgate.watchdog")

#: Exit codes a supervisor (and its logs) can tell apart. 3: a fatal Kafka error (fenced,
#: or a call that overran its bound); 4: no progress for ``stall_after_s``; 5: an orderly
#: stop that did not finish within ``stop_timeout_s``.
EXIT_FATAL_KAFKA = 3
EXIT_STALLED = 4
EXIT_STOP_OVERRAN = 5


class CallOverran(FatalKafkaError):
    """A librdkafka call did not return within its bound; the client is unusable."""


def hard_exit(code: int) -> None:
    """Leave now: flush what was logged, skip clean-up that could block on a stuck call."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - nothing more can be done at this point
            pass
    os._exit(code)


class BoundedCaller:
    """``caller(what, fn)``: ``fn()`` on a daemon thread, waited for at most ``bound_s``.

    One long-lived thread runs the calls, one at a time: it costs less CPU per call than
    a thread started per call (``python ops/bench/watchdog_calls.py``; most of either is
    the hand-off between the threads, which is why the emitter makes few calls per
    batch). A call that overran keeps that thread (it may never return) and every
    later call is refused, so the thread is never needed again; it is a daemon and never
    keeps the process alive. The emitter is its only user, and its calls never overlap."""

    def __init__(self, bound_s: float):
        if bound_s <= 0:
            raise ValueError("bound_s must be positive")
        self.bound_s = bound_s
        self._overran: str | None = None
        self._calls: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="tollgate-kafka-calls", daemon=True).start()

    def __call__(self, what: str, fn: Callable[[], Any]) -> Any:
        if self._overran is not None:  # the client is wedged in an earlier call
            raise CallOverran(f"{what}: not called, {self._overran} is still running")
        call = _Call(fn)
        self._calls.put(call)
        if not call.done.wait(self.bound_s):
            self._overran = what
            log.error("librdkafka call overran its bound; the worker must exit",
                      extra={"call": what, "bound_s": self.bound_s})
            raise CallOverran(f"{what}: no answer within {self.bound_s:g} s (librdkafka #5456/#5511)")
        if call.error is not None:
            raise call.error
        return call.value

    def _serve(self) -> None:
        while True:
            self._calls.get().run()


class _Call:
    """One call handed to ``BoundedCaller``'s thread, and how it ended."""

    __slots__ = ("fn", "done", "value", "error")

    def __init__(self, fn: Callable[[], Any]):
        self.fn = fn
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self.fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            self.error = exc
        finally:
            self.done.set()


class ExitDeadline:
    """Arm once; the process exits with ``code`` ``seconds`` later unless it ended first.

    ``exit`` is injected so unit tests can watch it fire."""

    def __init__(self, exit: Callable[[int], None] = hard_exit):  # noqa: A002 - the natural name
        self._exit = exit
        self._armed = threading.Event()
        self._lock = threading.Lock()
        self.fired = threading.Event()

    @property
    def armed(self) -> bool:
        return self._armed.is_set()

    def arm(self, seconds: float, code: int, why: str) -> None:
        with self._lock:
            if self._armed.is_set():
                return
            self._armed.set()
        threading.Thread(target=self._fire_after, args=(seconds, code, why),
                         name="tollgate-exit-deadline", daemon=True).start()

    def _fire_after(self, seconds: float, code: int, why: str) -> None:
        if threading.Event().wait(seconds):  # a plain bounded wait; nothing ever sets it
            return
        log.error("exit deadline passed; exiting now", extra={"why": why, "after_s": seconds, "exit_code": code})
        self.fired.set()
        self._exit(code)


class ProgressSource(Protocol):
    def stalled_for(self) -> float: ...


class StallWatchdog:
    """Exits with ``EXIT_STALLED`` once ``source.stalled_for()`` reaches ``after_s``.

    Checked every ``every_s`` on a daemon thread; ``stop()`` ends it (orderly shutdown
    has its own deadline)."""

    def __init__(self, source: ProgressSource, after_s: float, *, every_s: float = 1.0,
                 exit: Callable[[int], None] = hard_exit):  # noqa: A002
        self._source = source
        self.after_s = after_s
        self._every_s = every_s
        self._exit = exit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="tollgate-stall-watchdog", daemon=True)

    def start(self) -> StallWatchdog:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self._every_s):
            stalled = self._source.stalled_for()
            if stalled >= self.after_s:
                log.error("worker made no progress; exiting so the supervisor restarts it",
                          extra={"stalled_s": round(stalled, 1), "exit_code": EXIT_STALLED})
                self._exit(EXIT_STALLED)
                return
