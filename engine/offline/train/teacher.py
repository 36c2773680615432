"""A gradient-boosted teacher for the decision model's risk head (``TrainConfig.distill_weight``).

On the handbook's folds LightGBM reading the very fields the network reads ranks frauds
better than the network (docs/decision-quality.md, "Inputs against model"). Distillation
hands the network the trees' view during training only: each training row gets the
log-odds that LightGBM, fitted on the *other* folds of the training set, gives it
(out-of-fold, so the teacher never scores a row it learnt), and the risk head is pulled
toward it beside the labels. The served model is still the one network: every entry
point serves it unchanged, and nothing of the trees ships.

>>> from engine.model import InputSpec
>>> from engine.model.inputs import random_inputs
>>> spec = InputSpec(n_numeric=3, n_categorical=4, categorical_buckets=32, history_len=2,
...     history_numeric=1, history_categorical=1, text_len=2, text_vocab=10, schema_hash="h")
>>> tree_features(random_inputs(spec, 5)).shape
(5, 5)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import Tensor

from engine.model.trees import tree_inputs

#: The teacher's configuration: the LightGBM that the validation grid chose for the
#: book's features (docs/decision-quality.md, 15 leaves, 300 trees, learning rate 0.03).
TEACHER_PARAMS: dict[str, Any] = dict(n_estimators=300, learning_rate=0.03, num_leaves=15, min_child_samples=20,
                                      subsample=0.8, subsample_freq=1, colsample_bytree=0.8, n_jobs=1, verbose=-1)


def tree_features(inputs: Any) -> np.ndarray:
    """The control fields as a flat table: numeric fields, then hour and weekday ids
    (the last two categorical fields; ids of constant fields such as channel carry
    nothing to a tree, and terminal ids are hashed identities it would memorise)."""
    return tree_inputs(inputs).numpy()


def derived_tree_features(inputs: Any, derive: torch.nn.Module | None) -> np.ndarray:
    """``tree_features`` of what a decision model's layers read: its derivations
    (``DecisionModel.derive``; None: none) applied to the numeric fields first."""
    if derive is None:
        return tree_features(inputs)
    with torch.no_grad():
        return tree_features(dataclasses.replace(inputs, control_numeric=derive(inputs.control_numeric)))


def out_of_fold_logits(inputs: Any, is_bad: Tensor, folds: int, seed: int) -> Tensor:
    """Per row, the log-odds of bad from a LightGBM fitted on the other ``folds - 1``
    folds' labelled rows (rows assigned to folds at random with ``seed``). Rows without a
    known outcome are scored but never learnt from; NaN where a fold had no teacher."""
    import lightgbm as lgb  # local: only training with a teacher needs it

    x = tree_features(inputs)
    y = is_bad.numpy()
    known = ~np.isnan(y)
    fold_of = np.random.default_rng(seed).integers(0, folds, size=len(y))
    out = np.full(len(y), np.nan, dtype=np.float32)  # NaN: no teacher for the row, no pull
    for k in range(folds):
        fit_rows = known & (fold_of != k)
        if len(np.unique(y[fit_rows])) < 2:  # one class only: no teacher for this fold
            continue
        clf = lgb.LGBMClassifier(**TEACHER_PARAMS, random_state=seed + k)
        clf.fit(x[fit_rows], y[fit_rows].astype(int))
        p = np.asarray(clf.predict_proba(x[fold_of == k]))[:, 1]
        out[fold_of == k] = np.log(np.clip(p, 1e-6, 1 - 1e-6) / np.clip(1 - p, 1e-6, 1))
    return torch.from_numpy(out)
