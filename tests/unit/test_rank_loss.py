"""The pairwise ranking loss on the risk head (``TrainConfig.rank_weight``,
``engine.model.losses.pairwise_rank_loss``)."""

from __future__ import annotations

import math

import torch

from engine.model.losses import pairwise_rank_loss
from engine.offline.train import fit
from engine.offline.train.sets import LabelledSet, TrainConfig
from tests.unit.test_train import CFG, fast, risk_gradient_of, tiny_set


def test_the_loss_counts_every_pair_a_good_row_outranks_a_bad_one():
    y = torch.tensor([1.0, 0.0, 0.0, 0.0])
    ordered = pairwise_rank_loss(torch.tensor([5.0, 0.0, -1.0, -2.0]), y)
    one_swap = pairwise_rank_loss(torch.tensor([5.0, 6.0, -1.0, -2.0]), y)
    assert ordered < one_swap
    # the mean over pairs of softplus(good - bad): here three pairs
    expected = sum(math.log1p(math.exp(g - 5.0)) for g in (0.0, -1.0, -2.0)) / 3
    assert math.isclose(float(ordered), expected, rel_tol=1e-6)
    assert float(pairwise_rank_loss(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))) == 0.0


def test_the_term_lifts_bad_rows_and_lowers_good_ones_only_with_a_weight():
    data = tiny_set(n=64)
    assert 0 < int(data.is_bad.sum()) < 64
    _, risk_gradient = risk_gradient_of(data)
    plain = risk_gradient(data, TrainConfig())
    assert torch.equal(risk_gradient(data, TrainConfig(rank_weight=0.0)), plain)
    ranked = risk_gradient(data, TrainConfig(rank_weight=1.0))
    bad = data.is_bad > 0.5
    assert (ranked[bad] < plain[bad]).all()  # descent raises every bad row's logit more
    assert (ranked[~bad] > plain[~bad]).all()  # and lowers every good row's


def test_unlabelled_rows_take_no_part_and_training_records_the_weight():
    data = tiny_set(n=64)
    _, risk_gradient = risk_gradient_of(data)
    y = data.is_bad.clone()
    y[::2] = math.nan
    gradient = risk_gradient(LabelledSet(data.inputs, y, data.amount, data.event_time_ms), TrainConfig(rank_weight=1.0))
    assert (gradient[::2] == 0).all()
    trained = fit.train_model(tiny_set(), CFG, fast(seed=3, rank_weight=0.3))
    assert trained.card.training["rank_weight"] == 0.3
    assert trained.val_metrics["auc_roc"] > 0.85
