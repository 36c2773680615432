"""Fitting the trees a model serves blended with its network (``TrainConfig.tree_blend``).

XGBoost is fitted on the training part's labelled rows (never the held-out tail, which
picks the epoch and fits the temperatures), on the table ``engine.model.trees.tree_inputs``
builds from what the network's layers read. Its configuration is the one the XGBoost
grid chose on the four validation folds for these inputs (``TREE_PARAMS``;
``python ops/bench/handbook_baselines.py --inputs network --families xgboost``).
The fitted booster becomes a ``TreeEnsemble`` inside the model; it is checked against
XGBoost's own margins before it is installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from engine.model.decision import DecisionModel
from engine.model.trees import TreeEnsemble, tree_inputs

#: docs/decision-quality.md, "the trees tuned on the network's own inputs": the XGBoost
#: grid's choice on the validation folds (mean AP), the same as ``auc_split.XGB_NET_IN``.
TREE_PARAMS: dict[str, Any] = {"max_depth": 9, "n_estimators": 100, "learning_rate": 0.03}
#: Largest allowed difference between the installed ensemble's log-odds and XGBoost's.
AGREEMENT = 1e-3


def layer_table(model: DecisionModel, inputs: Any) -> np.ndarray:
    """``tree_inputs`` of what ``model``'s layers read (its derivations applied first)."""
    with torch.no_grad():
        return tree_inputs(model._inputs(inputs)).numpy()


def fit_trees(model: DecisionModel, inputs: Any, is_bad: torch.Tensor, weight: float, seed: int,
              threads: int = 1, t_risk: float = 1.0, t_verdict: float = 1.0) -> TreeEnsemble | None:
    """The ensemble for ``model``, fitted on the rows of ``inputs`` with a known outcome
    (``is_bad`` 1 or 0; NaN rows are left out). None when those rows hold one class only:
    there is nothing to blend, and the model is served as its network."""
    import xgboost  # local: only training with the blend fits trees

    x = layer_table(model, inputs)
    y = is_bad.numpy()
    known = ~np.isnan(y)
    if len(np.unique(y[known])) < 2:
        return None
    clf = xgboost.XGBClassifier(random_state=seed, n_jobs=max(1, threads), verbosity=0, eval_metric="logloss",
                                **TREE_PARAMS)
    clf.fit(x[known], y[known].astype(int))
    booster = clf.get_booster()
    ensemble = TreeEnsemble.from_xgboost(booster, weight, x.shape[1], t_risk=t_risk, t_verdict=t_verdict)
    sample = x[: min(len(x), 4096)]
    with torch.no_grad():
        ours = ensemble.margin(torch.from_numpy(sample)).numpy()
    theirs = booster.predict(xgboost.DMatrix(sample), output_margin=True)
    worst = float(np.abs(ours - theirs).max(initial=0.0))
    if worst > AGREEMENT:
        raise RuntimeError(f"the installed trees disagree with XGBoost by {worst:.2e} log-odds")
    return ensemble
