"""``tollgate model export``: a model directory whose graph loads in ONNX or TorchScript.

The exported directory holds the source's ``model.safetensors`` (fine-tune, the gate and
the PyTorch runtime still read it), the graph file (``model.onnx`` or
``model.torchscript.pt``) and a card whose ``serving`` entry names the file, the format,
the dtype and the agreement measured at export. ``engine.stages.infer.Inference`` serves
the graph when the runtime setting (``TOLLGATE_MODEL__RUNTIME``) is ``auto`` or names the
format, so the worker, the Python API, HTTP and the batch CLI all serve it alike.

dtypes:

* ``fp32``: the same arithmetic as PyTorch;
* ``fp16``: weights rounded to half precision, computed in fp32 (onnxruntime's CPU
  provider has few fp16 kernels, and a half-precision softmax over logits costs accuracy
  for no speed on a CPU). The ONNX file stores them as fp16 (half the size) with casts
  where they are read; the TorchScript archive stores the rounded values as fp32;
* ``int8``: dynamic quantisation of the linear layers' weights (onnxruntime's
  ``quantize_dynamic``; PyTorch's ``quantize_dynamic`` for TorchScript).

A blend's trees (``engine.model.trees``) keep their exact thresholds in every dtype: in
ONNX they are one ``ai.onnx.ml`` ``TreeEnsembleRegressor`` node, whose thresholds are
attributes; in TorchScript they are buffers, which neither rounding touches.

Before anything is written the export is scored side by side with the PyTorch model on
random inputs of the model's shapes; it is refused when any deciding output (verdict
probabilities, risk, the early-exit choice) differs by more than ``TOLERANCE[dtype]``.
``ops/bench/model.py --runtimes`` measures speed; ``tests/unit/model/test_export_agreement.py``
holds the agreement.
"""

from __future__ import annotations

import copy
import logging
import shutil
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import Tensor, nn

from engine.model.card import (
    LoadedModel,
    ModelCard,
    ServingExport,
    load_model_dir,
    save_model_dir,
    write_card,
)
from engine.model.inputs import TENSOR_FIELDS, ModelInputs, random_inputs
from engine.model.portable import (
    FILES,
    ExportDtype,
    ExportFormat,
    output_names,
    trimmed,
)
from engine.model.serving_layers import with_serving_layers

log = logging.getLogger("tollgate.export")

#: Largest allowed difference to the PyTorch fp32 model, in probability units, of the
#: calibrated verdict probabilities and the risk score, over rows that leave at the same
#: layer. int8 moves outputs by a few thousandths on the default model.
TOLERANCE: dict[str, float] = {"fp32": 1e-4, "fp16": 5e-3, "int8": 0.05}
#: Largest allowed share of rows whose early-exit layer differs (a row whose confidence
#: sits on the threshold may go either way once the weights are rounded).
EXIT_TOLERANCE: dict[str, float] = {"fp32": 0.002, "fp16": 0.01, "int8": 0.1}


class ExportError(RuntimeError):
    """The exported graph does not agree with the PyTorch model within the tolerance."""


@dataclass(slots=True, frozen=True)
class ExportResult:
    path: Path
    card: ModelCard
    max_abs_diff: dict[str, float]


class ExportGraph(nn.Module):
    """``DecisionModel.forward`` over seven positional tensors, outputs as a tuple in
    ``output_names`` order, without data-dependent trimming (the runner trims)."""

    def __init__(self, model: nn.Module, serving_layers: bool = True):
        super().__init__()
        served = with_serving_layers(model) if serving_layers else copy.deepcopy(model)
        served.backbone.embed.for_export = True
        self.model = served.eval()
        self.names = output_names(model.config)

    def forward(self, control_numeric: Tensor, control_categorical: Tensor, history_numeric: Tensor,
                history_categorical: Tensor, history_mask: Tensor, text_ids: Tensor,
                text_mask: Tensor) -> tuple[Tensor, ...]:
        out = self.model(ModelInputs(control_numeric, control_categorical, history_numeric, history_categorical,
                                     history_mask, text_ids, text_mask))
        return tuple(out[name].float() for name in self.names)


def export_model_dir(source: str | Path, out: str | Path, fmt: ExportFormat, dtype: ExportDtype,
                     samples: int = 512, seed: int = 1) -> ExportResult:
    """Export ``source`` into ``out`` (a new model directory); refused when it does not agree."""
    if fmt not in FILES:
        raise ValueError(f"--format must be onnx or torchscript, not {fmt!r}")
    if dtype not in TOLERANCE:
        raise ValueError(f"--dtype must be fp32, fp16 or int8, not {dtype!r}")
    loaded = load_model_dir(source)
    if loaded.model.config.backbone != "field_transformer":
        raise ValueError("only the default field-transformer backbone exports; a Hugging Face backbone "
                         "serves through PyTorch")
    out = Path(out)
    staging = Path(tempfile.mkdtemp(prefix="export-", dir=out.parent if out.parent.exists() else None))
    try:
        graph_file = staging / FILES[fmt]
        (_export_onnx if fmt == "onnx" else _export_torchscript)(loaded, graph_file, dtype)
        version = f"{loaded.card.version}-{fmt}-{dtype}"
        serving = ServingExport(format=fmt, dtype=dtype, file=FILES[fmt], tolerance=TOLERANCE[dtype])
        card = loaded.card.model_copy(update={"version": version, "parent_version": loaded.card.version})
        save_model_dir(loaded.model, card, staging)
        card = card.model_copy(update={"serving": serving})
        diffs = agreement(loaded, staging, card, samples, seed)
        refuse_disagreement(diffs, fmt, dtype)
        card = card.model_copy(update={"serving": serving.model_copy(update={"max_abs_diff": diffs})})
        write_card(card, staging)
        if out.exists():
            raise FileExistsError(f"{out} exists; choose another --out")
        staging.replace(out)
        return ExportResult(out, card, diffs)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def add_serving_graph(model_dir: str | Path, samples: int = 256, seed: int = 1) -> ServingExport | None:
    """Write an ONNX fp32 graph of a model directory's own weights beside them
    (``model.onnx`` and the card's ``serving`` entry; the version is unchanged: the same
    weights in the same arithmetic, checked to ``TOLERANCE["fp32"]``), so that a runtime of
    ``auto`` serves it on NumPy arrays without PyTorch (``engine.stages.infer_arrays``:
    restarts, hot swaps and saturation measured in docs/performance-worker.md).

    Returns the entry, or None with the directory left as it was where no graph can be
    made (a Hugging Face backbone, an export that disagrees): PyTorch then serves it as
    before. A directory that already names a graph keeps it. The registry calls this for
    every version it stores (``settings.model.serving_graph``)."""
    root = Path(model_dir)
    loaded = load_model_dir(root)
    if loaded.card.serving is not None:
        return loaded.card.serving
    if loaded.model.config.backbone != "field_transformer":
        return None
    graph_file = root / FILES["onnx"]
    try:
        _export_onnx(loaded, graph_file, "fp32")
        serving = ServingExport(format="onnx", dtype="fp32", file=FILES["onnx"], tolerance=TOLERANCE["fp32"])
        diffs = agreement(loaded, root, loaded.card.model_copy(update={"serving": serving}), samples, seed)
        refuse_disagreement(diffs, "onnx", "fp32")
    except Exception as exc:  # noqa: BLE001 - no graph is a slower start, never a lost model
        graph_file.unlink(missing_ok=True)
        graph_file.with_suffix(".fp32.onnx").unlink(missing_ok=True)
        log.warning("no ONNX graph for this model; PyTorch serves it",
                    extra={"model_dir": str(root), "error_class": type(exc).__name__, "error": str(exc)})
        return None
    serving = serving.model_copy(update={"max_abs_diff": diffs})
    write_card(loaded.card.model_copy(update={"serving": serving}), root)
    return serving


def refuse_disagreement(diffs: dict[str, float], fmt: str, dtype: ExportDtype) -> None:
    """Raise ``ExportError`` when ``agreement``'s differences exceed ``TOLERANCE[dtype]`` (or
    more rows than ``EXIT_TOLERANCE[dtype]`` leave at another layer)."""
    if max(diffs["probs"], diffs["risk"]) > TOLERANCE[dtype] or diffs["exit_layer"] > EXIT_TOLERANCE[dtype]:
        raise ExportError(f"{fmt}/{dtype} differs from the PyTorch model by more than {TOLERANCE[dtype]} "
                          f"(or more than {EXIT_TOLERANCE[dtype]:.1%} of rows exit elsewhere): {diffs}; not written")


def agreement(reference: LoadedModel, exported_dir: Path, card: ModelCard, samples: int,
              seed: int) -> dict[str, float]:
    """Max |difference| of the deciding outputs, PyTorch fp32 against the exported graph,
    over random inputs of the model's shapes (with and without text): verdict
    probabilities and risk over rows that exit at the same layer, and the share of rows
    whose exit layer differs."""
    from engine.stages.infer import Inference  # local: engine.stages.infer imports engine.model (a cycle at import)

    ours = Inference.from_dir(exported_dir, runtime=card.serving.format if card.serving else "torch",
                              card=card)
    theirs = Inference(reference.model, reference.card)
    spec = reference.model.config.inputs
    diffs = {"probs": 0.0, "risk": 0.0, "exit_layer": 0.0}
    for fill in (0.0, 0.3):  # batches with no memo at all, and with memos of every length
        inputs = random_inputs(spec, samples, seed=seed, text_fill=fill)
        a, b = ours(inputs), theirs(inputs)
        same = a.exit_layer == b.exit_layer
        diffs["probs"] = max(diffs["probs"], float((a.probs - b.probs)[same].abs().max()))
        diffs["risk"] = max(diffs["risk"], float((a.risk - b.risk)[same].abs().max()))
        diffs["exit_layer"] = max(diffs["exit_layer"], float((a.exit_layer != b.exit_layer).float().mean()))
    return diffs


def _example(loaded: LoadedModel) -> tuple[Tensor, ...]:
    cut = trimmed(random_inputs(loaded.model.config.inputs, 4, seed=0, text_fill=0.5), loaded.model.config)
    return tuple(getattr(cut, name) for name in TENSOR_FIELDS)


def _export_onnx(loaded: LoadedModel, path: Path, dtype: ExportDtype) -> None:
    graph = ExportGraph(loaded.model)
    names = output_names(loaded.model.config)
    batch_axes = {name: {0: "batch"} for name in (*TENSOR_FIELDS, *names)}
    for name in ("history_numeric", "history_categorical", "history_mask"):
        batch_axes[name] = {0: "batch", 1: "history"}
    for name in ("text_ids", "text_mask"):
        batch_axes[name] = {0: "batch", 1: "text"}
    fp32 = path.with_suffix(".fp32.onnx")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer notes on shape reads; the graph is checked below
        torch.onnx.export(graph, _example(loaded), str(fp32), input_names=list(TENSOR_FIELDS), output_names=list(names),
                          dynamic_axes=batch_axes, opset_version=17, dynamo=False, do_constant_folding=True,
                          custom_opsets={"ai.onnx.ml": 3})  # the trees of a blend (engine.model.trees)
    if dtype == "fp32":
        fp32.replace(path)
    elif dtype == "int8":
        # local: onnxruntime's quantiser loads only for an int8 export
        from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

        quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8)
        fp32.unlink()
    else:
        _onnx_fp16_weights(fp32, path)
        fp32.unlink()


def _onnx_fp16_weights(src: Path, dst: Path) -> None:
    """Every float32 initializer of at least 16 values stored as float16 and cast back to
    float32 where read: half the file, fp32 arithmetic."""
    # local: the onnx package loads only when an export is written
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    g = model.graph
    casts = []
    for init in list(g.initializer):
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        value = numpy_helper.to_array(init)
        if value.size < 16:
            continue
        half_name = init.name + "__fp16"
        g.initializer.remove(init)
        g.initializer.append(numpy_helper.from_array(value.astype(np.float16), half_name))
        casts.append(helper.make_node("Cast", [half_name], [init.name], to=onnx.TensorProto.FLOAT,
                                      name=f"cast_{init.name}"))
    for node in reversed(casts):
        g.node.insert(0, node)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def _export_torchscript(loaded: LoadedModel, path: Path, dtype: ExportDtype) -> None:
    model = loaded.model
    if dtype == "int8":
        from engine.model.quantize import quantize_int8  # local: only an int8 export quantises

        graph = ExportGraph(quantize_int8(model), serving_layers=False)
    else:
        if dtype == "fp16":  # weights rounded to half precision; the archive keeps them as fp32
            model = copy.deepcopy(model)
            with torch.no_grad():
                for p in model.parameters():
                    p.copy_(p.half().float())
        graph = ExportGraph(model)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(graph, _example(loaded), check_trace=False)
    traced.save(str(path))
