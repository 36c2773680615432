"""``tollgate run``: start one engine worker (consume → … → emit, exactly once).

The worker id must be stable across restarts of the same worker (a pod name, a
systemd instance name): it becomes the transactional id, and a restarted worker
with the same id fences its predecessor and aborts whatever it left open.

The model served at start is ``--model`` if given, else the registry's serving pointer
(``<prefix>:model:serving``), else the newest model directory (``engine.assemble``).
Afterwards the worker follows the serving pointer (``engine.hotswap``).
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
from typing import Any, Callable

import typer

from engine.settings import Settings, get_settings

log = logging.getLogger("tollgate.run")


def build_worker_pipeline(settings: Settings, *, model: str | None = None) -> Any:
    """The worker's pipeline: ``engine.assemble.build_pipeline`` with live Redis context."""
    from engine.assemble import build_pipeline
    from engine.features.redis_store import RedisFeatureStore

    return build_pipeline(settings, model=model, context=RedisFeatureStore(settings=settings),
                          model_process=settings.batch)


def follow_rule_changes(settings: Settings, pipeline: Any) -> Any:
    """Hot-reload the rules directory into ``pipeline`` (between batches); returns the watcher."""
    from engine.decide import Policy
    from engine.guard import follow_rules

    base = Policy.from_settings(settings.policy)
    return follow_rules(settings.paths.rules_dir,
                        lambda guard, policy: pipeline.swap(guard=guard, policy=base.with_overrides(dict(policy))))


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
        pipeline: str = typer.Option("engine.commands.run:build_worker_pipeline", "--pipeline",
                                     help="module:function building the DecisionPipeline."),
        log_level: str = typer.Option("INFO", "--log-level"),
    ) -> None:
        """Run one engine worker until SIGTERM: tx.events → verdicts on tx.verdicts, exactly once."""
        import time

        started_s = _seconds_since_process_start()  # the interpreter and the CLI's imports
        from engine.redisconn import connect

        from engine.assemble import load_model_components
        from engine.consume import FatalKafkaError
        from engine.features import ContextSnapshot
        from engine.health import HealthServer, HealthState
        from engine.hotswap import LOADER_NICE, ModelWatcher
        from engine.metrics import EngineMetrics, configure_json_logging
        from engine.dedupe import ReSendFilter
        from engine.redis_hold import HoldingStore, RedisHold
        from engine.watchdog import EXIT_FATAL_KAFKA, ExitDeadline, StallWatchdog, hard_exit
        from engine.worker import Worker, WorkerOptions

        configure_json_logging(log_level)
        settings = get_settings()
        wid = worker_id or socket.gethostname()
        client = connect(settings.redis.url, settings.redis.socket_timeout_s)
        t_load = time.perf_counter()
        pipe = _load_factory(pipeline)(settings, model=model)  # spawns the model process first
        load_s = time.perf_counter() - t_load
        if settings.batch.torch_threads:
            import torch

            torch.set_num_threads(settings.batch.torch_threads)
        # One hold budget per event, shared by the re-send check and enrich (engine.redis_hold).
        hold = RedisHold(settings.worker.redis_hold_s, active=False)  # the worker turns it on after warm-up
        pipe.swap(store=HoldingStore(pipe.components.store, hold))
        resends = (ReSendFilter(client, settings.redis.key_prefix, settings.worker.dedupe_horizon_s)
                   if settings.worker.dedupe_horizon_s else None)
        rules_watcher = follow_rule_changes(settings, pipe) if follow_rules else None
        metrics = EngineMetrics()
        health = HealthState(stall_after_s=settings.worker.stall_after_s)
        http_port = settings.http.worker_port if port is None else port
        server = HealthServer(health, metrics.render, settings.http.host, http_port).start()
        watcher = None
        if hot_swap:
            encoder = pipe.components.encoder
            watcher = ModelWatcher(client, settings.redis.key_prefix, settings.paths.models_dir,
                                   lambda path: load_model_components(path, encoder, model_process=settings.batch,
                                                                      load_nice=LOADER_NICE),
                                   warmup_sizes=tuple(sorted({1, 16, max(1, settings.batch.max_events // 2),
                                                              settings.batch.max_events})),
                                   current_version=pipe.model_version, encoder=encoder,
                                   empty_context=ContextSnapshot.empty,
                                   check_every_s=hot_swap_check_s,
                                   metrics=metrics).start()
        log.info("starting worker", extra={"worker_id": wid, "health_port": server.port, "pid": os.getpid()})
        worker = Worker(settings, pipe, WorkerOptions(worker_id=wid, group_id=group),
                        metrics=metrics, health=health, hotswap=watcher, exit_deadline=ExitDeadline(),
                        resends=resends, hold=hold)
        worker.install_signal_handlers()
        worker.note_startup("model_load_s", load_s)
        worker.note_startup("process_start_s", started_s)
        # Restarts a worker that is stuck anywhere: any supervisor restarts an exited process.
        stall_watchdog = StallWatchdog(health, settings.worker.stall_after_s).start() \
            if settings.worker.exit_when_stalled else None
        try:
            worker.run()
        except FatalKafkaError as exc:
            # Fenced by a newer instance with our worker id, or a librdkafka call overran
            # its bound: exit non-zero; the supervisor restarts us and init_transactions
            # cleans up. os._exit: a wedged librdkafka call would block interpreter exit.
            log.error("fatal Kafka error, exiting", extra={"error": str(exc), "exit_code": EXIT_FATAL_KAFKA})
            hard_exit(EXIT_FATAL_KAFKA)
        except Exception:  # noqa: BLE001 - a failed start or a bug: exit, never linger
            # Interpreter shutdown would wait for the worker's threads and librdkafka's
            # destructors, and a process that neither works nor exits is never restarted.
            log.exception("worker failed, exiting", extra={"exit_code": 1})
            hard_exit(1)
        finally:
            if stall_watchdog is not None:
                stall_watchdog.stop()
            server.stop()
            if rules_watcher is not None:
                rules_watcher.stop()


def _seconds_since_process_start() -> float:
    """How long this process has run (Linux /proc), for the start-up phase log."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        started = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]) / ticks
        return float(open("/proc/uptime").read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return 0.0
