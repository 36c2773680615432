"""The composition root of an engine worker: every collaborator is built here, from
settings, and handed to the ``Worker``; nothing below builds its own dependencies.

``tollgate run`` (``engine.interfaces.commands.run``) parses its options into a
``WorkerConfig`` and calls ``run``. In order, ``run``:

1. builds the pipeline (``build_worker_pipeline``: the model served at start, the rules,
   the detector, Redis context), wraps its feature store in the Redis hold
   (``engine.worker.redis_hold``) and, unless pinned, follows the rules directory;
2. builds the re-send filter (``engine.worker.dedupe``), metrics, the health state and
   its HTTP server, and the model watcher that hot-swaps on promotion
   (``engine.worker.hotswap``);
3. builds the Kafka clients (``build_worker``): the consumer (``engine.stages.consume``),
   the transactional emitter (``engine.stages.emit``) and the committer around it
   (``engine.worker.commit``), and the worker itself;
4. runs the worker until SIGTERM/SIGINT under the stall watchdog
   (``engine.worker.watchdog``), then stops the servers and watchers. A fatal Kafka
   error or a failed start ends the process at once (``hard_exit``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.assemble import build_pipeline, load_model_components
from engine.features.redis_store import RedisFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.observe.health import HealthServer, HealthState
from engine.observe.metrics import EngineMetrics
from engine.pipeline import DecisionPipeline
from engine.rules.watch import RuleWatcher
from engine.settings import Settings
from engine.stages.consume import EventConsumer, FatalKafkaError
from engine.stages.decide import Policy
from engine.stages.emit import TransactionalEmitter
from engine.stages.guard import Guard, follow_rules
from engine.wire.codec import Codec
from engine.wire.redisconn import connect
from engine.worker.commit import BatchCommitter
from engine.worker.dedupe import ReSendFilter
from engine.worker.hotswap import LOADER_NICE, ModelWatcher
from engine.worker.infer_process import discard_prestarted
from engine.worker.loop import Worker, WorkerOptions
from engine.worker.redis_hold import HoldingStore, RedisHold
from engine.worker.watchdog import EXIT_FATAL_KAFKA, ExitDeadline, StallWatchdog, hard_exit

log = logging.getLogger("tollgate.run")

#: Builds the worker's pipeline from settings and an optional model directory or version.
PipelineFactory = Callable[..., DecisionPipeline]


def build_worker_pipeline(settings: Settings, *, model: str | None = None,
                          detector: bool = True) -> DecisionPipeline:
    """The worker's pipeline: ``engine.assemble.build_pipeline`` with live Redis context.
    ``detector=False`` builds it without text screening, so no sentence encoder loads
    (what ``ops/bench/engine.py`` compares the detector's cost against)."""
    return build_pipeline(settings, model=model, context=RedisFeatureStore(settings=settings),
                          model_process=settings.batch, detector=detector)


def follow_rule_changes(settings: Settings, pipeline: DecisionPipeline) -> RuleWatcher:
    """Hot-reload the rules directory into ``pipeline`` (between batches); returns the watcher."""
    base = Policy.from_settings(settings.policy)

    def swap(guard: Guard, policy: Mapping[str, Any]) -> None:
        pipeline.swap(guard=guard, policy=base.with_overrides(dict(policy)))

    return follow_rules(settings.paths.rules_dir, swap)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """What ``tollgate run`` chooses beyond settings."""

    worker_id: str
    group_id: str | None = None
    port: int | None = None  # health/metrics port; None: settings; 0: any
    model: str | None = None  # model directory or version; None: the serving one
    hot_swap: bool = True
    hot_swap_check_s: float = 5.0
    follow_rules: bool = True
    pipeline_factory: PipelineFactory = build_worker_pipeline


def build_worker(settings: Settings, pipeline: DecisionPipeline, options: WorkerOptions, *,
                 metrics: EngineMetrics, health: HealthState, hotswap: ModelWatcher | None = None,
                 exit_deadline: ExitDeadline | None = None, resends: ReSendFilter | None = None,
                 hold: RedisHold | None = None) -> Worker:
    """The worker with its Kafka clients: consumer, transactional emitter, committer."""
    codec = Codec(settings)
    emitter = TransactionalEmitter(settings, options.worker_id, encode_verdicts=codec.encode_verdicts,
                                   encode_dead_letter=codec.encode_dead_letter)
    consumer = EventConsumer(settings, group_id=options.group_id,
                             instance_id=options.worker_id if settings.worker.static_membership else None)
    return Worker(settings, pipeline, options, consumer=consumer, committer=BatchCommitter(emitter, metrics),
                  codec=codec, metrics=metrics, health=health, hotswap=hotswap, exit_deadline=exit_deadline,
                  resends=resends, hold=hold)


def limit_blas_threads(threads: int) -> None:
    """Cap the BLAS libraries NumPy loaded at ``threads`` for the rest of this process
    (0: leave the library's default). Process-wide, as ``settings.batch.blas_threads`` means."""
    if threads > 0:
        # local: threadpoolctl scans the loaded libraries; only a worker that caps them pays it
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads, user_api="blas")


def run(settings: Settings, config: WorkerConfig, *, process_start_s: float = 0.0, imports_s: float = 0.0) -> None:
    """Build everything, run one worker until it is asked to stop, then tear down.

    Never returns after a failure: a fatal Kafka error (fenced by a newer instance with
    this id, or a librdkafka call overran its bound) exits with ``EXIT_FATAL_KAFKA``, any
    other failure with 1; ``process_start_s`` and ``imports_s`` are logged as start-up phases
    (``ops/bench/restart.py`` prints them)."""
    t_settings = time.perf_counter()
    limit_blas_threads(settings.batch.blas_threads)
    client = connect(settings.redis.url, settings.redis.socket_timeout_s)
    t_load = time.perf_counter()
    imports_s += t_load - t_settings  # the worker's own imports, settings, the Redis client
    pipeline = config.pipeline_factory(settings, model=config.model)  # spawns the model process first
    discard_prestarted()  # `tollgate run` prestarted one; a pipeline without a model process left it unused
    load_s = time.perf_counter() - t_load
    t_wiring = time.perf_counter()
    # One hold budget per event, shared by the re-send check and enrich (engine.worker.redis_hold).
    hold = RedisHold(settings.worker.redis_hold_s, active=False)  # the worker turns it on after warm-up
    pipeline.swap(store=HoldingStore(pipeline.components.store, hold))
    rules_watcher = follow_rule_changes(settings, pipeline) if config.follow_rules else None
    resends = (ReSendFilter(client, settings.redis.key_prefix, settings.worker.dedupe_horizon_s)
               if settings.worker.dedupe_horizon_s else None)
    metrics = EngineMetrics()
    health = HealthState(stall_after_s=settings.worker.stall_after_s)
    port = settings.http.worker_port if config.port is None else config.port
    server = HealthServer(health, metrics.render, settings.http.host, port).start()
    watcher = None
    if config.hot_swap:
        encoder = pipeline.components.encoder
        watcher = ModelWatcher(client, settings.redis.key_prefix, settings.paths.models_dir,
                               lambda path: load_model_components(path, encoder, model_process=settings.batch,
                                                                  load_nice=LOADER_NICE),
                               warmup_sizes=tuple(sorted({1, 16, max(1, settings.batch.max_events // 2),
                                                          settings.batch.max_events})),
                               current_version=pipeline.model_version, encoder=encoder,
                               empty_context=ContextSnapshot.empty,
                               check_every_s=config.hot_swap_check_s,
                               metrics=metrics).start()
    log.info("starting worker", extra={"worker_id": config.worker_id, "health_port": server.port,
                                       "pid": os.getpid()})
    worker = build_worker(settings, pipeline, WorkerOptions(worker_id=config.worker_id, group_id=config.group_id),
                          metrics=metrics, health=health, hotswap=watcher, exit_deadline=ExitDeadline(),
                          resends=resends, hold=hold)
    worker.install_signal_handlers()
    worker.note_startup("model_load_s", load_s)
    worker.note_startup("process_start_s", process_start_s)
    worker.note_startup("imports_s", imports_s)
    # rule watcher, health server, model watcher, the Kafka clients (ops/bench/restart.py)
    worker.note_startup("wiring_s", time.perf_counter() - t_wiring)
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
