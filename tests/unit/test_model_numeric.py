"""Piecewise-linear numeric encoding: fitted bins travel with the weights; old cards still load."""

from __future__ import annotations

import json

import torch

from engine.model import InputSpec, fresh_model, load_model_dir, random_inputs, save_model_dir
from engine.model.card import CARD_FILE
from engine.model.numeric import PiecewiseLinearEncoding
from engine.stages.infer import Inference

torch.set_num_threads(1)
SPEC = InputSpec(n_numeric=4, n_categorical=2, categorical_buckets=16, history_len=3, history_numeric=2,
                 history_categorical=1, text_len=4, text_vocab=20, schema_hash="num")


def test_codes_are_monotone_in_the_value_and_bounded():
    ple = PiecewiseLinearEncoding(n_fields=1, n_bins=8)
    ple.fit(torch.randn(1000, 1))
    xs = torch.linspace(-5, 5, 101)[:, None]
    codes = ple(xs)[:, 0]                      # [101, 8]
    assert codes.min() >= 0 and codes.max() <= 1
    assert (codes.sum(-1).diff() >= 0).all()   # more of the range filled as x grows
    assert codes[0].sum() == 0 and codes[-1].sum() == 8


def test_bins_follow_the_training_quantiles_and_skip_ties():
    ple = PiecewiseLinearEncoding(n_fields=2, n_bins=4)
    skewed = torch.cat([torch.zeros(900), torch.linspace(1, 100, 100)])  # 90 % zeros: a risk share
    ple.fit(torch.stack([skewed, torch.arange(1000.0)], dim=1))
    assert ple.bin_mask[0].sum() == 1           # zeros collapse the low quantiles into one edge
    assert ple.bin_mask[1].sum() == 4
    assert torch.allclose(ple.edges[1], torch.tensor([0.0, 249.75, 499.5, 749.25, 999.0]))


def test_fitted_bins_travel_in_the_weights_file(tmp_path):
    model, card = fresh_model(SPEC, version="p1", d_model=16, n_heads=2, numeric_bins=6)
    batch = random_inputs(SPEC, 64, seed=3)
    model.fit_input_statistics(batch)
    edges = model.backbone.embed.numeric.encode.edges.clone()
    assert not torch.allclose(edges, torch.linspace(0, 1, 7).expand_as(edges))  # fitted, not the default
    save_model_dir(model, card, tmp_path / "p1")
    loaded = load_model_dir(tmp_path / "p1", expected_schema_hash="num")
    assert torch.equal(loaded.model.backbone.embed.numeric.encode.edges, edges)
    a, b = Inference(model, card)(batch), Inference.from_loaded(loaded)(batch)
    assert torch.allclose(a.risk, b.risk) and torch.allclose(a.probs, b.probs)


def test_a_card_from_before_ple_loads_as_the_value_embedding(tmp_path):
    model, card = fresh_model(SPEC, version="old", d_model=16, n_heads=2, numeric_bins=0)
    save_model_dir(model, card, tmp_path / "old")
    path = tmp_path / "old" / CARD_FILE
    data = json.loads(path.read_text())
    del data["architecture"]["numeric_bins"]   # as written before the field existed
    path.write_text(json.dumps(data))
    loaded = load_model_dir(tmp_path / "old")
    assert loaded.model.config.numeric_bins == 0
    batch = random_inputs(SPEC, 8)
    assert torch.allclose(Inference(model, card)(batch).risk, Inference.from_loaded(loaded)(batch).risk)


def test_max_history_limits_the_tokens_read():
    model, _ = fresh_model(SPEC, d_model=16, n_heads=2, max_history=1)
    batch = random_inputs(SPEC, 4, seed=1)
    h, pad = model.backbone.embed_inputs(batch)
    full, _ = fresh_model(SPEC, d_model=16, n_heads=2)
    assert h.shape[1] == full.backbone.embed_inputs(batch)[0].shape[1] - (SPEC.history_len - 1)


def test_target_aware_bins_put_an_edge_at_a_rare_threshold():
    # 1 % of amounts are above 300 and all of them are bad: quantile bins lump them into
    # the top bin with ordinary large amounts; the tree split puts an edge right at 300.
    g = torch.Generator().manual_seed(0)
    amount = torch.cat([torch.rand(9900, generator=g) * 290, 300 + torch.rand(100, generator=g) * 50])
    bad = (amount > 300).float()
    bad[::97] = float("nan")  # outcomes not known yet are ignored
    quantile, target = PiecewiseLinearEncoding(1, 8), PiecewiseLinearEncoding(1, 8)
    quantile.fit(amount[:, None])
    target.fit(amount[:, None], bad)
    def nearest(p):
        return float((p.edges[0] - 295.0).abs().min())
    assert nearest(target) < 6.0 < nearest(quantile)
    codes = target(torch.tensor([[280.0], [320.0]]))[:, 0]
    assert not torch.equal(codes[0], codes[1])
