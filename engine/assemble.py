"""Build a ``DecisionPipeline`` from settings: which model, which rules, which context.

Every entry point (``tollgate run``, ``serve``, ``score``, ``engine.interfaces.api.load_model``,
the quickstart) assembles its pipeline here, so they cannot drift apart: the same
model directory, the same rule set, the same policy (settings, overridden by the rule
set's ``policy:`` section) and the same detector give the same verdicts.

Which model: an explicit directory; else the registry's serving version (Redis key
``<prefix>:model:serving``); else the newest model directory under
``settings.paths.models_dir``. Which context: ``"redis"`` (the stream's live state,
read only unless ``record=True``: an interface must never change what the stream
decides), ``"memory"`` (a private in-process state that starts empty, for notebooks and
file replays), or any ``FeatureStore`` (``tollgate run`` passes a recording one).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from engine.features.memory import MemoryFeatureStore
from engine.features.redis_store import RedisFeatureStore
from engine.features.snapshot import ContextSnapshot
from engine.features.spec import IDLE_STATE_TTL_MS
from engine.pipeline import Components, DecisionPipeline
from engine.settings import BatchSettings, Settings
from engine.stages.decide import Policy
from engine.stages.detect import InjectionDetector
from engine.stages.encode import ArrayEncoder, FieldIsolatedEncoder
from engine.stages.guard import Guard
from engine.wire.redisconn import connect
from engine.worker.infer_process import ProcessInference, SplitInference, spawn_model_process

log = logging.getLogger("tollgate.assemble")

ContextSource = Literal["memory", "redis"]
CARD_FILE = "model_card.json"


class ModelNotFound(FileNotFoundError):
    """No model to load; the message says how to get one."""


def find_model_dir(settings: Settings, model: str | Path | None = None) -> Path:
    """Resolve ``model`` (a directory, a version name, or None) to a model directory."""
    models_dir = Path(settings.paths.models_dir)
    if model is not None:
        path = Path(model)
        if (path / CARD_FILE).is_file():
            return path
        if (models_dir / str(model) / CARD_FILE).is_file():
            return models_dir / str(model)
        raise ModelNotFound(f"{model}: not a model directory (no {CARD_FILE}) nor a version under {models_dir}")
    serving = _serving_version(settings)
    if serving is not None and (models_dir / serving / CARD_FILE).is_file():
        return models_dir / serving
    candidates = sorted((p.parent for p in models_dir.glob(f"*/{CARD_FILE}")), key=lambda p: p.stat().st_mtime)
    if not candidates:
        raise ModelNotFound(f"no model in {models_dir}: train one with `tollgate train` "
                            "(or run `tollgate quickstart`, which trains a small one)")
    return candidates[-1]


def _serving_version(settings: Settings) -> str | None:
    """The registry's serving pointer, or None when Redis is unreachable or unset."""
    # local: engine.model imports PyTorch; the worker's start path spawns its model process first
    from engine.model.registry import serving_key

    try:
        client = connect(settings.redis.url, settings.redis.socket_timeout_s)
        raw = client.get(serving_key(settings.redis.key_prefix))
        client.close()
    except Exception as exc:  # noqa: BLE001 - no registry reachable: fall back to the newest directory
        log.debug("registry not reachable: %s", exc)
        return None
    return None if raw is None else (raw.decode() if isinstance(raw, bytes) else str(raw))


def make_store(settings: Settings, context: ContextSource | Any = "memory", *, record: bool = False) -> Any:
    """The feature store for ``context``; with ``"redis"``, ``record`` says whether scoring
    writes into the stream's state (history, decision log) or only reads it."""
    if not isinstance(context, str):
        return context
    if context == "memory":
        # Forget customers and terminals idle for 31 days of event time, as the stream's
        # Redis keys expire: a long-lived notebook or `serve --memory` stays bounded.
        return MemoryFeatureStore(forget_idle_after_ms=IDLE_STATE_TTL_MS)
    if context == "redis":
        return RedisFeatureStore(settings=settings, read_only=not record)
    raise ValueError(f"context must be 'memory', 'redis' or a FeatureStore, got {context!r}")


def load_model_components(model_dir: Path, encoder: Any | None = None, *,
                          model_process: BatchSettings | None = None, load_nice: int = 0) -> dict[str, Any]:
    """The pieces a model directory determines (also the hot-swap loader).
    ``model_process``: when given and its ``infer_process`` is on, the forward pass runs in
    a child process with its ``torch_threads`` (``engine.worker.infer_process``; the worker
    passes ``settings.batch``): every batch when ``process_min_rows`` is 1 (this process
    then encodes NumPy arrays and never imports PyTorch), else batches of at least that
    many rows, smaller ones here. ``load_nice``: the child loads at lower priority (a hot
    swap: ``engine.worker.hotswap``)."""
    if model_process is not None and model_process.infer_process:
        # Before this process imports anything heavy: the child's PyTorch import and load run meanwhile.
        child = spawn_model_process(model_dir, torch_threads=model_process.torch_threads, load_nice=load_nice)
        remote_kwargs = {"torch_threads": model_process.torch_threads, "load_nice": load_nice, "spawned": child,
                         "spare_after_swap": model_process.spare_model_process}
        if not scores_in_process(model_process):
            array_encoder = encoder if isinstance(encoder, ArrayEncoder) else ArrayEncoder(encoder)
            remote = ProcessInference(model_dir, expected_schema_hash=array_encoder.schema.schema_hash(),
                                      **remote_kwargs)
            return {"encoder": array_encoder, "inference": remote, "model_version": remote.version}
    # local: PyTorch, only once the model process (if any) is spawned (tests/integration/test_worker_start_imports.py)
    from engine.stages.infer import Inference

    tensor_encoder = encoder.inner if isinstance(encoder, ArrayEncoder) else encoder or FieldIsolatedEncoder()
    inference: Any = Inference.from_dir(model_dir, expected_schema_hash=tensor_encoder.schema.schema_hash())
    if model_process is not None and model_process.infer_process:
        remote = ProcessInference(model_dir, expected_schema_hash=tensor_encoder.schema.schema_hash(),
                                  **remote_kwargs)
        inference = SplitInference(inference, remote, model_process.process_min_rows)
    return {"encoder": tensor_encoder, "inference": inference, "model_version": inference.version}


def scores_in_process(batch: BatchSettings | None) -> bool:
    """Whether a worker with these settings runs forward passes itself (and so imports
    PyTorch): without a model process, or with one that takes only large batches."""
    return batch is None or not batch.infer_process or batch.process_min_rows > 1


def load_guard(settings: Settings, rules_dir: str | Path | None = None) -> Any:
    """The hard-rule guard over ``rules_dir`` (default ``settings.paths.rules_dir``)."""
    return Guard.from_dir(Path(rules_dir or settings.paths.rules_dir))


def build_pipeline(settings: Settings, *, model: str | Path | None = None, rules: str | Path | None = None,
                   context: ContextSource | Any = "memory", detector: Any | bool = True,
                   guard: Any | None = None, model_process: BatchSettings | None = None,
                   record: bool = False) -> DecisionPipeline:
    """The pipeline every interface uses. ``detector=False`` turns text screening off
    (tests only: a verdict without it is not the stream's verdict). ``model_process``:
    large batches in a model process as those settings say (``load_model_components``;
    same model, same outputs, another process; the worker passes ``settings.batch``).
    ``record``: with ``context="redis"``, write what is scored into the stream's state."""
    model_dir = find_model_dir(settings, model)
    parts = load_model_components(model_dir, model_process=model_process)
    guard = guard if guard is not None else load_guard(settings, rules)
    if detector is True:
        detector = InjectionDetector.default()
    base_policy = Policy.from_settings(settings.policy)
    policy = base_policy.with_overrides(dict(getattr(guard, "policy", None) or {}))
    components = Components(
        store=make_store(settings, context, record=record),
        encoder=parts["encoder"],
        inference=parts["inference"],
        detector=detector or None,
        guard=guard,
        policy=policy,
        model_version=parts["model_version"],
        empty_context=ContextSnapshot.empty,
    )
    log.info("pipeline assembled", extra={"model_dir": str(model_dir), "model_version": parts["model_version"],
                                          "rules_version": getattr(guard, "version", "none")})
    return DecisionPipeline(components, base_policy=base_policy)
