"""Sparse mixture-of-experts feed-forward: sparse routing, the load-balance loss and its
logged load, and a MoE model served like any other (card round trip, early exit, int8)."""

from __future__ import annotations

import pytest
import torch
from pydantic import ValidationError

from engine.model import InputSpec, ModelConfig, load_model_dir, random_inputs, save_model_dir
from engine.model.decision import DecisionModel
from engine.model.moe import MoEEncoderLayer, MoEFeedForward, moe_layers
from engine.offline.train.fit import train_model
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.stages.infer import Inference

torch.set_num_threads(1)
SPEC = InputSpec(n_numeric=3, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                 history_categorical=1, text_len=2, text_vocab=10, schema_hash="moe")


def moe_config(**kw) -> ModelConfig:
    return ModelConfig(**{"inputs": SPEC, "d_model": 16, "n_heads": 2, "n_layers": 2, "numeric_tokens": 0,
                          "dropout": 0.0, "moe_experts": 4, "moe_top_k": 1, **kw})


def tiny_set(n: int = 480) -> LabelledSet:
    inputs = random_inputs(SPEC, n, seed=0)
    is_bad = (inputs.control_numeric[:, 0] > 1.0).float()
    return LabelledSet(inputs, is_bad, torch.full((n,), 80.0), torch.arange(n, dtype=torch.int64) * 1000)


def fast(**kw) -> TrainConfig:
    return TrainConfig(**{"epochs": 4, "batch_size": 32, "lr": 1e-2, "threads": 1, "progress": False,
                          "val_fraction": 0.25, **kw})


def test_each_token_reads_only_its_top_k_experts():
    torch.manual_seed(0)
    ff = MoEFeedForward(8, 16, n_experts=4, top_k=1, dropout=0.0).eval()
    x = torch.randn(2, 6, 8)
    before = ff(x)
    choice = ff.router(x.reshape(-1, 8)).argmax(-1)
    unused = next(e for e in range(4) if not (choice == e).any()) if len(set(choice.tolist())) < 4 else None
    # Break one expert: only the tokens routed to it may change.
    broken = int(choice[0])
    with torch.no_grad():
        ff.experts[broken][2].bias.add_(100.0)
    after = ff(x).reshape(-1, 8)
    changed = (after - before.reshape(-1, 8)).abs().amax(-1) > 1e-4
    assert torch.equal(changed, choice == broken)
    if unused is not None:  # an expert nobody picked is never run
        with torch.no_grad():
            ff.experts[unused][2].bias.fill_(float("nan"))
        assert torch.isfinite(ff(x)).all()


def test_load_balance_loss_is_lowest_for_uniform_routing():
    ff = MoEFeedForward(4, 8, n_experts=4, top_k=1, dropout=0.0).train()
    with torch.no_grad():
        ff.router.weight.zero_()
        ff.router.bias.copy_(torch.tensor([9.0, 0.0, 0.0, 0.0]))
    ff(torch.randn(3, 5, 4))
    collapsed = float(ff.pop_aux_loss().detach())
    assert ff.expert_load.tolist() == [1.0, 0.0, 0.0, 0.0] and collapsed > 3.0
    with torch.no_grad():
        ff.router.bias.zero_()
        ff.router.weight.copy_(torch.eye(4) * 20)
    ff(torch.eye(4).repeat(2, 1).view(2, 4, 4))  # each expert gets the tokens of its own axis
    assert ff.expert_load.tolist() == [0.25] * 4 and float(ff.pop_aux_loss().detach()) < collapsed


def test_padding_tokens_do_not_count_in_the_load():
    layer = MoEEncoderLayer(8, 2, 16, 0.0, n_experts=2, top_k=1).train()
    x = torch.randn(1, 4, 8)
    pad = torch.tensor([[False, True, True, True]])
    layer(x, src_key_padding_mask=pad)
    assert sorted(layer.expert_load.tolist()) == [0.0, 1.0]  # one real token, one expert


def test_training_logs_expert_load_and_raises_the_penalty_over_the_limit():
    result = train_model(tiny_set(), moe_config(), fast(moe_load_variance_limit=1e-9))
    record = result.history[0]
    shares = [record[f"moe_load_l1_e{e}"] for e in range(4)]
    assert sum(shares) == pytest.approx(1.0) and "moe_load_variance" in record
    weights = [h["moe_aux_weight"] for h in result.history]
    assert weights[0] == 0.05 and weights[1:] == [0.1, 0.2, 0.4]  # every epoch over the tiny limit
    calm = train_model(tiny_set(), moe_config(), fast(moe_load_variance_limit=1.0))
    assert [h["moe_aux_weight"] for h in calm.history] == [0.05] * 4
    assert result.val_metrics["auc_roc"] > 0.8


def test_moe_model_round_trips_and_serves_with_early_exit_and_int8(tmp_path):
    result = train_model(tiny_set(), moe_config(early_exit_layers=(1,)), fast(epochs=2))
    assert len(moe_layers(result.model)) == 2
    save_model_dir(result.model, result.card, tmp_path / "m")
    loaded = load_model_dir(tmp_path / "m", expected_schema_hash="moe")
    batch = random_inputs(SPEC, 9, seed=3)
    a, b = Inference(result.model, result.card)(batch), Inference.from_loaded(loaded)(batch)
    assert torch.allclose(a.risk, b.risk) and torch.allclose(a.probs, b.probs)
    q = Inference(result.model, result.card, int8=True)(batch)
    assert torch.isfinite(q.risk).all() and (q.risk - a.risk).abs().max() < 0.1
    dense = DecisionModel(moe_config(moe_experts=0)).eval()
    assert not moe_layers(dense)


def test_config_refuses_top_k_above_the_experts():
    with pytest.raises(ValidationError, match="moe_top_k"):
        moe_config(moe_experts=2, moe_top_k=3)
