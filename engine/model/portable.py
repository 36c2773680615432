"""Serving an exported decision model: an ONNX graph (onnxruntime) or a TorchScript one.

``tollgate model export`` (``engine.model.export``) writes ``model.onnx`` or
``model.torchscript.pt`` into a model directory next to the safetensors weights and the
card, whose ``serving`` entry names the file, format and dtype. A runner here is what
``engine.stages.infer.Inference`` calls instead of the PyTorch module when the runtime
chosen (``TOLLGATE_MODEL__RUNTIME``, ``auto`` = what the card names) is not ``torch``.

The graph computes every head at full depth, the early-exit heads included; which layer
answers a row is chosen afterwards (``select_early_exit``), exactly as
``DecisionModel.forward_early_exit`` chooses, so the outputs agree and only the compute
of rows that would have left early is not saved.

A graph has no data-dependent trimming inside (it would bake one batch's lengths in), so
the runner trims the inputs first: history to the last position used in any row (at most
the model's ``max_history``), text to the last used token. Trimmed positions are padding
in every row: as keys they are masked and pooling skips them, so the result is the one
the PyTorch model computes. At least one position is kept, masked if unused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

import numpy as np
import torch
from torch import Tensor

from engine.model.config import ModelConfig, output_names
from engine.model.inputs import TENSOR_FIELDS, ModelInputs

ExportFormat = Literal["onnx", "torchscript"]
ExportDtype = Literal["fp32", "fp16", "int8"]
FILES: dict[str, str] = {"onnx": "model.onnx", "torchscript": "model.torchscript.pt"}
__all__ = ["FILES", "GraphRunner", "OnnxRunner", "TorchScriptRunner", "load_runner", "output_names",
           "select_early_exit", "trimmed"]


class GraphRunner(Protocol):
    """Seven input tensors in, every head's raw logits (``DecisionModel.forward``'s keys) out."""

    def __call__(self, inputs: ModelInputs) -> dict[str, Tensor]: ...


def trimmed(inputs: ModelInputs, config: ModelConfig) -> ModelInputs:
    """``inputs`` without the trailing positions that are padding in every row."""
    n_hist = max(1, min(_used(inputs.history_mask), config.max_history if config.max_history is not None
                        else inputs.history_mask.shape[1]))
    n_text = max(1, _used(inputs.text_mask))
    return ModelInputs(inputs.control_numeric, inputs.control_categorical,
                       inputs.history_numeric[:, :n_hist], inputs.history_categorical[:, :n_hist],
                       inputs.history_mask[:, :n_hist], inputs.text_ids[:, :n_text], inputs.text_mask[:, :n_text])


def _used(mask: Tensor) -> int:
    used = mask.bool().any(dim=0).nonzero()
    return int(used[-1]) + 1 if used.numel() else 0


class OnnxRunner:
    """An ONNX graph on onnxruntime's CPU provider."""

    def __init__(self, path: str | Path, config: ModelConfig, threads: int | None = None):
        # local: onnxruntime loads only when a model directory names an ONNX graph
        import onnxruntime as ort  # type: ignore[import-untyped]

        options = ort.SessionOptions()
        # The worker sizes its own thread use (settings.batch.torch_threads); follow torch's.
        options.intra_op_num_threads = threads or torch.get_num_threads()
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.config = config
        # The exporter drops inputs the graph never reads (the text of a model that is blind to it).
        self.inputs = [i.name for i in self.session.get_inputs()]
        self.outputs = [o.name for o in self.session.get_outputs()]

    def __call__(self, inputs: ModelInputs) -> dict[str, Tensor]:
        cut = trimmed(inputs, self.config)
        feed = {name: _numpy(getattr(cut, name)) for name in self.inputs}
        values = self.session.run(self.outputs, feed)
        return {name: torch.from_numpy(np.asarray(v, dtype=np.float32)) for name, v in zip(self.outputs, values)}


class TorchScriptRunner:
    """A traced TorchScript graph (``torch.jit.load``)."""

    def __init__(self, path: str | Path, config: ModelConfig):
        self.module = torch.jit.load(str(path), map_location="cpu").eval()
        self.config = config
        self.outputs = output_names(config)

    def __call__(self, inputs: ModelInputs) -> dict[str, Tensor]:
        cut = trimmed(inputs, self.config)
        with torch.inference_mode():
            values = self.module(*(getattr(cut, name) for name in TENSOR_FIELDS))
        return {name: v.float() for name, v in zip(self.outputs, values)}


def _numpy(t: Tensor) -> np.ndarray:
    if t.dtype == torch.bool:
        return t.numpy()
    if t.is_floating_point():
        return t.float().numpy()
    return t.long().numpy()


def load_runner(path: str | Path, fmt: ExportFormat, config: ModelConfig) -> GraphRunner:
    if fmt == "onnx":
        return OnnxRunner(path, config)
    if fmt == "torchscript":
        return TorchScriptRunner(path, config)
    raise ValueError(f"unknown export format {fmt!r}: use onnx or torchscript")


def select_early_exit(raw: dict[str, Tensor], config: ModelConfig, threshold: float,
                      temperature: float) -> tuple[dict[str, Tensor], Tensor]:
    """``DecisionModel.forward_early_exit``'s choice over full-depth outputs: a row takes
    the first exit layer (below the last) whose calibrated top verdict probability reaches
    ``threshold``; extra heads are NaN for rows that left early, as there."""
    n_layers = config.n_layers
    verdict, risk = raw["verdict"].clone(), raw["risk"].clone()
    exit_layer = torch.full((verdict.shape[0],), n_layers, dtype=torch.long)
    open_rows = torch.ones(verdict.shape[0], dtype=torch.bool)
    for k in sorted(config.early_exit_layers):
        if k >= n_layers:
            continue
        early_v, early_r = raw[f"exit{k}.verdict"], raw[f"exit{k}.risk"]
        conf = torch.softmax(early_v / temperature, dim=-1).max(dim=-1).values
        done = open_rows & (conf >= threshold)
        verdict[done], risk[done], exit_layer[done] = early_v[done], early_r[done], k
        open_rows &= ~done
    out = {"verdict": verdict, "risk": risk}
    for spec in config.extra_heads:
        values = raw[spec.name].clone()
        values[~open_rows] = float("nan")
        out[spec.name] = values
    return out, exit_layer
