"""Model hot swap: watch the registry's serving pointer, load and warm in the background,
swap between batches.

Why it looks like this:

* The serving pointer is one Redis string, ``<prefix>:model:serving``, and every change
  is published on ``<prefix>:model:events`` (``engine.model.registry``). Pub/sub is fast but
  lossy (a message sent while we reconnect is gone), so the watcher also re-reads the
  key every ``check_every_s``: pub/sub gives seconds, the periodic check gives
  certainty.
* Loading and warming a model takes long enough to hurt p99, so it happens on a
  background thread, and a new model process imports PyTorch and loads ``LOADER_NICE``
  nicer (``engine.worker.infer_process``), warmed at
  the batch sizes the stream uses, so that its first real batch is not its first large
  one. The old model process is stopped without waiting on the loop (its stdin is
  closed; it is reaped on a thread of its own: ``engine.worker.infer_process._stop``).
  The hot loop only calls ``apply_ready`` between batches, which is one reference swap (``DecisionPipeline.swap``): no batch is ever half old model,
  half new, and no batch waits for a load.
* The loader *thread* runs at the worker's own priority on purpose: it shares the GIL
  with the loop, and a niced thread that is preempted while it holds the GIL stalls the
  loop until the kernel runs it again (priority inversion): niced, it put gaps in the
  verdict stream while a model loaded (``python ops/bench/hotswap.py``, gaps ending before
  the swap; docs/performance-worker.md). Only the separate model process is niced.
* A version that fails to load or to decide synthetic events is *refused*: it is
  logged, counted, remembered (so it is not retried every few seconds), and the old
  model keeps serving. A later pointer change to another version is tried afresh.
* Warmup of a candidate runs the new inference on synthetic events encoded with empty
  context, so it never touches Redis or the live pipeline's state.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.wire.redisconn import reply_text
from engine.worker.warmup import synthetic_events

log = logging.getLogger("tollgate.hotswap")

#: How much nicer the loader thread (and a hot-swapped model process while it loads) runs.
LOADER_NICE = 10

#: Given a model directory, build the pipeline components it replaces
#: (at least ``inference`` and ``model_version``), ready for ``DecisionPipeline.swap``.
ComponentLoader = Callable[[Path], dict[str, Any]]


@dataclass(slots=True, frozen=True)
class ReadyModel:
    version: str
    changes: dict[str, Any]
    warmup_s: float


class ModelWatcher:
    """Background watcher of the serving pointer; the loop calls ``apply_ready``."""

    def __init__(self, redis_client: Any, key_prefix: str, models_dir: Path, load: ComponentLoader,
                 *, current_version: str, encoder: Any = None, empty_context: Any = None,
                 warmup_sizes: tuple[int, ...] = (1, 16), check_every_s: float = 5.0,
                 metrics: Any | None = None):
        self.redis = redis_client
        # Here, not at module level: engine.model imports PyTorch, and the worker must start
        # its model process before it imports PyTorch itself (engine.assemble.load_model_components).
        from engine.model.registry import events_channel, serving_key  # local: see above

        self.serving_key = serving_key(key_prefix)
        self.events_channel = events_channel(key_prefix)
        self.models_dir = Path(models_dir)
        self._load = load
        self._encoder = encoder
        self._empty_context = empty_context
        self._warmup_sizes = warmup_sizes
        self.check_every_s = check_every_s
        self.metrics = metrics
        self.current_version = current_version
        self.refused: set[str] = set()
        self._ready: ReadyModel | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> ModelWatcher:
        for target, name in ((self._poll_loop, "tollgate-hotswap"), (self._listen_loop, "tollgate-hotswap-sub")):
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    # -- called by the worker between batches -------------------------------------------

    def apply_ready(self, pipeline: Any, metrics: Any | None = None) -> str | None:
        """Swap in a loaded, warmed model if one is waiting; return its version."""
        if self._ready is None:
            return None
        with self._lock:
            ready, self._ready = self._ready, None
        if ready is None or ready.version == self.current_version:
            return None
        previous = self.current_version
        pipeline.swap(**ready.changes)
        self.current_version = ready.version
        if metrics is not None:
            metrics.model_swaps.labels("swapped").inc()
            metrics.set_versions(pipeline.model_version, pipeline.rules_version)
        log.info("model swapped", extra={"version": ready.version, "previous": previous,
                                         "warmup_s": round(ready.warmup_s, 3)})
        return ready.version

    # -- one check (also used directly by tests) ------------------------------------------

    def check_once(self, metrics: Any | None = None) -> str | None:
        """Read the pointer; if it names a new, unrefused version, load and warm it now.

        Returns the version made ready, or None.
        """
        raw = self.redis.get(self.serving_key)
        if raw is None:
            return None
        version = reply_text(raw)
        pending = self._ready.version if self._ready is not None else None
        if version in (self.current_version, pending) or version in self.refused:
            return None
        started = time.perf_counter()
        try:
            changes = self._load(self.models_dir / version)
            changes.setdefault("model_version", version)
            self._warm(changes)
        except Exception as exc:  # noqa: BLE001 - any failure means: keep the old model
            self.refused.add(version)
            if metrics is not None:
                metrics.model_swaps.labels("refused").inc()
            log.error("model refused; the old one keeps serving",
                      extra={"version": version, "serving": self.current_version,
                             "error_class": type(exc).__name__, "error": str(exc)})
            return None
        with self._lock:
            self._ready = ReadyModel(version, changes, time.perf_counter() - started)
        log.info("model loaded and warmed", extra={"version": version})
        return version

    def _warm(self, changes: dict[str, Any]) -> None:
        inference = changes.get("inference")
        encoder = changes.get("encoder", self._encoder)
        if inference is None or encoder is None or self._empty_context is None:
            return
        for size in self._warmup_sizes:
            events = synthetic_events(size)
            outputs = inference(encoder.encode(events, [self._empty_context(e) for e in events]))
            probs = getattr(outputs, "probs", None)
            if probs is None or len(probs) != size:
                raise RuntimeError(f"candidate model returned no probabilities for {size} events")

    # -- threads ------------------------------------------------------------------------

    def _poll_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.check_once(self.metrics)
            except Exception as exc:  # noqa: BLE001 - Redis away: try again next round
                log.warning("serving pointer check failed", extra={"error": str(exc)})
            self._wake.wait(self.check_every_s)
            self._wake.clear()

    def _listen_loop(self) -> None:
        while not self._stop.is_set():
            try:
                pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self.events_channel)
                while not self._stop.is_set():
                    msg = pubsub.get_message(timeout=1.0)
                    if msg is not None:
                        self._wake.set()  # the poll thread does the (single-threaded) work
                pubsub.close()
            except Exception as exc:  # noqa: BLE001 - reconnect after a pause
                log.warning("pub/sub connection lost", extra={"error": str(exc)})
                self._stop.wait(1.0)
