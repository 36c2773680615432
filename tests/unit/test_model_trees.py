"""Trees blended into the decision model (``engine.model.trees``, ``TrainConfig.tree_blend``):
XGBoost's own margins, the blend's arithmetic, and a trained model that carries them
through its directory."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import xgboost

from engine.model import load_model_dir, random_inputs, save_model_dir
from engine.model.config import TreeShape
from engine.model.decision import DecisionModel
from engine.model.heads import not_pass_log_odds
from engine.model.trees import TreeEnsemble, network_alone, tree_inputs
from engine.offline.train import fit
from engine.offline.train.trees import fit_trees
from tests.unit.test_train import CFG, SPEC, fast, tiny_set


def _booster(x: np.ndarray, y: np.ndarray, **params) -> xgboost.Booster:
    clf = xgboost.XGBClassifier(n_jobs=1, random_state=0, verbosity=0, eval_metric="logloss",
                                **{"max_depth": 6, "n_estimators": 40, "learning_rate": 0.1, **params})
    return clf.fit(x, y).get_booster()


def test_the_ensemble_gives_xgboosts_margins_missing_values_included():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 7)).astype(np.float32)
    x[::11, 2] = np.nan  # missing values take each split's default branch
    y = (x[:, 0] + np.nan_to_num(x[:, 2], nan=2.0) * x[:, 1] + rng.normal(size=3000) > 0.8).astype(int)
    booster = _booster(x, y)
    ensemble = TreeEnsemble.from_xgboost(booster, weight=0.5, n_features=7)
    fresh = rng.normal(size=(2000, 7)).astype(np.float32)
    fresh[::7, 2] = np.nan
    theirs = booster.predict(xgboost.DMatrix(fresh), output_margin=True)
    ours = ensemble.margin(torch.from_numpy(fresh)).numpy()
    assert np.abs(ours - theirs).max() < 1e-4
    assert ensemble.shape.n_trees == 40 and ensemble.shape.depth <= 6
    # a value exactly on a threshold goes right, as in XGBoost (x < threshold goes left)
    root = int(ensemble.feature[0])
    on = np.zeros((1, 7), dtype=np.float32)
    on[0, root] = float(ensemble.threshold[0])
    assert abs(float(ensemble.margin(torch.from_numpy(on))[0])
               - float(booster.predict(xgboost.DMatrix(on), output_margin=True)[0])) < 1e-4


def test_other_objectives_and_too_few_fields_are_refused():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(500, 4)).astype(np.float32)
    y = (x[:, 3] > 0).astype(int)
    with pytest.raises(ValueError, match="beyond the 3"):
        TreeEnsemble.from_xgboost(_booster(x, y), weight=0.5, n_features=3)
    regressor = xgboost.XGBRegressor(n_estimators=5, n_jobs=1).fit(x, x[:, 0]).get_booster()
    with pytest.raises(ValueError, match="binary:logistic"):
        TreeEnsemble.from_xgboost(regressor, weight=0.5, n_features=4)


def test_the_blend_is_the_mean_of_calibrated_log_odds_in_both_heads():
    data = tiny_set(n=600)
    network = DecisionModel(CFG).eval()
    trees = fit_trees(network, data.inputs, data.is_bad, weight=0.5, seed=0, t_risk=2.0, t_verdict=1.5)
    assert trees is not None
    offset = float(trees.verdict_offset)
    x = random_inputs(SPEC, 64, seed=3)
    with torch.no_grad():
        alone = network(x)
        margin = trees.margin(tree_inputs(network._inputs(x)))
        blended = network.with_trees(trees)(x)
    # calibrated at the network's own temperatures, risk is the mean of the two log-odds
    assert torch.allclose(blended["risk"] / 2.0, 0.5 * alone["risk"] / 2.0 + 0.5 * margin, atol=1e-5)
    # the verdict's not-pass log-odds too, the trees' brought to the verdict head's level;
    # pass does not move, and review and reject move together
    g_alone, g_blend = (not_pass_log_odds(out["verdict"] / 1.5) for out in (alone, blended))
    assert torch.allclose(g_blend, 0.5 * g_alone + 0.5 * (margin + offset), atol=1e-5)
    moved = blended["verdict"] - alone["verdict"]
    assert torch.equal(moved[:, 0], torch.zeros(64)) and torch.allclose(moved[:, 1], moved[:, 2])
    # the offset is where the network's verdict level sits against its risk level
    with torch.no_grad(), network_alone(network):
        out = network(data.inputs)
    gap = not_pass_log_odds(out["verdict"] / 1.5) - out["risk"] / 2.0
    assert abs(float(gap.median()) - offset) < 1e-4


def test_the_fine_tune_teaches_the_network_alone_and_keeps_the_trees(monkeypatch):
    """A blend's fine-tune trains the network on its own outputs (``network_alone``): the
    verdict is blended against the network's own not-pass odds, so what the fine-tune
    teaches reaches the served verdict in the direction it was taught."""
    from feedback.learn.finetune import FineTuneConfig, fine_tune

    data = tiny_set(n=600)
    network = DecisionModel(CFG).eval()
    trees = fit_trees(network, data.inputs, data.is_bad, weight=0.5, seed=0)
    assert trees is not None
    model = network.with_trees(trees)
    walks: list[int] = []
    margin = TreeEnsemble.margin
    monkeypatch.setattr(TreeEnsemble, "margin", lambda self, x: walks.append(len(x)) or margin(self, x))
    candidate, report = fine_tune(model, data.inputs, data.is_bad, FineTuneConfig(max_steps=20, epochs=4),
                                  progress=False)
    assert report.steps == 20 and walks == []  # the trees were never walked while training
    assert candidate.trees is not None and candidate.trees.enabled and model.trees.enabled
    for name in ("feature", "threshold", "leaf_value", "verdict_offset", "t_risk"):
        assert torch.equal(getattr(candidate.trees, name), getattr(model.trees, name)), name
    assert report.weight_drift > 0
    with torch.no_grad():
        served = candidate(random_inputs(SPEC, 32, seed=1))
        again = model(random_inputs(SPEC, 32, seed=1))
    assert not torch.equal(served["verdict"], again["verdict"])  # the network half moved
    assert walks == [32, 32]  # and served, both walk their trees


def test_half_precision_keeps_the_thresholds_exact():
    data = tiny_set(n=600)
    network = DecisionModel(CFG).eval()
    trees = fit_trees(network, data.inputs, data.is_bad, weight=0.5, seed=0)
    assert trees is not None
    before = trees.threshold.clone()
    trees.half()
    assert trees.threshold.dtype == torch.float32 and torch.equal(trees.threshold, before)
    assert trees.leaf_value.dtype == torch.float32


def test_one_class_or_no_outcome_fits_no_trees():
    data = tiny_set(n=300)
    network = DecisionModel(CFG).eval()
    assert fit_trees(network, data.inputs, torch.zeros(300), weight=0.5, seed=0) is None
    assert fit_trees(network, data.inputs, torch.full((300,), math.nan), weight=0.5, seed=0) is None


def test_a_model_trained_with_the_blend_carries_its_trees_through_its_directory(tmp_path):
    torch.set_num_threads(1)
    data = tiny_set(n=1200)
    result = fit.train_model(data, CFG, fast(tree_blend=0.5))
    shape = result.card.architecture.trees
    assert isinstance(shape, TreeShape) and shape.weight == 0.5 and result.model.trees is not None
    assert shape.n_features == SPEC.n_numeric + 1  # the numeric fields, then the one id there is
    path = save_model_dir(result.model, result.card, tmp_path / "m")
    loaded = load_model_dir(path)
    assert loaded.model.trees is not None
    x = random_inputs(SPEC, 200, seed=9)
    with torch.no_grad():
        a, b = result.model(x), loaded.model(x)
    assert torch.equal(a["risk"], b["risk"]) and torch.equal(a["verdict"], b["verdict"])
    # served: the trees refitted on every labelled row, the held-out tail included, with the
    # temperatures of the calibration, whose trees had not seen the tail
    served = loaded.model.trees
    again = fit_trees(result.model, data.inputs, data.is_bad, weight=0.5, seed=0)
    assert again is not None and torch.equal(again.leaf_value, served.leaf_value)
    split = fit.train_model(data, CFG, fast(tree_blend=0.5, tree_refit=False))
    head, _ = data.split_by_time(0.25)
    calibrated = fit_trees(split.model, head.inputs, head.is_bad, weight=0.5, seed=0)
    assert split.model.trees is not None and calibrated is not None
    assert torch.equal(calibrated.leaf_value, split.model.trees.leaf_value)
    assert not torch.equal(calibrated.leaf_value[: served.leaf_value.numel()], served.leaf_value) or \
        calibrated.leaf_value.numel() != served.leaf_value.numel()
    assert float(served.t_risk) == float(split.model.trees.t_risk)  # the network's own, the same training
    # at weight 0 no trees are fitted, and the card says so; 0.5 is the trainers' default
    plain = fit.train_model(data, CFG, fast(tree_blend=0.0))
    assert plain.card.architecture.trees is None and plain.model.trees is None
    assert fast().tree_blend == 0.5


def test_the_refit_keeps_the_verdict_offset_the_blend_was_calibrated_with(monkeypatch):
    """The blend's temperatures are fitted with the first fit's verdict offset; the refit
    installs that offset, not one recomputed over its own rows."""
    torch.set_num_threads(1)
    calls: list[tuple[float | None, TreeEnsemble | None]] = []

    def recording(*args, **kwargs):
        trees = fit_trees(*args, **kwargs)
        calls.append((kwargs.get("offset"), trees))
        return trees

    monkeypatch.setattr(fit, "fit_trees", recording)
    result = fit.train_model(tiny_set(n=1200), CFG, fast(tree_blend=0.5))
    (first_offset, first), (refit_offset, served) = calls
    assert first_offset is None and first is not None and served is not None
    assert refit_offset == float(first.verdict_offset) == float(served.verdict_offset)
    assert result.model.trees is served
    # the parameter itself: an offset given is the one installed
    x = tiny_set(n=300)
    given = fit_trees(result.model, x.inputs, x.is_bad, weight=0.5, seed=0, offset=1.25)
    assert given is not None and float(given.verdict_offset) == 1.25


def test_the_fine_tunes_level_match_moves_a_blends_risk_and_not_its_verdicts():
    from feedback.learn.finetune import match_risk_level

    data = tiny_set(n=600)
    network = DecisionModel(CFG).eval()
    trees = fit_trees(network, data.inputs, data.is_bad, weight=0.5, seed=0, t_risk=1.3)
    assert trees is not None
    model = network.with_trees(trees)
    x = random_inputs(SPEC, 300, seed=4)
    with torch.no_grad():
        before = model(x)
    match_risk_level(model, x, target_mean=0.05, temperature=1.3)
    with torch.no_grad():
        after = model(x)
    assert abs(float(torch.sigmoid(after["risk"] / 1.3).mean()) - 0.05) < 1e-3
    assert torch.equal(after["verdict"], before["verdict"])
    assert not torch.equal(after["risk"], before["risk"])
