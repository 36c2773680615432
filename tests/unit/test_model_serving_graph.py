"""Every stored version carries an ONNX graph of its own weights by default
(``engine.model.export.add_serving_graph``, ``settings.model.serving_graph``): same version,
same outputs as PyTorch, served without PyTorch; never a lost model when it cannot be made."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.model import InputSpec, fresh_model, random_inputs, read_card, save_model_dir
from engine.model import export as export_module
from engine.model.export import TOLERANCE, add_serving_graph
from engine.model.registry import ModelRegistry
from engine.settings import Settings
from engine.stages.infer import Inference
from engine.stages.infer_arrays import OnnxArrayInference

SPEC = InputSpec(n_numeric=9, n_categorical=3, categorical_buckets=64, history_len=6, history_numeric=3,
                 history_categorical=2, text_len=12, text_vocab=200, schema_hash="graph-test")


@pytest.fixture()
def model_dir(tmp_path):
    torch.set_num_threads(1)
    model, card = fresh_model(SPEC, version="g1", seed=2)
    return save_model_dir(model, card, tmp_path / "g1")


def test_a_graph_beside_the_weights_serves_what_pytorch_serves(model_dir):
    serving = add_serving_graph(model_dir, samples=64)
    assert serving is not None and serving.format == "onnx" and serving.dtype == "fp32"
    card = read_card(model_dir)
    assert card.version == "g1" and card.serving == serving and (model_dir / "model.onnx").is_file()
    assert max(serving.max_abs_diff["probs"], serving.max_abs_diff["risk"]) <= TOLERANCE["fp32"]
    inputs = random_inputs(SPEC, 80, seed=9, text_fill=0.3)
    arrays = {name: getattr(inputs, name).numpy() for name in inputs.__dataclass_fields__}
    ours = OnnxArrayInference.from_dir(model_dir, threads=1)(arrays)
    theirs = Inference.from_dir(model_dir, runtime="torch")(inputs)
    np.testing.assert_allclose(ours.probs, theirs.probs.numpy(), atol=TOLERANCE["fp32"])
    assert Inference.from_dir(model_dir, runtime="auto").graph is not None  # auto serves the graph
    assert add_serving_graph(model_dir) == serving  # a directory that names a graph keeps it


def test_no_graph_when_the_export_fails_and_the_directory_is_left_as_it_was(model_dir, monkeypatch):
    def broken(loaded, path, dtype):
        path.with_suffix(".fp32.onnx").write_bytes(b"half a graph")
        raise RuntimeError("exporter broke")

    monkeypatch.setattr(export_module, "_export_onnx", broken)
    assert add_serving_graph(model_dir) is None
    assert read_card(model_dir).serving is None
    assert sorted(p.name for p in model_dir.iterdir()) == ["model.safetensors", "model_card.json"]


@pytest.mark.parametrize("setting", ["onnx", "none"])
def test_the_registry_stores_each_version_with_its_graph_unless_told_not_to(tmp_path, monkeypatch, setting):
    monkeypatch.setenv("TOLLGATE_MODEL__SERVING_GRAPH", setting)
    registry = ModelRegistry(Settings(), redis=None, models_dir=tmp_path / "models")
    model, card = fresh_model(SPEC, version="draft", seed=4)
    version = registry.register(model, card, version="r1")
    stored = read_card(registry.path_of(version))
    assert stored.version == "r1"
    assert (stored.serving is not None) == (setting == "onnx")
    assert (registry.path_of(version) / "model.onnx").is_file() == (setting == "onnx")
    again = registry.register(registry.path_of(version), version="r2")  # from a directory: the graph travels
    assert (read_card(registry.path_of(again)).serving is not None) == (setting == "onnx")
