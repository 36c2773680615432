"""A small HTTP server for the worker: ``/healthz``, ``/readyz`` and ``/metrics``.

Why: an orchestrator needs two different answers. ``/healthz`` (liveness) says the
loop is still turning — it fails when the loop has not completed an iteration for
``stall_after_s``, so a wedged worker is restarted. ``/readyz`` (readiness) is true
only after warmup pushed synthetic events through the whole path and the worker
joined its group, so traffic and dashboards never count a cold worker. Both turn 503
when the worker is *stalled*: no progress (a committed transaction, or a poll that
found nothing to do) for ``stall_after_s`` — a loop that turns while every
transaction fails, or one blocked in a call, is as dead as one that stopped. ``/metrics``
serves the worker's own Prometheus registry.

The server runs on a daemon thread from the standard library: it must never compete
with the hot loop for anything heavier than the GIL.

>>> state = HealthState()
>>> state.readiness()
(False, 'warming up')
>>> state.mark_ready(); state.readiness()
(True, 'ready')
>>> now = [0.0]; s = HealthState(stall_after_s=10, clock=lambda: now[0]); s.mark_ready()
>>> now[0] = 11.0; s.beat(); s.liveness(), s.readiness()
((False, 'no progress for 11.0s'), (False, 'no progress for 11.0s'))
>>> s.progress(); s.liveness()
(True, 'ok')
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class HealthState:
    """Shared between the loop (writer) and the HTTP thread (reader)."""

    def __init__(self, stall_after_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.stall_after_s = stall_after_s
        self._ready = False
        self._stopping = False
        self._last_beat = clock()
        self._last_progress = clock()

    def beat(self) -> None:
        """The loop calls this every iteration."""
        self._last_beat = self._clock()

    def progress(self) -> None:
        """The loop calls this when a transaction committed, or when it had nothing to do."""
        self._last_progress = self._clock()

    def stalled_for(self) -> float:
        """Seconds without progress, once ready (warm-up is not a stall); 0 otherwise."""
        if not self._ready or self._stopping:
            return 0.0
        return self._clock() - self._last_progress

    def mark_ready(self) -> None:
        self._ready = True
        self._last_progress = self._clock()

    def mark_stopping(self) -> None:
        self._stopping = True

    def liveness(self) -> tuple[bool, str]:
        idle = self._clock() - self._last_beat
        if idle > self.stall_after_s:
            return False, f"loop stalled for {idle:.1f}s"
        stalled = self.stalled_for()
        if stalled > self.stall_after_s:
            return False, f"no progress for {stalled:.1f}s"
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        if self._stopping:
            return False, "stopping"
        if not self._ready:
            return False, "warming up"
        stalled = self.stalled_for()
        if stalled > self.stall_after_s:
            return False, f"no progress for {stalled:.1f}s"
        return True, "ready"


class HealthServer:
    """Serves the three endpoints on ``host:port`` (port 0 picks a free one)."""

    def __init__(self, state: HealthState, render_metrics: Callable[[], bytes],
                 host: str = "127.0.0.1", port: int = 0):
        handler = _make_handler(state, render_metrics)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        # stop() waits for serve_forever's next poll: 0.5 s by default, on every worker stop.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="tollgate-health", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> HealthServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _make_handler(state: HealthState, render_metrics: Callable[[], bytes]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, render_metrics(), "text/plain; version=0.0.4; charset=utf-8")
            elif path in ("/healthz", "/readyz"):
                ok, why = state.liveness() if path == "/healthz" else state.readiness()
                self._send(200 if ok else 503, (why + "\n").encode(), "text/plain; charset=utf-8")
            else:
                self._send(404, b"not found\n", "text/plain; charset=utf-8")

        def _send(self, code: int, body: bytes, content_type: str) -> None:
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # probes every few seconds would drown the JSON logs

    return Handler
