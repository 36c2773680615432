"""The optional pretrained backbone, against tiny randomly initialised local models."""

from __future__ import annotations

import pytest
import torch

from engine.model import InputSpec, fresh_model, load_model_dir, random_inputs, save_model_dir
from engine.stages.infer import Inference

SPEC = InputSpec(n_numeric=3, n_categorical=2, categorical_buckets=16, history_len=3, history_numeric=1,
                 history_categorical=1, text_len=4, text_vocab=30, schema_hash="hf")


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaModel

    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(root / "bert")
    LlamaModel(LlamaConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                           num_key_value_heads=2, intermediate_size=32)).save_pretrained(root / "llama")
    return root


@pytest.mark.parametrize("name,pooling,lora", [("bert", "cls", 0), ("llama", "last", 4)])
def test_pretrained_backbone_feeds_the_heads_and_round_trips(tiny_models, tmp_path, name, pooling, lora):
    model, card = fresh_model(SPEC, backbone="hf", hf_path=str(tiny_models / name), pooling=pooling,
                              hf_lora_rank=lora)
    batch = random_inputs(SPEC, 3)
    out = Inference(model, card)(batch)
    assert out.probs.shape == (3, 3) and torch.isfinite(out.risk).all()
    if lora:  # only adapters (and our own embedder/heads) train; the pretrained weights are frozen
        frozen = [n for n, p in model.backbone.hf.named_parameters() if not p.requires_grad]
        assert frozen and all("lora_" not in n for n in frozen)
    save_model_dir(model, card, tmp_path / "m")
    again = Inference.from_loaded(load_model_dir(tmp_path / "m", expected_schema_hash="hf"))(batch)
    assert torch.allclose(out.probs, again.probs, atol=1e-5)


def test_low_bit_loading_needs_cuda(tiny_models):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: bitsandbytes loading is allowed")
    with pytest.raises(RuntimeError, match="needs CUDA"):
        fresh_model(SPEC, backbone="hf", hf_path=str(tiny_models / "bert"), hf_bits=8)
