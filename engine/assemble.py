"""Build a ``DecisionPipeline`` from settings: which model, which rules, which context.

Every entry point (``tollgate run``, ``serve``, ``score``, ``engine.interfaces.api.load_model``,
the quickstart) assembles its pipeline here, so they cannot drift apart: the same
model directory, the same rule set, the same policy (settings, overridden by the rule
set's ``policy:`` section) and the same detector give the same verdicts.

Which model (``engine.model.locate.find_model_dir``): an explicit directory; else the
registry's serving version (Redis key ``<prefix>:model:serving``); else the newest model
directory under ``settings.paths.models_dir``. Which context: ``"redis"`` (the stream's live state,
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
from engine.model.card import read_card
from engine.model.locate import find_model_dir
from engine.pipeline import Components, DecisionPipeline
from engine.settings import BatchSettings, Settings
from engine.stages.decide import Policy
from engine.stages.detect import InjectionDetector
from engine.stages.encode import ArrayEncoder, FeatureSchema, FieldIsolatedEncoder
from engine.stages.guard import Guard
from engine.stages.infer_arrays import OnnxArrayInference
from engine.stages.infer_load import load_inference
from engine.worker.infer_process import ProcessInference, SplitInference, spawn_model_process

log = logging.getLogger("tollgate.assemble")

ContextSource = Literal["memory", "redis"]


def make_store(settings: Settings, context: ContextSource | Any = "memory", *, record: bool = False) -> Any:
    """The feature store for ``context``; with ``"redis"``, ``record`` says whether scoring
    writes into the stream's state (history, decision log) or only reads it."""
    if not isinstance(context, str):
        return context
    if context == "memory":
        # Forget customers and terminals idle for 31 days of event time, as the stream's
        # Redis keys expire: a long-lived notebook or `serve --memory` stays bounded.
        return MemoryFeatureStore(forget_idle_after_ms=IDLE_STATE_TTL_MS,
                                  history_order=settings.features.history_order)
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
    swap: ``engine.worker.hotswap``).

    A directory whose card names an ONNX graph that ``settings.model.runtime`` serves
    (``auto`` or ``onnx``) is served on NumPy arrays by onnxruntime, here and in the
    child (``engine.stages.infer_arrays``): PyTorch is then imported by neither."""
    tensor_encoder = encoder.inner if isinstance(encoder, ArrayEncoder) else encoder or FieldIsolatedEncoder()
    schema_hash = tensor_encoder.schema.schema_hash()
    # A model blind to user text scores an event's text-free twins as the event itself
    # (Components.model_reads_text): they are not scored again.
    reads_text = {"model_reads_text": read_card(model_dir).architecture.read_text}
    if model_process is None or not model_process.infer_process:
        local = load_inference(model_dir, schema_hash, threads=model_process.torch_threads if model_process else 0)
        return {"encoder": _encoder_for(local, tensor_encoder), "inference": local, "model_version": local.version,
                **reads_text}
    # Before this process imports anything heavy: the child's load (and PyTorch import, if
    # any) runs while this process loads its own copy; ProcessInference waits for the child.
    child = spawn_model_process(model_dir, torch_threads=model_process.torch_threads, load_nice=load_nice)
    small_batches_here = scores_in_process(model_process)
    local = load_inference(model_dir, schema_hash, threads=model_process.torch_threads) if small_batches_here else None
    remote = ProcessInference(model_dir, expected_schema_hash=schema_hash, torch_threads=model_process.torch_threads,
                              load_nice=load_nice, spawned=child, spare_after_swap=model_process.spare_model_process)
    if local is None:
        return {"encoder": ArrayEncoder(tensor_encoder), "inference": remote, "model_version": remote.version,
                **reads_text}
    inference = SplitInference(local, remote, model_process.process_min_rows)
    return {"encoder": _encoder_for(local, tensor_encoder), "inference": inference, "model_version": inference.version,
            **reads_text}


def _encoder_for(local: Any, tensor_encoder: Any) -> Any:
    """The graph on NumPy arrays reads the encoder's arrays; PyTorch its tensors."""
    return ArrayEncoder(tensor_encoder) if isinstance(local, OnnxArrayInference) else tensor_encoder


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
    # The encoder's schema and the store's history windows follow the same settings.
    encoder = FieldIsolatedEncoder(FeatureSchema.default(settings.features.history_order))
    parts = load_model_components(model_dir, encoder, model_process=model_process)
    guard = guard if guard is not None else load_guard(settings, rules)
    if detector is True:
        detector = InjectionDetector.default(sentence_encoder=settings.detector.sentence_encoder,
                                             encoder_runtime=settings.detector.encoder_runtime,
                                             descriptor_head=settings.detector.descriptor_head)
        detector.network.load_encoder_in_background()
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
        model_reads_text=parts["model_reads_text"],
    )
    log.info("pipeline assembled", extra={"model_dir": str(model_dir), "model_version": parts["model_version"],
                                          "rules_version": getattr(guard, "version", "none")})
    return DecisionPipeline(components, base_policy=base_policy)
