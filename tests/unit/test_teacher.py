"""Distillation from a gradient-boosted teacher (``engine.offline.train.teacher``,
``TrainConfig.distill_weight``): out-of-fold, from labelled rows only, training-only."""

from __future__ import annotations

import math

import numpy as np
import torch

from engine.offline.train import fit
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.offline.train.teacher import out_of_fold_logits, tree_features
from tests.unit.test_train import CFG, fast, risk_gradient_of, tiny_set


def test_the_teacher_ranks_the_rule_and_never_scores_a_row_it_learnt():
    data = tiny_set(n=800)
    logits = out_of_fold_logits(data.inputs, data.is_bad, folds=4, seed=0)
    assert logits.shape == (800,) and not torch.isnan(logits).any()
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(data.is_bad.numpy(), logits.numpy()) > 0.95
    # out of fold: flipping a row's label changes the trees that learnt it, never the
    # score of the row itself
    flipped = data.is_bad.clone()
    flipped[0] = 1.0 - flipped[0]
    again = out_of_fold_logits(data.inputs, flipped, folds=4, seed=0)
    assert again[0] == logits[0] and not torch.equal(again, logits)


def test_unlabelled_rows_are_scored_but_not_learnt_and_a_one_class_fold_gives_none():
    data = tiny_set(n=400)
    y = data.is_bad.clone()
    y[::3] = math.nan
    logits = out_of_fold_logits(data.inputs, y, folds=2, seed=1)
    assert not torch.isnan(logits).any()  # the NaN-label rows got a teacher's score too
    none_bad = torch.zeros(400)
    assert torch.isnan(out_of_fold_logits(data.inputs, none_bad, folds=2, seed=1)).all()
    assert tree_features(data.inputs).shape == (400, 3 + 1)  # numeric fields + the last 2 ids (1 here)


def test_the_pull_only_counts_with_a_weight_and_points_toward_the_teacher():
    data = tiny_set(n=64)
    model, risk_gradient = risk_gradient_of(data)
    risk = model(data.inputs)["risk"].detach()

    def taught(teacher: torch.Tensor) -> LabelledSet:
        return LabelledSet(data.inputs, data.is_bad, data.amount, data.event_time_ms, teacher_logit=teacher)

    plain = risk_gradient(data, TrainConfig())
    assert torch.equal(risk_gradient(taught(risk + 3.0), TrainConfig()), plain)  # distill_weight 0: ignored
    cfg = TrainConfig(distill_weight=1.0)
    # a teacher that says "riskier" pushes every row's risk logit up (gradient down), and
    # one that says "safer" pushes it down; a NaN teacher pulls nothing
    assert (risk_gradient(taught(risk + 3.0), cfg) < plain).all()
    assert (risk_gradient(taught(risk - 3.0), cfg) > plain).all()
    assert torch.allclose(risk_gradient(taught(torch.full_like(risk, math.nan)), cfg), plain)


def test_training_with_a_teacher_records_it_and_without_fits_none(monkeypatch):
    data = tiny_set()
    taught = fit.train_model(data, CFG, fast(seed=3, distill_weight=1.0))
    assert taught.card.training["distill_weight"] == 1.0
    assert taught.val_metrics["auc_roc"] > 0.85

    def no_teacher(*a, **kw):
        raise AssertionError("a teacher was fitted with distill_weight 0")

    monkeypatch.setattr(fit, "out_of_fold_logits", no_teacher)
    fit.train_model(data, CFG, fast(seed=3))
    assert np.isfinite(taught.history[-1]["train_loss"])
