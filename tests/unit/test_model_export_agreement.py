"""``tollgate model export``: an ONNX or TorchScript graph that agrees with the PyTorch
model on every output that decides (calibrated verdict probabilities, risk, the
early-exit layer), served through ``Inference.from_dir`` by the runtime setting."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.model import (
    InputSpec,
    ModelLoadError,
    fresh_model,
    load_model_dir,
    random_inputs,
    read_card,
    save_model_dir,
)
from engine.model.config import HeadSpec
from engine.model.export import EXIT_TOLERANCE, TOLERANCE, agreement, export_model_dir
from engine.offline.train.trees import TREE_PARAMS, fit_trees
from engine.stages.infer import Inference

SPEC = InputSpec(n_numeric=9, n_categorical=3, categorical_buckets=64, history_len=6, history_numeric=3,
                 history_categorical=2, text_len=12, text_vocab=200, schema_hash="export-test")


def _model_dir(root: Path, seed: int = 0, trees: bool = False) -> Path:
    """A small model with an early-exit layer and an extra head; the threshold makes
    part of the rows leave at layer 1 (an untrained model is about 0.4 sure). With
    ``trees``, XGBoost trees blended in (engine.model.trees), fitted to random labels on
    inputs like the test's, so that their thresholds sit among the values scored."""
    model, card = fresh_model(SPEC, version=f"m{seed}", seed=seed, n_layers=2, early_exit_layers=(1,),
                              extra_heads=(HeadSpec(name="channel", kind="single_label", labels=("web", "pos")),))
    if trees:
        labels = (torch.rand(2000, generator=torch.Generator().manual_seed(seed)) < 0.3).float()
        ensemble = fit_trees(model, random_inputs(SPEC, 2000, seed=7), labels, weight=0.5, seed=seed)
        assert ensemble is not None and ensemble.shape.depth == TREE_PARAMS["max_depth"]
        model = model.with_trees(ensemble)
        card = card.model_copy(update={"architecture": model.config})
    with torch.inference_mode():
        conf = torch.softmax(model(random_inputs(SPEC, 256, seed=3))["exit1.verdict"], -1).max(-1).values
    card = card.model_copy(update={"early_exit_threshold": float(conf.median())})
    return save_model_dir(model, card, root / f"m{seed}")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Path:
    torch.set_num_threads(1)
    return _model_dir(tmp_path_factory.mktemp("export"))


@pytest.fixture(scope="module")
def source_with_trees(tmp_path_factory) -> Path:
    torch.set_num_threads(1)
    return _model_dir(tmp_path_factory.mktemp("export-trees"), trees=True)


@pytest.mark.parametrize("with_trees", [False, True], ids=["network", "with-trees"])
@pytest.mark.parametrize("fmt,dtype", [("onnx", "fp32"), ("onnx", "fp16"), ("onnx", "int8"),
                                       ("torchscript", "fp32"), ("torchscript", "int8")])
def test_an_export_agrees_with_pytorch_and_is_served_by_default(request, tmp_path, fmt, dtype, with_trees):
    source = request.getfixturevalue("source_with_trees" if with_trees else "source")
    result = export_model_dir(source, tmp_path / "out", fmt, dtype, samples=128)
    card = read_card(result.path)
    assert card.serving is not None and card.serving.format == fmt and card.serving.dtype == dtype
    assert (result.path / card.serving.file).is_file() and card.version == f"m0-{fmt}-{dtype}"

    served = Inference.from_dir(result.path, runtime="auto")
    assert served.graph is not None  # the graph runs, not the module
    if with_trees and fmt == "onnx":  # onnxruntime's own trees, not a walk in gathers
        import onnx

        ops = {node.op_type for node in onnx.load(str(result.path / card.serving.file)).graph.node}
        assert "TreeEnsembleRegressor" in ops
    reference = Inference.from_dir(source, runtime="auto")
    assert reference.graph is None
    # inputs the export never saw: memos of every length and none, text-free twins of the
    # same rows in the same call (#22), history of every length
    base = random_inputs(SPEC, 300, seed=11, text_fill=0.4)
    twins = random_inputs(SPEC, 300, seed=11, text_fill=0.0)
    inputs = type(base)(*(torch.cat([getattr(base, n), getattr(twins, n)]) for n in base.__dataclass_fields__))
    a, b = served(inputs), reference(inputs)
    left_early = b.exit_layer == 1
    assert 0 < int(left_early.sum()) < len(b)  # the early exit is exercised both ways
    same_exit = a.exit_layer == b.exit_layer
    assert float((~same_exit).float().mean()) <= EXIT_TOLERANCE[dtype]
    assert float((a.probs - b.probs)[same_exit].abs().max()) <= TOLERANCE[dtype]
    assert float((a.risk - b.risk)[same_exit].abs().max()) <= TOLERANCE[dtype]
    assert torch.equal(torch.isnan(a.extra["channel"][same_exit]), torch.isnan(b.extra["channel"][same_exit]))
    assert a.model_version == f"m0-{fmt}-{dtype}"


def test_runtime_setting_chooses_and_refuses(source, tmp_path, monkeypatch):
    out = export_model_dir(source, tmp_path / "onnx", "onnx", "fp32", samples=64).path
    assert Inference.from_dir(out, runtime="torch").graph is None
    assert Inference.from_dir(out, runtime="onnx").graph is not None
    with pytest.raises(ModelLoadError, match="torchscript"):
        Inference.from_dir(out, runtime="torchscript")
    with pytest.raises(ModelLoadError, match="no exported graph"):
        Inference.from_dir(source, runtime="onnx")
    from engine.settings import get_settings

    monkeypatch.setenv("TOLLGATE_MODEL__RUNTIME", "torch")
    get_settings.cache_clear()
    try:
        assert Inference.from_dir(out).graph is None
    finally:
        monkeypatch.delenv("TOLLGATE_MODEL__RUNTIME")
        get_settings.cache_clear()
    assert Inference.from_dir(out).graph is not None


def test_a_graph_that_disagrees_is_caught(source, tmp_path):
    out = export_model_dir(source, tmp_path / "onnx", "onnx", "fp32", samples=64).path
    other = load_model_dir(_model_dir(tmp_path, seed=5))  # different weights, same shapes
    diffs = agreement(other, out, read_card(out), samples=64, seed=1)
    assert max(diffs["probs"], diffs["risk"]) > TOLERANCE["int8"]
    with pytest.raises(FileExistsError):
        export_model_dir(source, out, "onnx", "fp32", samples=64)


def test_saving_weights_again_drops_the_graph(source, tmp_path):
    """A fine-tune writes new weights through save_model_dir: its card must not name a
    graph exported from the old ones."""
    out = export_model_dir(source, tmp_path / "ts", "torchscript", "fp32", samples=64).path
    loaded = load_model_dir(out)
    assert loaded.card.serving is not None
    again = save_model_dir(loaded.model, loaded.card, tmp_path / "child")
    assert read_card(again).serving is None


def test_unknown_format_or_dtype_is_refused(source, tmp_path):
    with pytest.raises(ValueError, match="format"):
        export_model_dir(source, tmp_path / "x", "tflite", "fp32")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dtype"):
        export_model_dir(source, tmp_path / "x", "onnx", "bf16")  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists()


def test_tollgate_model_export_command(source, tmp_path):
    from typer.testing import CliRunner

    from engine.interfaces import cli

    cli._register_all()
    out = tmp_path / "cli-onnx"
    result = CliRunner().invoke(cli.app, ["model", "export", str(source), "--format", "onnx", "--dtype", "int8",
                                          "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "exported m0-onnx-int8" in result.output and (out / "model.onnx").is_file()
    again = CliRunner().invoke(cli.app, ["model", "export", str(source), "--out", str(out)])
    assert again.exit_code == 1  # never overwrites a directory
