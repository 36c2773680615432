"""``engine.model.locate``: which model a process serves, and what its prestarted model
process should import for it (``serving_runtime``: onnxruntime only for an ONNX graph the
runtime setting serves; PyTorch otherwise, and whenever in doubt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.model import InputSpec, ServingExport, fresh_model
from engine.model.card import write_card
from engine.model.locate import ModelNotFound, find_model_dir, serving_runtime
from engine.settings import Settings

SPEC = InputSpec(n_numeric=3, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                 history_categorical=1, text_len=3, text_vocab=20, schema_hash="locate")


def _card_dir(root: Path, name: str, serving: dict | None) -> Path:
    """A model directory's card (no weights: nothing here loads them)."""
    _, card = fresh_model(SPEC, version=name)
    path = root / name
    path.mkdir(parents=True)
    return write_card(card.model_copy(update={"serving": ServingExport(**serving, tolerance=1e-4)
                                              if serving else None}), path)


@pytest.fixture()
def settings(tmp_path, monkeypatch) -> Settings:
    monkeypatch.setenv("TOLLGATE_PATHS__MODELS_DIR", str(tmp_path))
    return Settings()


def test_an_onnx_graph_is_served_without_pytorch_unless_the_runtime_says_torch(settings, tmp_path, monkeypatch):
    onnx = _card_dir(tmp_path, "v1-onnx-fp32", {"format": "onnx", "dtype": "fp32", "file": "model.onnx"})
    script = _card_dir(tmp_path, "v1-torchscript-fp32", {"format": "torchscript", "dtype": "fp32", "file": "m.pt"})
    plain = _card_dir(tmp_path, "v1", None)
    assert find_model_dir(settings, "v1-onnx-fp32") == onnx
    assert serving_runtime(settings, onnx) == "onnx"
    assert serving_runtime(settings, script) == "torch"
    assert serving_runtime(settings, plain) == "torch"
    monkeypatch.setenv("TOLLGATE_MODEL__RUNTIME", "torch")
    assert serving_runtime(Settings(), onnx) == "torch"
    monkeypatch.setenv("TOLLGATE_MODEL__RUNTIME", "onnx")
    assert serving_runtime(Settings(), onnx) == "onnx"


def test_no_model_or_an_unreadable_card_is_a_guess_of_torch_not_an_error(settings, tmp_path):
    with pytest.raises(ModelNotFound):
        find_model_dir(settings, "missing")
    assert serving_runtime(settings, "missing") == "torch"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model_card.json").write_text("{not json")
    assert serving_runtime(settings, broken) == "torch"
