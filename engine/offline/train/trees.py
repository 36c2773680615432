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
from engine.model.heads import not_pass_log_odds
from engine.model.inputs import take_rows
from engine.model.trees import TreeEnsemble, network_alone
from engine.offline.train.teacher import derived_tree_features

#: docs/decision-quality.md, "the trees tuned on the network's own inputs": the XGBoost
#: grid's choice on the validation folds (mean AP), the same as ``auc_split.XGB_NET_IN``.
TREE_PARAMS: dict[str, Any] = {"max_depth": 9, "n_estimators": 100, "learning_rate": 0.03}
#: Largest allowed difference between the installed ensemble's log-odds and XGBoost's.
AGREEMENT = 1e-3


def verdict_offset(model: DecisionModel, inputs: Any, t_risk: float, t_verdict: float,
                   rows: int = 20_000) -> float:
    """The median, over (up to ``rows`` evenly spaced) rows, of the network's calibrated
    not-pass log-odds minus its calibrated risk log-odds: where the verdict head's level
    sits against the risk head's (``TreeEnsemble.verdict_offset``)."""
    n = int(inputs.control_numeric.shape[0])
    idx = torch.linspace(0, n - 1, steps=min(n, rows)).long()
    with torch.no_grad(), network_alone(model):
        out = model.eval()(take_rows(inputs, idx))
    gap = not_pass_log_odds(out["verdict"].float() / t_verdict) - out["risk"].float() / t_risk
    return float(gap.median())


def fit_trees(model: DecisionModel, inputs: Any, is_bad: torch.Tensor, weight: float, seed: int,
              threads: int = 1, t_risk: float = 1.0, t_verdict: float = 1.0,
              offset: float | None = None) -> TreeEnsemble | None:
    """The ensemble for ``model``, fitted on the rows of ``inputs`` with a known outcome
    (``is_bad`` 1 or 0; NaN rows are left out). None when those rows hold one class only:
    there is nothing to blend, and the model is served as its network.

    ``offset``: the verdict offset to install (default: ``verdict_offset`` over ``inputs``).
    The refit passes the first fit's, which the blend's temperatures were calibrated with."""
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
    ensemble = TreeEnsemble.from_xgboost(booster, weight, x.shape[1], t_risk=t_risk, t_verdict=t_verdict,
                                         verdict_offset=(verdict_offset(model, inputs, t_risk, t_verdict)
                                                         if offset is None else offset))
    sample = x[: min(len(x), 4096)]
    with torch.no_grad():
        ours = ensemble.margin(torch.from_numpy(sample)).numpy()
    theirs = booster.predict(xgboost.DMatrix(sample), output_margin=True)
    worst = float(np.abs(ours - theirs).max(initial=0.0))
    if worst > AGREEMENT:
        raise RuntimeError(f"the installed trees disagree with XGBoost by {worst:.2e} log-odds")
    return ensemble
