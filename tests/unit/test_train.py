"""Training: deterministic with a seed, learns a tiny synthetic rule, writes its report."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import torch
from torch.nn import functional as F

from engine.model import InputSpec, ModelConfig
from engine.model.inputs import random_inputs
from engine.model.losses import VerdictCosts, collapse_penalty, focal_loss, verdict_targets
from engine.offline.train import fit
from engine.offline.train.fit import train_model
from engine.offline.train.sets import LabelledSet, TrainConfig

SPEC = InputSpec(n_numeric=3, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                 history_categorical=1, text_len=2, text_vocab=10, schema_hash="tiny")
CFG = ModelConfig(inputs=SPEC, d_model=16, n_heads=2, n_layers=1, numeric_tokens=0, dropout=0.0)


def tiny_set(n: int = 480, seed: int = 0) -> LabelledSet:
    inputs = random_inputs(SPEC, n, seed=seed)
    is_bad = (inputs.control_numeric[:, 0] > 1.0).float()  # ~16 % bad, visible in one field
    amount = torch.full((n,), 80.0)
    return LabelledSet(inputs, is_bad, amount, torch.arange(n, dtype=torch.int64) * 1000)


def fast(**kw) -> TrainConfig:
    return TrainConfig(**{"epochs": 5, "batch_size": 32, "lr": 1e-2, "threads": 1, "progress": False,
                          "val_fraction": 0.25, **kw})


def risk_gradient_of(data: LabelledSet) -> tuple[fit.DecisionModel, Callable[[LabelledSet, TrainConfig], torch.Tensor]]:
    """One untrained tiny model, and ``gradient(batch, cfg)``: d(training loss)/d(its
    risk logits) on ``batch`` under ``cfg``; what a loss term adds is the difference."""
    model = fit.DecisionModel(CFG)
    model.fit_input_statistics(data.inputs, data.is_bad)
    stats = fit._target_stats(data, TrainConfig())

    def gradient(batch: LabelledSet, cfg: TrainConfig) -> torch.Tensor:
        out = model(batch.inputs)
        out["risk"].retain_grad()
        fit._losses(model, out, batch, cfg, 0.0, stats)[0].backward()
        return out["risk"].grad

    return model, gradient


def test_training_is_deterministic_for_a_seed_and_learns():
    data = tiny_set()
    a = train_model(data, CFG, fast(seed=7))
    b = train_model(data, CFG, fast(seed=7))
    assert all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), b.model.state_dict().values()))
    losses = [h["train_loss"] for h in a.history]
    assert losses[-1] < losses[0]
    assert a.val_metrics["auc_roc"] > 0.85
    c = train_model(data, CFG, fast(seed=8))
    assert not all(torch.equal(x, y) for x, y in zip(a.model.state_dict().values(), c.model.state_dict().values()))


def test_report_directory_has_metrics_and_pictures(tmp_path):
    result = train_model(tiny_set(), CFG, fast(epochs=1, negative_keep=0.5), version="t1", report_dir=tmp_path)
    assert {"metrics.json", "reliability.png", "confusion.png", "pr_curve.png"} <= {p.name for p in tmp_path.iterdir()}
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["version"] == "t1" and "risk_ece_calibrated" in metrics
    assert result.card.temperature.risk > 0
    # the card's window is all the model saw: the fitted part and the held-out tail (25 %)
    assert result.card.data_window == (0, 479 * 1000 + 1)
    assert result.card.training["fit_window"] == (0, 359 * 1000 + 1)
    assert result.card.training["heldout_window"] == (360 * 1000, 479 * 1000 + 1)


def test_focal_loss_down_weights_easy_examples():
    logits = torch.tensor([[5.0, 0.0, 0.0], [0.2, 0.0, 0.0]])
    target = torch.tensor([0, 0])
    easy, hard = (focal_loss(logits[i:i + 1], target[:1]) for i in (0, 1))
    ce_easy, ce_hard = (F.cross_entropy(logits[i:i + 1], target[:1]) for i in (0, 1))
    assert easy / ce_easy < hard / ce_hard  # the easy one loses relatively more weight
    assert torch.isclose(focal_loss(logits, target, gamma=0.0), F.cross_entropy(logits, target))


def test_collapse_penalty_grows_when_one_verdict_swallows_the_rest():
    prior = torch.tensor([0.9, 0.05, 0.05])
    healthy = torch.log(prior).expand(10, 3)
    collapsed = torch.tensor([[10.0, 0.0, 0.0]]).expand(10, 3)
    assert collapse_penalty(healthy, prior) < 1e-4 < collapse_penalty(collapsed, prior)


def test_verdict_targets_follow_costs_and_review_price():
    y = torch.tensor([0.0, 0.0, 1.0])
    p = torch.tensor([0.01, 0.9, 0.9])
    amount = torch.tensor([60.0, 60.0, 60.0])
    assert verdict_targets(y, p, amount, VerdictCosts(), mix=0.5).tolist() == [0, 1, 2]
    # reviews made expensive (capacity exhausted): the suspicious good event is passed or rejected instead
    assert verdict_targets(y, p, amount, VerdictCosts(review=1000.0), mix=0.5)[1] != 1
    # with the label alone (mix 0) review is never the cheapest action
    assert 1 not in verdict_targets(y, p, amount, VerdictCosts(), mix=0.0).tolist()


def test_average_last_keeps_the_mean_of_the_last_epochs_weights():
    from engine.offline.train.fit import _accumulate

    snapshots = [{"w": torch.tensor([1.0, 2.0]) * k, "edges": torch.tensor([3, 4])} for k in (1, 2, 6)]
    mean = None
    for i, state in enumerate(snapshots):
        mean = _accumulate(mean, state, i)
    assert torch.allclose(mean["w"], torch.tensor([3.0, 6.0]))
    assert torch.equal(mean["edges"], torch.tensor([3, 4]))  # fitted integer buffers kept as they are
    assert torch.equal(snapshots[0]["w"], torch.tensor([1.0, 2.0]))  # the first snapshot was copied, not aliased

    # Wiring: averaging one epoch is the last epoch (no held-out part, so no best-epoch pick);
    # averaging three is a different model that still learned the rule.
    data = tiny_set()
    last = train_model(data, CFG, fast(val_fraction=0.0, epochs=4)).model.state_dict()
    one = train_model(data, CFG, fast(val_fraction=0.0, epochs=4, average_last=1)).model.state_dict()
    assert all(torch.equal(last[k], one[k]) for k in last)
    three = train_model(data, CFG, fast(epochs=4, average_last=3))
    assert not all(torch.equal(last[k], v) for k, v in three.model.state_dict().items())
    assert three.val_metrics["auc_roc"] > 0.85


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (ops/bench/quality_sweep.py --device cuda)")
def test_training_on_cuda_learns_and_hands_back_a_cpu_model():
    """``TrainConfig.device="cuda"``: the passes run on the GPU, the model comes back on the
    CPU (calibrated there, saved and served like any other), and it learns what a CPU run
    learns, up to floating-point order."""
    data = tiny_set()
    gpu = train_model(data, CFG, fast(seed=7, device="cuda"))
    cpu = train_model(data, CFG, fast(seed=7))
    assert all(p.device.type == "cpu" for p in gpu.model.parameters())
    assert gpu.history[-1]["train_loss"] < gpu.history[0]["train_loss"]
    assert gpu.val_metrics["auc_roc"] > 0.85
    assert abs(gpu.val_metrics["auc_roc"] - cpu.val_metrics["auc_roc"]) < 0.05
    assert gpu.card.training["device"] == "cuda"


def test_a_labelled_set_moves_whole():
    data = tiny_set(8)
    moved = data.to("cpu")
    assert len(moved) == 8 and torch.equal(moved.inputs.control_numeric, data.inputs.control_numeric)
    assert torch.equal(moved.is_bad, data.is_bad) and moved.soft_verdict is None


def test_the_epoch_is_picked_by_the_metric_chosen_and_falls_back_without_frauds():
    # epoch 1 ranks better (AP, AUC), epoch 2 is better calibrated (NLL)
    first = {"val_average_precision": 0.7, "val_auc_roc": 0.9, "val_risk_nll": 0.05}
    second = {"val_average_precision": 0.6, "val_auc_roc": 0.8, "val_risk_nll": 0.03}
    for by, better in (("average_precision", first), ("auc_roc", first), ("risk_nll", second)):
        scores = {id(r): fit._selection_score(r, by) for r in (first, second)}
        assert max(scores, key=lambda k: scores[k]) == id(better), by
    no_fraud = {"val_average_precision": float("nan"), "val_auc_roc": float("nan"), "val_risk_nll": 0.04}
    assert fit._selection_score(no_fraud, "auc_roc") == -0.04
    trained = train_model(tiny_set(), CFG, fast(seed=3, select_epoch_by="risk_nll"))
    assert trained.card.training["select_epoch_by"] == "risk_nll"
