"""Fitting the trees a model serves blended with its network (``TrainConfig.tree_blend``).

``train_model`` fits XGBoost twice:
- first on the training part's labelled rows, so that the blend is calibrated on a
  held-out tail that the trees never saw;
- then, with ``tree_refit``, again on every labelled row, tail included, for serving.

Both fits read the table ``engine.model.trees.tree_inputs`` builds from what the network's
layers read (``teacher.derived_tree_features``). The configuration is the one the XGBoost
grid chose on the four validation folds for these inputs (``TREE_PARAMS``; ``python
ops/bench/handbook_baselines.py --inputs network --families xgboost``). A fitted booster
becomes a ``TreeEnsemble`` inside the model, after a check against XGBoost's own margins.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from engine.model.decision import DecisionModel
from engine.model.trees import TreeEnsemble
from engine.offline.train.teacher import derived_tree_features

#: docs/decision-quality.md, "the trees tuned on the network's own inputs": the XGBoost
#: grid's choice on the validation folds (mean AP), the same as ``auc_split.XGB_NET_IN``.
TREE_PARAMS: dict[str, Any] = {"max_depth": 9, "n_estimators": 100, "learning_rate": 0.03}
#: Largest allowed difference between the installed ensemble's log-odds and XGBoost's.
AGREEMENT = 1e-3


def fit_trees(model: DecisionModel, inputs: Any, is_bad: torch.Tensor, weight: float, seed: int,
              threads: int = 1, t_risk: float = 1.0, t_verdict: float = 1.0) -> TreeEnsemble | None:
    """The ensemble for ``model``, fitted on the rows of ``inputs`` with a known outcome
    (``is_bad`` 1 or 0; NaN rows are left out). None when those rows hold one class only:
    there is nothing to blend, and the model is served as its network."""
    import xgboost  # local: only training with the blend fits trees

    x = derived_tree_features(inputs, model.derive)
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
