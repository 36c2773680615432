"""The infer stage without PyTorch: an exported ONNX graph served on NumPy arrays.

``OnnxArrayInference`` is called like ``engine.stages.infer.Inference`` and returns the
same calibrated outputs (``ArrayOutputs``, NumPy arrays), but never imports PyTorch: it
reads the model card as JSON and runs ``model.onnx`` on onnxruntime. A worker serving an
exported graph (``tollgate model export DIR --format onnx``) then imports PyTorch in
neither of its processes, and that import (about 2 s of CPU on one core here) was most of
a restart and what paused the stream around a hot swap (docs/performance-worker.md;
``python ops/bench/restart.py --onnx``).

It does what ``Inference`` does around the graph, in NumPy, with the same results
(``tests/unit/test_infer_arrays.py`` holds both to each other): rows sorted by padded
length and scored in chunks of at most ``CPU_CHUNK_ROWS``, each chunk's history and text
trimmed to its last used position (``engine.model.portable.trimmed``), the early-exit
choice over the graph's full-depth outputs (``engine.model.portable.select_early_exit``),
and the card's temperatures.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from engine.model.card import ModelCard, ModelLoadError, check_schema, read_card, serves_onnx_graph
from engine.model.config import ModelConfig, output_names

if TYPE_CHECKING:
    from engine.stages.decide import ScoreColumns, ScoreRow

#: Rows per model call on the CPU. A worker batch (events plus the text-blind twins of
#: those with a memo, ~45 tokens each) has activations of several MB per layer, more than
#: a core's L2 cache; chunks of at most 64 rows, sorted so that rows of similar length
#: pad little, stay in cache (``python ops/bench/engine_infer.py``; docs/performance.md).
CPU_CHUNK_ROWS = 64

#: The encoder's seven arrays, in the graph's input order (``engine.model.inputs.TENSOR_FIELDS``).
ARRAY_FIELDS: tuple[str, ...] = ("control_numeric", "control_categorical", "history_numeric",
                                 "history_categorical", "history_mask", "text_ids", "text_mask")

Runtime = Literal["auto", "torch", "onnx", "torchscript"]
__all__ = ["ARRAY_FIELDS", "CPU_CHUNK_ROWS", "ArrayOutputs", "OnnxArrayInference", "Runtime", "as_array",
           "padded_length_order", "select_early_exit", "serves_onnx_graph", "sigmoid", "softmax", "trimmed"]


@dataclass(slots=True, frozen=True)
class ArrayOutputs:
    """A batch's calibrated outputs as NumPy arrays (``engine.stages.infer.ModelOutputs``
    without PyTorch): row i = event i. Returned by the model process and by ``OnnxArrayInference``."""

    probs: np.ndarray  # [B, 3] float32, DECISIONS order (pass, review, reject)
    risk: np.ndarray  # [B] float32
    exit_layer: np.ndarray  # [B] int64
    model_version: str
    extra: Mapping[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> ArrayOutputs:
        return cls(fields["probs"], fields["risk"], fields["exit_layer"], fields["model_version"], fields["extra"])

    def __len__(self) -> int:
        return int(self.probs.shape[0])

    def score_rows(self) -> list[ScoreRow]:
        """One ``ScoreRow`` per row, as ``ModelOutputs.score_rows`` makes them."""
        return self.score_columns().rows()

    def score_columns(self) -> ScoreColumns:
        """The same outputs as columns: what the pipeline's policy reads."""
        # local: the model process imports this module before anything else it needs
        from engine.stages.decide import ScoreColumns

        return ScoreColumns.of(self.probs, self.risk, self.exit_layer)


class OnnxArrayInference:
    """Callable infer stage (an ``ArrayBatch``, or a mapping of its seven arrays ->
    ``ArrayOutputs``) over a model directory's ONNX graph, without PyTorch."""

    def __init__(self, root: str | Path, card: ModelCard, *, threads: int = 0,
                 early_exit_threshold: float | None = None):
        if card.serving is None or card.serving.format != "onnx":
            raise ModelLoadError(f"{root} holds no ONNX graph: run `tollgate model export {root} --format onnx`")
        graph_file = Path(root) / card.serving.file
        if not graph_file.is_file():
            raise ModelLoadError(f"{graph_file} not found, though the card names it")
        # local: onnxruntime loads only where a model directory names an ONNX graph
        import onnxruntime as ort

        options = ort.SessionOptions()
        # As the PyTorch path's threads (settings.batch.torch_threads; 0 = one per core).
        options.intra_op_num_threads = threads or (os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(graph_file), options, providers=["CPUExecutionProvider"])
        self.card = card
        self.config: ModelConfig = card.architecture
        # The exporter drops inputs the graph never reads (the text of a model blind to it).
        self._inputs = [i.name for i in self.session.get_inputs()]
        self._outputs = [o.name for o in self.session.get_outputs()]
        if sorted(self._outputs) != sorted(output_names(self.config)):
            raise ModelLoadError(f"{graph_file} outputs {self._outputs}, but its card's architecture has "
                                 f"{list(output_names(self.config))}")
        self.early_exit_threshold = (early_exit_threshold if early_exit_threshold is not None
                                     else card.early_exit_threshold)
        self._use_exit = bool(self.config.early_exit_layers) and self.early_exit_threshold is not None
        self._extra_kinds = {h.name: h.kind for h in self.config.extra_heads}

    @classmethod
    def from_dir(cls, path: str | Path, expected_schema_hash: str | None = None, *,
                 card: ModelCard | None = None, **kwargs: Any) -> OnnxArrayInference:
        """Load a model directory's ONNX graph (``card``: its card, if already read); refuse
        it if its schema hash differs from ``expected_schema_hash`` (``check_schema``, as
        ``engine.model.card.load_model_dir`` does)."""
        return cls(path, check_schema(card or read_card(path), expected_schema_hash), **kwargs)

    @property
    def version(self) -> str:
        return self.card.version

    def __call__(self, batch: Any) -> ArrayOutputs:
        arrays = _arrays(batch)
        n = int(arrays["control_numeric"].shape[0])
        if n <= CPU_CHUNK_ROWS:
            raw = self._run(arrays)
        else:  # the same result as one call: rows never interact (Inference._forward_in_chunks)
            order = padded_length_order(arrays, self.config.read_text)
            size = -(-n // -(-n // CPU_CHUNK_ROWS))  # ceil(n / number of chunks)
            parts = [self._run({k: v[order[i:i + size]] for k, v in arrays.items()}) for i in range(0, n, size)]
            inverse = np.empty_like(order)
            inverse[order] = np.arange(n)
            raw = {name: np.concatenate([p[name] for p in parts])[inverse] for name in parts[0]}
        t_verdict, t_risk = self.card.temperature.verdict, self.card.temperature.risk
        if self._use_exit and self.early_exit_threshold is not None:
            raw, exit_layer = select_early_exit(raw, self.config, float(self.early_exit_threshold), t_verdict)
        else:
            exit_layer = np.full(n, self.config.n_layers, dtype=np.int64)
        probs = softmax(raw["verdict"] / np.float32(t_verdict))
        risk = sigmoid(raw["risk"] / np.float32(t_risk))
        extra = {name: _activate(raw[name], kind) for name, kind in self._extra_kinds.items()}
        return ArrayOutputs(probs, risk, exit_layer, self.card.version, extra)

    def _run(self, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        cut = trimmed(arrays, self.config)
        values = self.session.run(self._outputs, {name: cut[name] for name in self._inputs})
        return {name: np.asarray(v, dtype=np.float32) for name, v in zip(self._outputs, values)}


def as_array(value: Any) -> np.ndarray:
    """``value`` if it is a NumPy array, else a tensor's NumPy view."""
    return value if isinstance(value, np.ndarray) else value.numpy()


def _arrays(batch: Any) -> dict[str, np.ndarray]:
    """The seven arrays of an ``ArrayBatch``, a mapping of them, or tensors (as NumPy views)."""
    get = batch.__getitem__ if isinstance(batch, Mapping) else lambda name: getattr(batch, name)
    return {name: as_array(get(name)) for name in ARRAY_FIELDS}


def _used(mask: np.ndarray) -> int:
    """Positions up to the last one any row uses."""
    used = np.flatnonzero(mask.any(axis=0)) if mask.size else np.empty(0, dtype=np.int64)
    return int(used[-1]) + 1 if used.size else 0


def trimmed(arrays: Mapping[str, np.ndarray], config: ModelConfig) -> dict[str, np.ndarray]:
    """``engine.model.portable.trimmed`` on arrays: the trailing positions that are
    padding in every row cut off (at least one kept), contiguous and in the graph's dtypes."""
    history_len = arrays["history_mask"].shape[1]
    n_hist = max(1, min(_used(arrays["history_mask"]),
                        config.max_history if config.max_history is not None else history_len))
    n_text = max(1, _used(arrays["text_mask"]))
    cut = {
        "control_numeric": arrays["control_numeric"],
        "control_categorical": arrays["control_categorical"],
        "history_numeric": arrays["history_numeric"][:, :n_hist],
        "history_categorical": arrays["history_categorical"][:, :n_hist],
        "history_mask": arrays["history_mask"][:, :n_hist],
        "text_ids": arrays["text_ids"][:, :n_text],
        "text_mask": arrays["text_mask"][:, :n_text],
    }
    return {name: np.ascontiguousarray(_graph_dtype(v)) for name, v in cut.items()}


def _graph_dtype(value: np.ndarray) -> np.ndarray:
    if value.dtype == np.bool_:
        return value
    if np.issubdtype(value.dtype, np.floating):
        return value.astype(np.float32, copy=False)
    return value.astype(np.int64, copy=False)


def padded_length_order(arrays: Mapping[str, np.ndarray], reads_text: bool = True) -> np.ndarray:
    """Row order by (last used text position, history length), as
    ``engine.stages.infer._by_padded_length``: a chunk of similar rows pads little. A
    model that reads no text (``reads_text``) pads only history, so text does not count:
    ordered by it, a batch where most events carry a merchant descriptor was chunked by
    descriptor length and padded its histories (``python ops/bench/engine_profile.py``)."""
    history_mask, text_mask = arrays["history_mask"], arrays["text_mask"]
    key = history_mask.sum(axis=1).astype(np.int64)
    if reads_text and text_mask.shape[1]:
        positions = np.arange(1, text_mask.shape[1] + 1, dtype=np.int64)
        key = key + (text_mask.astype(np.int64) * positions).max(axis=1) * (history_mask.shape[1] + 1)
    return np.argsort(key, kind="stable")


def select_early_exit(raw: Mapping[str, np.ndarray], config: ModelConfig, threshold: float,
                      temperature: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``engine.model.portable.select_early_exit`` on arrays: a row takes the first exit
    layer (below the last) whose calibrated top verdict probability reaches ``threshold``;
    extra heads are NaN for rows that left early."""
    verdict, risk = raw["verdict"].copy(), raw["risk"].copy()
    exit_layer = np.full(verdict.shape[0], config.n_layers, dtype=np.int64)
    open_rows = np.ones(verdict.shape[0], dtype=bool)
    for k in sorted(config.early_exit_layers):
        if k >= config.n_layers:
            continue
        early_v, early_r = raw[f"exit{k}.verdict"], raw[f"exit{k}.risk"]
        done = open_rows & (softmax(early_v / np.float32(temperature)).max(axis=-1) >= threshold)
        verdict[done], risk[done], exit_layer[done] = early_v[done], early_r[done], k
        open_rows &= ~done
    out = {"verdict": verdict, "risk": risk}
    for spec in config.extra_heads:
        values = raw[spec.name].copy()
        values[~open_rows] = np.nan
        out[spec.name] = values
    return out, exit_layer


def softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    out: np.ndarray = (shifted / shifted.sum(axis=-1, keepdims=True)).astype(np.float32, copy=False)
    return out


def sigmoid(logits: np.ndarray) -> np.ndarray:
    # The two-sided form never overflows exp for large |logits|.
    out = np.empty_like(logits, dtype=np.float32)
    positive = logits >= 0
    out[positive] = 1.0 / (1.0 + np.exp(-logits[positive]))
    e = np.exp(logits[~positive])
    out[~positive] = e / (1.0 + e)
    return out


def _activate(logits: np.ndarray, kind: str) -> np.ndarray:
    if kind == "single_label":
        return softmax(logits)
    if kind == "multi_label":
        return sigmoid(logits)
    return np.asarray(logits)
