"""The infer stage without PyTorch (``engine.stages.infer_arrays.OnnxArrayInference``):
the same calibrated outputs as ``Inference`` serving the same exported graph, the same
early-exit choice, the same refusals. That a process serving it never imports PyTorch:
tests/integration/test_worker_start_imports.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engine.model import InputSpec, SchemaMismatchError, fresh_model, random_inputs, save_model_dir
from engine.model.card import ModelLoadError
from engine.model.config import HeadSpec
from engine.model.export import export_model_dir
from engine.stages.infer import Inference
from engine.stages.infer_arrays import CPU_CHUNK_ROWS, OnnxArrayInference, padded_length_order, serves_onnx_graph

SPEC = InputSpec(n_numeric=9, n_categorical=3, categorical_buckets=64, history_len=6, history_numeric=3,
                 history_categorical=2, text_len=12, text_vocab=200, schema_hash="arrays-test")


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """An ONNX export of a small model with an early-exit layer (its threshold sends part
    of the rows out at layer 1) and an extra head."""
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("arrays")
    model, card = fresh_model(SPEC, version="a0", seed=5, n_layers=2, early_exit_layers=(1,),
                              extra_heads=(HeadSpec(name="channel", kind="single_label", labels=("web", "pos")),))
    with torch.inference_mode():
        conf = torch.softmax(model(random_inputs(SPEC, 256, seed=3))["exit1.verdict"], -1).max(-1).values
    card = card.model_copy(update={"early_exit_threshold": float(conf.median())})
    source = save_model_dir(model, card, root / "a0")
    return export_model_dir(source, root / "a0-onnx", "onnx", "fp32", samples=64).path


def _mixed_batch(n: int):
    """Rows with memos of every length and none, and the text-free twins of the same rows."""
    base = random_inputs(SPEC, n, seed=21, text_fill=0.4)
    twins = random_inputs(SPEC, n, seed=21, text_fill=0.0)
    return type(base)(*(torch.cat([getattr(base, f), getattr(twins, f)]) for f in base.__dataclass_fields__))


@pytest.mark.parametrize("rows", [1, 7, CPU_CHUNK_ROWS, 3 * CPU_CHUNK_ROWS + 5])
def test_numpy_path_gives_what_inference_gives_on_the_same_graph(exported, rows):
    inputs = _mixed_batch((rows + 1) // 2)
    reference = Inference.from_dir(exported, runtime="onnx")  # the graph, through PyTorch tensors
    ours = OnnxArrayInference.from_dir(exported, threads=1)
    a = ours({name: getattr(inputs, name).numpy() for name in inputs.__dataclass_fields__})
    b = reference(inputs)
    assert a.model_version == b.model_version == "a0-onnx-fp32"
    assert isinstance(a.probs, np.ndarray) and a.probs.dtype == np.float32 and a.exit_layer.dtype == np.int64
    np.testing.assert_array_equal(a.exit_layer, b.exit_layer.numpy())
    np.testing.assert_allclose(a.probs, b.probs.numpy(), atol=1e-6)
    np.testing.assert_allclose(a.risk, b.risk.numpy(), atol=1e-6)
    np.testing.assert_allclose(a.extra["channel"], b.extra["channel"].numpy(), atol=1e-6)  # NaN where it left early
    assert [r.exit_layer for r in a.score_rows()] == a.exit_layer.tolist()
    if rows > 8:
        assert 0 < int((a.exit_layer == 1).sum()) < len(a)  # both exits taken


def test_a_chunked_batch_equals_its_rows_scored_one_at_a_time(exported):
    inputs = _mixed_batch(CPU_CHUNK_ROWS + 9)
    arrays = {name: getattr(inputs, name).numpy() for name in inputs.__dataclass_fields__}
    ours = OnnxArrayInference.from_dir(exported, threads=1)
    whole = ours(arrays)
    for i in (0, 5, CPU_CHUNK_ROWS + 3, 2 * CPU_CHUNK_ROWS + 17):
        one = ours({k: v[i:i + 1] for k, v in arrays.items()})
        np.testing.assert_allclose(one.probs[0], whole.probs[i], atol=1e-6)
        assert one.exit_layer[0] == whole.exit_layer[i]


def test_padded_length_order_puts_short_rows_first():
    arrays = {"history_mask": np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=bool),
              "text_mask": np.array([[1, 1], [0, 0], [1, 0], [0, 0]], dtype=bool)}
    assert padded_length_order(arrays).tolist() == [3, 1, 2, 0]
    # a model that reads no text pads history alone: text length must not split the
    # short histories from each other (most card payments carry a descriptor)
    assert padded_length_order(arrays, reads_text=False).tolist() == [3, 1, 0, 2]


def test_refusals_match_the_pytorch_path(exported, tmp_path):
    with pytest.raises(SchemaMismatchError, match="arrays-test"):
        OnnxArrayInference.from_dir(exported, expected_schema_hash="another")
    model, card = fresh_model(SPEC, version="plain")
    plain = save_model_dir(model, card, tmp_path / "plain")
    with pytest.raises(ModelLoadError, match="no ONNX graph"):
        OnnxArrayInference.from_dir(plain)
    from engine.model.card import read_card

    assert serves_onnx_graph(read_card(exported), "auto") and serves_onnx_graph(read_card(exported), "onnx")
    assert not serves_onnx_graph(read_card(exported), "torch")
    assert not serves_onnx_graph(read_card(plain), "auto")
