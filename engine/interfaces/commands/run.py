"""``tollgate run``: start one engine worker (consume → … → emit, exactly once).

The worker id must be stable across restarts of the same worker (a pod name, a
systemd instance name): it becomes the transactional id, and a restarted worker
with the same id fences its predecessor and aborts whatever it left open.

The model served at start is ``--model`` if given, else the registry's serving pointer
(``<prefix>:model:serving``), else the newest model directory (``engine.assemble``).
Afterwards the worker follows the serving pointer (``engine.worker.hotswap``).

This command only parses options; ``engine.worker.main`` builds and runs the worker.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

import typer

from engine.settings import get_settings


def _load_factory(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr or "build_worker_pipeline")


def register(app: typer.Typer) -> None:
    @app.command("run")
    def run(
        worker_id: str = typer.Option(None, "--worker-id", envvar="TOLLGATE_WORKER_ID",
                                      help="Stable id of this worker (default: the host name)."),
        group: str = typer.Option(None, "--group", help="Consumer group (default: settings)."),
        port: int = typer.Option(None, "--port", help="Health/metrics port (default: settings; 0 = any)."),
        model: str = typer.Option(None, "--model", help="Model directory or version (default: serving)."),
        hot_swap: bool = typer.Option(True, "--hot-swap/--no-hot-swap", help="Follow the registry pointer."),
        hot_swap_check_s: float = typer.Option(5.0, "--hot-swap-check-s", envvar="TOLLGATE_HOTSWAP_CHECK_S",
                                               help="Seconds between serving-pointer checks (pub/sub is instant)."),
        follow_rules: bool = typer.Option(True, "--follow-rules/--pinned-rules",
                                          help="Reload the rules directory when it changes."),
        pipeline: str = typer.Option("engine.worker.main:build_worker_pipeline", "--pipeline",
                                     help="module:function building the DecisionPipeline."),
        log_level: str = typer.Option("INFO", "--log-level"),
    ) -> None:
        """Run one engine worker until SIGTERM: tx.events → verdicts on tx.verdicts, exactly once."""
        started_s = _seconds_since_process_start()  # the interpreter and the CLI's imports
        t_imports = time.perf_counter()
        settings = get_settings()
        if settings.batch.infer_process:
            # local: neither imports PyTorch; the child does, from now on, unless the model is an ONNX graph
            from engine.model.locate import serving_runtime
            from engine.worker.infer_process import prestart_model_process

            # Its PyTorch import (only onnxruntime's, for an ONNX graph) overlaps everything below.
            prestart_model_process(serving_runtime(settings, model))
        # local: the worker's modules (torch, librdkafka, the model) load only for this command
        from engine.observe.metrics import configure_json_logging
        from engine.worker.main import WorkerConfig
        from engine.worker.main import run as run_worker

        imports_s = time.perf_counter() - t_imports
        configure_json_logging(log_level)
        config = WorkerConfig(worker_id=worker_id or socket.gethostname(), group_id=group, port=port, model=model,
                              hot_swap=hot_swap, hot_swap_check_s=hot_swap_check_s, follow_rules=follow_rules,
                              pipeline_factory=_load_factory(pipeline))
        run_worker(settings, config, process_start_s=started_s, imports_s=imports_s)
        # Stopped cleanly: every verdict is committed and the group is left. Tearing the
        # interpreter down (PyTorch, librdkafka's destructors) only delays the supervisor's
        # restart (python ops/bench/stop_time.py).
        from engine.worker.watchdog import hard_exit  # local: with the worker's modules above

        logging.shutdown()
        hard_exit(0)


def _seconds_since_process_start() -> float:
    """How long this process has run (Linux /proc), for the start-up phase log."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        started = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / ticks
        return float(open("/proc/uptime").read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return 0.0
