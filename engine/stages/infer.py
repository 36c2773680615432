"""The infer stage: ``EncodedBatch`` -> ``ModelOutputs``, pure.

Calling an ``Inference`` never changes anything: the model is put in eval mode once at
construction, every call runs under ``torch.inference_mode()``, and no statistics,
caches or counters are updated (river shipped bugs where predicting changed state).
The probabilities are temperature-calibrated with the temperatures in the model card,
so what leaves this stage is what gets reported.

>>> from engine.model import InputSpec, fresh_model, random_inputs
>>> spec = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=2,
...     history_numeric=1, history_categorical=1, text_len=3, text_vocab=20, schema_hash="s")
>>> infer = Inference(*fresh_model(spec, version="v0"))
>>> out = infer(random_inputs(spec, 5))
>>> tuple(out.probs.shape), tuple(out.risk.shape), out.exit_layer.tolist(), out.model_version
((5, 3), (5,), [2, 2, 2, 2, 2], 'v0')
>>> bool(torch.allclose(out.probs.sum(-1), torch.ones(5)))
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from torch import Tensor

from engine.model.card import LoadedModel, ModelCard, ModelLoadError, load_model_dir
from engine.model.decision import DecisionModel
from engine.model.inputs import ModelInputs, as_inputs, inputs_to, take_rows
from engine.model.portable import GraphRunner, load_runner, select_early_exit
from engine.model.quantize import quantize_int8
from engine.model.serving_layers import with_serving_layers
from engine.stages.decide import ScoreColumns, ScoreRow
from engine.stages.infer_arrays import CPU_CHUNK_ROWS, Runtime


@dataclass(slots=True, frozen=True)
class ModelOutputs:
    """Calibrated outputs for one batch, row i = event i."""

    probs: Tensor  # [B, 3] float, calibrated, DECISIONS order (pass, review, reject)
    risk: Tensor  # [B] float, calibrated probability of a bad outcome
    exit_layer: Tensor  # [B] int64, the layer whose heads answered (n_layers = full depth)
    model_version: str
    extra: Mapping[str, Tensor] = field(default_factory=dict)  # extra heads, activated

    def __len__(self) -> int:
        return int(self.probs.shape[0])

    @property
    def confidence(self) -> Tensor:
        """Top calibrated verdict probability per row."""
        return self.probs.max(dim=-1).values

    def score_rows(self) -> list[ScoreRow]:
        """One ``ScoreRow`` per row (the offline tools; the pipeline reads ``score_columns``)."""
        return self.score_columns().rows()

    def score_columns(self) -> ScoreColumns:
        """The same outputs as columns: what the pipeline's policy reads. (Widened to
        float64 first: NumPy has no bfloat16, and widening is exact, as ``tolist`` is.)"""
        return ScoreColumns.of(self.probs.detach().cpu().double().numpy(), self.risk.detach().cpu().double().numpy(),
                               self.exit_layer.detach().cpu().numpy())


class Inference:
    """Callable infer stage around one loaded model (fp32 or int8)."""

    def __init__(self, model: DecisionModel, card: ModelCard, *, int8: bool = False,
                 early_exit_threshold: float | None = None, device: str | torch.device = "cpu",
                 serving_layers: bool = True, graph: GraphRunner | None = None):
        model = model.eval()
        self.card = card
        self.device = torch.device(device)
        #: An exported graph (``engine.model.portable``) that runs instead of the module.
        self.graph = graph
        if graph is not None and (int8 or self.device.type != "cpu"):
            raise ValueError("an exported graph runs on the CPU as exported; int8 is chosen at export")
        if int8 and self.device.type != "cpu":
            # Dynamic int8 quantisation is a CPU kernel; on CUDA use bf16 or bitsandbytes (hf_bits).
            raise ValueError(f"int8 dynamic quantisation runs on the CPU only, not on {self.device}")
        # quantize_int8 and with_serving_layers return copies of the same DecisionModel class
        self.model: DecisionModel = cast(DecisionModel, quantize_int8(model) if int8 else model.to(self.device))
        if serving_layers and not int8 and self.device.type == "cpu":
            # A copy with cheaper attention, same arithmetic (engine.model.serving_layers).
            self.model = cast(DecisionModel, with_serving_layers(self.model))
        self.int8 = int8
        self.early_exit_threshold = (early_exit_threshold if early_exit_threshold is not None
                                     else card.early_exit_threshold)
        self._use_exit = bool(model.config.early_exit_layers) and self.early_exit_threshold is not None
        self._extra_kinds = {h.name: h.kind for h in model.config.extra_heads}

    @classmethod
    def from_loaded(cls, loaded: LoadedModel, **kwargs: Any) -> Inference:
        return cls(loaded.model, loaded.card, **kwargs)

    @classmethod
    def from_dir(cls, path: str | Path, expected_schema_hash: str | None = None, *,
                 runtime: Runtime | None = None, card: ModelCard | None = None, **kwargs: Any) -> Inference:
        """Load a model directory, served by ``runtime`` (default: the ``model.runtime``
        setting; ``auto`` serves the exported graph the card names, if any)."""
        loaded = load_model_dir(path, expected_schema_hash)
        if card is not None:  # the export checks its graph before the card that names it is written
            loaded = LoadedModel(loaded.model, card, loaded.path)
        if runtime is None:
            from engine.settings import get_settings  # local: settings are read only when no runtime is given

            runtime = get_settings().model.runtime
        graph = _graph_for(loaded, Path(path), runtime)
        return cls.from_loaded(loaded, graph=graph, **kwargs)

    @property
    def version(self) -> str:
        return self.card.version

    def __call__(self, batch: Any) -> ModelOutputs:
        inputs = as_inputs(batch)
        on_cpu = self.device.type == "cpu"
        if not on_cpu:
            inputs = inputs_to(inputs, self.device)
        t_verdict, t_risk = self.card.temperature.verdict, self.card.temperature.risk
        with torch.inference_mode():
            raw, exit_layer = (self._forward(inputs, t_verdict) if not on_cpu or inputs.batch_size <= CPU_CHUNK_ROWS
                               else self._forward_in_chunks(inputs, t_verdict))
            probs = torch.softmax(raw["verdict"].float() / t_verdict, dim=-1)
            risk = torch.sigmoid(raw["risk"].float() / t_risk)
            extra = {name: _activate(raw[name].float(), kind) for name, kind in self._extra_kinds.items()}
        if not on_cpu:  # the stages after infer (decide, guard) work on CPU tensors
            probs, risk, exit_layer = probs.cpu(), risk.cpu(), exit_layer.cpu()
            extra = {name: t.cpu() for name, t in extra.items()}
        return ModelOutputs(probs, risk, exit_layer, self.card.version, extra)

    def _forward(self, inputs: ModelInputs, t_verdict: float) -> tuple[dict[str, Tensor], Tensor]:
        if self.graph is not None:
            raw = self.graph(inputs)
            if self._use_exit and self.early_exit_threshold is not None:
                return select_early_exit(raw, self.model.config, float(self.early_exit_threshold), t_verdict)
            return raw, torch.full((inputs.batch_size,), self.model.config.n_layers, dtype=torch.long)
        if self._use_exit and self.early_exit_threshold is not None:
            return self.model.forward_early_exit(inputs, float(self.early_exit_threshold), t_verdict)
        raw = self.model(inputs)
        return raw, torch.full((inputs.batch_size,), self.model.config.n_layers, dtype=torch.long)

    def _forward_in_chunks(self, inputs: ModelInputs, t_verdict: float) -> tuple[dict[str, Tensor], Tensor]:
        """The same forward pass over rows sorted by padded length, in near-equal chunks of
        at most ``CPU_CHUNK_ROWS``; outputs back in input order. Rows never interact (each
        attends only to its own tokens), so the result is the one-call result."""
        order = _by_padded_length(inputs, self.model.config.read_text)
        ordered = take_rows(inputs, order)
        n = inputs.batch_size
        size = -(-n // -(-n // CPU_CHUNK_ROWS))  # ceil(n / number of chunks)
        parts = [self._forward(take_rows(ordered, slice(i, i + size)), t_verdict) for i in range(0, n, size)]
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(n)
        raw = {name: torch.cat([p[0][name] for p in parts])[inverse] for name in parts[0][0]}
        return raw, torch.cat([p[1] for p in parts])[inverse]


def _graph_for(loaded: LoadedModel, root: Path, runtime: Runtime) -> GraphRunner | None:
    """The exported graph ``runtime`` asks for, or None for the PyTorch module."""
    serving = loaded.card.serving
    if runtime == "torch" or (runtime == "auto" and serving is None):
        return None
    if serving is None or (runtime != "auto" and serving.format != runtime):
        raise ModelLoadError(f"runtime {runtime} asked for, but {root} holds "
                             f"{'no exported graph' if serving is None else 'a ' + serving.format + ' graph'}: "
                             f"run `tollgate model export {root} --format {runtime}` or set "
                             "TOLLGATE_MODEL__RUNTIME=auto")
    graph_file = root / serving.file
    if not graph_file.is_file():
        raise ModelLoadError(f"{graph_file} not found, though the card names it")
    return load_runner(graph_file, serving.format, loaded.model.config)


def _by_padded_length(inputs: ModelInputs, reads_text: bool = True) -> Tensor:
    """Row order by (last used text position, history length): the two things the
    backbone trims padding to, so a chunk of similar rows carries little padding
    (``engine.stages.infer_arrays.padded_length_order`` is the same on arrays; a model
    that reads no text trims only history, so text does not count there)."""
    key = inputs.history_mask.sum(dim=1).long()
    if reads_text and inputs.text_mask.shape[1]:
        positions = torch.arange(1, inputs.text_mask.shape[1] + 1)
        key = key + (inputs.text_mask.long() * positions).amax(dim=1) * (inputs.history_mask.shape[1] + 1)
    return torch.argsort(key, stable=True)


def _activate(logits: Tensor, kind: str) -> Tensor:
    if kind == "single_label":
        return torch.softmax(logits, dim=-1)
    if kind == "multi_label":
        return torch.sigmoid(logits)
    return logits
