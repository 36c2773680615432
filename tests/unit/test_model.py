"""Decision model: shapes, heads, early exit, calibration, model card, int8, purity."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from pydantic import ValidationError

from engine.model import (
    DecisionModel,
    HeadSpec,
    InputSpec,
    ModelConfig,
    SchemaMismatchError,
    fresh_model,
    is_quantized,
    load_model_dir,
    quantize_int8,
    random_inputs,
    save_model_dir,
)
from engine.model.calibration import fit_temperature, nll
from engine.model.card import CARD_FILE, WEIGHTS_FILE, ModelLoadError
from engine.stages.infer import Inference

torch.set_num_threads(1)
SPEC = InputSpec(n_numeric=5, n_categorical=3, categorical_buckets=32, history_len=4, history_numeric=2,
                 history_categorical=2, text_len=6, text_vocab=40, schema_hash="schema-a")
EXTRA = (HeadSpec(name="channel", kind="single_label", labels=("pos", "web", "app")),
         HeadSpec(name="flags", kind="multi_label", labels=("a", "b")),
         HeadSpec(name="loss_amount", kind="regression", labels=("eur",)))


def small(**kw) -> ModelConfig:
    return ModelConfig(inputs=SPEC, d_model=16, n_heads=2, **kw)


@pytest.mark.parametrize("pooling", ["cls", "mean", "last"])
def test_forward_feeds_every_head_in_one_pass(pooling):
    model = DecisionModel(small(pooling=pooling, extra_heads=EXTRA)).eval()
    out = model(random_inputs(SPEC, 7))
    assert out["verdict"].shape == (7, 3) and out["risk"].shape == (7,)
    assert out["channel"].shape == (7, 3) and out["flags"].shape == (7, 2) and out["loss_amount"].shape == (7, 1)


def test_head_config_is_validated():
    with pytest.raises(ValidationError):
        HeadSpec(name="verdict", kind="single_label", labels=("x",))
    with pytest.raises(ValidationError):
        small(extra_heads=(EXTRA[0], EXTRA[0]))
    with pytest.raises(ValidationError):
        small(n_layers=2, early_exit_layers=(2,))  # the last layer is not an *early* exit


def test_early_exit_threshold_decides_depth_and_full_depth_rows_match_forward():
    model = DecisionModel(small(n_layers=3, early_exit_layers=(1, 2))).eval()
    batch = random_inputs(SPEC, 16)
    with torch.no_grad():
        full = model(batch)
        everyone_exits, layer = model.forward_early_exit(batch, threshold=0.0)
        assert layer.tolist() == [1] * 16
        assert torch.allclose(everyone_exits["verdict"], full["exit1.verdict"], atol=1e-5)
        nobody_exits, layer = model.forward_early_exit(batch, threshold=1.01)
        assert layer.tolist() == [3] * 16
        assert torch.allclose(nobody_exits["verdict"], full["verdict"], atol=1e-5)
        assert torch.allclose(nobody_exits["risk"], full["risk"], atol=1e-5)
        # a threshold between the rows' exit confidences splits the batch
        conf = torch.softmax(full["exit1.verdict"], -1).max(-1).values
        mixed, layer = model.forward_early_exit(batch, threshold=float(conf.median()))
        assert set(layer.tolist()) <= {1, 2, 3} and (layer == 1).any() and (layer > 1).any()


def test_temperature_scaling_lowers_nll_on_miscalibrated_logits():
    g = torch.Generator().manual_seed(1)
    labels = torch.randint(0, 3, (3000,), generator=g)
    logits = torch.nn.functional.one_hot(labels, 3).float() * 1.5 + torch.randn(3000, 3, generator=g)
    overconfident = logits * 5
    t = fit_temperature(overconfident, labels)
    assert t > 2 and nll(overconfident, labels, t) < nll(overconfident, labels) - 0.1
    binary_y = (torch.rand(3000, generator=g) < 0.3).float()
    binary_logits = (binary_y * 2 - 1) * 0.5 + torch.randn(3000, generator=g) * 0.5
    t = fit_temperature(binary_logits * 0.1, binary_y)  # under-confident -> T < 1
    assert t < 1 and nll(binary_logits * 0.1, binary_y, t) < nll(binary_logits * 0.1, binary_y)


def test_card_round_trip_restores_identical_outputs(tmp_path):
    model, card = fresh_model(SPEC, version="v1", d_model=16, n_heads=2, extra_heads=EXTRA)
    card = card.model_copy(update={"temperature": card.temperature.model_copy(update={"risk": 1.7}),
                                   "metrics": {"auc_roc": 0.9}, "data_window": (1, 2)})
    save_model_dir(model, card, tmp_path / "v1")
    assert sorted(p.name for p in (tmp_path / "v1").iterdir()) == [WEIGHTS_FILE, CARD_FILE]
    loaded = load_model_dir(tmp_path / "v1", expected_schema_hash="schema-a")
    assert loaded.card.temperature.risk == 1.7 and loaded.card.metrics == {"auc_roc": 0.9}
    assert loaded.card.label_maps["verdict"] == ["pass", "review", "reject"]
    assert loaded.card.label_maps["channel"] == ["pos", "web", "app"]
    batch = random_inputs(SPEC, 5)
    a, b = Inference(model, card)(batch), Inference.from_loaded(loaded)(batch)
    assert torch.allclose(a.probs, b.probs) and torch.allclose(a.risk, b.risk)


def test_schema_hash_mismatch_is_refused_with_a_clear_message(tmp_path):
    save_model_dir(*fresh_model(SPEC, version="v2", d_model=16, n_heads=2), tmp_path / "v2")
    with pytest.raises(SchemaMismatchError, match="trained on feature schema schema-a.*produces schema-b"):
        load_model_dir(tmp_path / "v2", expected_schema_hash="schema-b")


def test_weights_are_safetensors_never_pickle(tmp_path):
    save_model_dir(*fresh_model(SPEC, version="v3", d_model=16, n_heads=2), tmp_path / "v3")
    head = (tmp_path / "v3" / WEIGHTS_FILE).read_bytes()[:16]
    assert not head.startswith(b"\x80") and not head.startswith(b"PK")  # neither pickle nor torch zip
    (tmp_path / "v3" / WEIGHTS_FILE).rename(tmp_path / "v3" / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="only safetensors"):
        load_model_dir(tmp_path / "v3")


def test_int8_runs_and_stays_close_to_fp32():
    model, card = fresh_model(SPEC, d_model=32, n_heads=2)
    q = quantize_int8(model)
    assert is_quantized(q) and not is_quantized(model)
    batch = random_inputs(SPEC, 32)
    fp32, int8 = Inference(model, card)(batch), Inference(model, card, int8=True)(batch)
    assert (fp32.probs - int8.probs).abs().max() < 0.05


def test_int8_is_refused_off_the_cpu_with_a_clear_message():
    # Dynamic int8 is a CPU kernel; silently serving fp32 on a GPU would misreport the model.
    model, card = fresh_model(SPEC, d_model=16, n_heads=2)
    with pytest.raises(ValueError, match="CPU only"):
        Inference(model, card, int8=True, device="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (the GPU figures: ops/bench/gpu.py)")
def test_cuda_inference_matches_the_cpu_and_returns_cpu_tensors():
    model, card = fresh_model(SPEC, d_model=16, n_heads=2)
    batch = random_inputs(SPEC, 16)
    cpu = Inference(model, card)(batch)
    twin, twin_card = fresh_model(SPEC, d_model=16, n_heads=2)
    gpu = Inference(twin, twin_card, device="cuda")(batch)
    assert gpu.probs.device.type == "cpu" and torch.allclose(cpu.probs, gpu.probs, atol=1e-4)


def test_inference_is_pure_and_scrubs_nan():
    model, card = fresh_model(SPEC, d_model=16, n_heads=2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    infer = Inference(model, card)
    batch = random_inputs(SPEC, 4)
    batch.control_numeric[0, 0] = float("nan")
    batch.history_numeric[1, 0, 0] = float("inf")
    first, second = infer(batch), infer(batch)
    assert torch.equal(first.probs, second.probs)
    assert torch.isfinite(first.probs).all() and torch.isfinite(first.risk).all()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert not first.probs.requires_grad


def test_model_reads_the_encoders_batches():
    from engine.stages.encode import EncodedBatch, FeatureSchema

    schema = FeatureSchema.default()
    spec = InputSpec.from_schema(schema)
    assert spec.schema_hash == schema.schema_hash() and spec.n_numeric == schema.n_numeric
    model, card = fresh_model(spec, d_model=16, n_heads=2)
    out = Inference(model, card)(EncodedBatch.empty(schema, 3))
    assert out.probs.shape == (3, 3) and out.exit_layer.tolist() == [2, 2, 2]


def test_read_text_false_makes_the_outputs_blind_to_user_text():
    """Issue 22: a model that does not read the text segment gives the same outputs with
    any text as without; the default model does read it (so the test can fail)."""
    with_text = random_inputs(SPEC, 6, seed=3, text_fill=1.0)
    without = dataclasses.replace(with_text, text_ids=torch.zeros_like(with_text.text_ids),
                                  text_mask=torch.zeros_like(with_text.text_mask))
    blind, reading = DecisionModel(small(read_text=False)).eval(), DecisionModel(small()).eval()
    with torch.no_grad():
        assert torch.equal(blind(with_text)["risk"], blind(without)["risk"])
        assert torch.equal(blind(with_text)["verdict"], blind(without)["verdict"])
        assert not torch.equal(reading(with_text)["risk"], reading(without)["risk"])
    with pytest.raises(ValidationError, match="read_text"):
        ModelConfig(inputs=SPEC, backbone="hf", hf_path="/nowhere", read_text=False)
