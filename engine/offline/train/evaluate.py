"""Held-out evaluation for ``engine.offline.train.fit``: per-epoch scores, temperature scaling, report.

Two kinds of held-out truth, either or both present:

* **outcomes** (``is_bad``, NaN = unknown): risk AUC/AP/NLL, the risk temperature, and
  the verdict temperature against the cost-derived verdict targets;
* **rule verdicts** (``soft_verdict``, a cold start): agreement of the model's verdict
  with the rules'. Without any outcome they are the only verdict truth, so the verdict
  temperature is fitted against them and the risk temperature stays 1 (the risk head
  learned nothing: it has no label to learn from).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.nn import functional as F

from engine.model.calibration import fit_temperature, nll
from engine.model.card import ModelCard, Temperatures
from engine.model.decision import DecisionModel
from engine.model.inputs import ModelInputs, inputs_to, take_rows
from engine.model.losses import verdict_targets
from engine.offline.quality import (
    auc_roc,
    average_precision,
    expected_calibration_error,
    plot_confusion,
    plot_pr_curve,
    plot_reliability,
)
from engine.offline.train.sets import LabelledSet, TrainConfig, rule_rows
from engine.records import DECISIONS
from engine.stages.infer import Inference

VERDICT_NAMES = [d.value for d in DECISIONS]


@torch.no_grad()
def predict_logits(model: DecisionModel, inputs: ModelInputs, batch_size: int = 2048) -> dict[str, Tensor]:
    """Raw logits of the final heads for a whole set, in chunks (eval mode)."""
    model.eval()
    device = next(model.parameters()).device  # a model being trained on a GPU is scored there
    chunks: list[dict[str, Tensor]] = []
    n = inputs.batch_size
    for start in range(0, n, batch_size):
        rows = take_rows(inputs, torch.arange(start, min(n, start + batch_size)))
        chunks.append({k: v.cpu() for k, v in model(inputs_to(rows, device)).items()})  # no copies on the CPU
    return {k: torch.cat([c[k] for c in chunks]) for k in chunks[0]} if chunks else {}


def rule_agreement(predicted: Tensor | np.ndarray, rule: Tensor | np.ndarray) -> tuple[float, float]:
    """(share of events where the model's verdict is the rule's, mean over the rule's
    verdicts of that share): the second is 1/3 for a constant guess, whatever the mix.

    >>> rule_agreement(np.array([0, 0, 0, 0]), np.array([0, 0, 0, 2]))
    (0.75, 0.5)
    """
    p, r = np.asarray(predicted), np.asarray(rule)
    if not len(r):
        return float("nan"), float("nan")
    recalls = [float((p[r == c] == c).mean()) for c in np.unique(r)]
    return float((p == r).mean()), float(np.mean(recalls))


def val_scores(model: DecisionModel, val: LabelledSet) -> dict[str, float]:
    """The per-epoch held-out scores (``engine.offline.train.fit`` picks the best epoch from them)."""
    logits = predict_logits(model, val.inputs)
    out: dict[str, float] = {}
    known = ~torch.isnan(val.is_bad)
    if known.any():
        y, r = val.is_bad[known].numpy(), logits["risk"][known]
        out.update({"val_auc_roc": auc_roc(y, torch.sigmoid(r).numpy()),
                    "val_average_precision": average_precision(y, torch.sigmoid(r).numpy()),
                    "val_risk_nll": nll(r, torch.as_tensor(y))})
    ruled = rule_rows(val)
    if ruled is not None and ruled.any():
        v_logits, rule = logits["verdict"][ruled], val.soft_verdict[ruled].argmax(-1)  # type: ignore[index]
        agree, balanced = rule_agreement(v_logits.argmax(-1).numpy(), rule.numpy())
        out.update({"val_rule_agreement": agree, "val_rule_balanced_agreement": balanced,
                    "val_rule_nll": nll(v_logits, rule)})
    return out


def _verdict_metrics(v_logits: Tensor, target: Tensor, t_verdict: float) -> dict[str, Any]:
    probs_raw, probs_cal = F.softmax(v_logits, -1).numpy(), F.softmax(v_logits / t_verdict, -1).numpy()
    return {
        "verdict_nll_raw": nll(v_logits, target), "verdict_nll_calibrated": nll(v_logits, target, t_verdict),
        "verdict_ece_raw": expected_calibration_error(probs_raw, target.numpy()),
        "verdict_ece_calibrated": expected_calibration_error(probs_cal, target.numpy()),
        "verdict_share": {d: float((probs_cal.argmax(1) == i).mean()) for i, d in enumerate(VERDICT_NAMES)},
    }


def calibrate(model: DecisionModel, val: LabelledSet,
              cfg: TrainConfig = TrainConfig()) -> tuple[Temperatures, dict[str, Any]]:
    """Fit verdict and risk temperatures on held-out events; report NLL/ECE before and after."""
    logits = predict_logits(model, val.inputs)
    known = ~torch.isnan(val.is_bad)
    ruled = rule_rows(val)
    has_rules = ruled is not None and bool(ruled.any())
    t_risk = t_verdict = 1.0
    metrics: dict[str, Any] = {"n_val": int(known.sum()), "n_val_bad": int(val.is_bad[known].sum())}
    if known.any():
        y = val.is_bad[known]
        r_logits, v_logits = logits["risk"][known], logits["verdict"][known]
        v_target = verdict_targets(y, torch.sigmoid(r_logits), val.amount[known], cfg.costs, cfg.belief_mix)
        t_risk, t_verdict = fit_temperature(r_logits, y), fit_temperature(v_logits, v_target)
        risk_cal = torch.sigmoid(r_logits / t_risk).numpy()
        metrics.update({
            "auc_roc": auc_roc(y.numpy(), risk_cal), "average_precision": average_precision(y.numpy(), risk_cal),
            "risk_nll_raw": nll(r_logits, y), "risk_nll_calibrated": nll(r_logits, y, t_risk),
            "risk_ece_raw": expected_calibration_error(torch.sigmoid(r_logits).numpy(), y.numpy()),
            "risk_ece_calibrated": expected_calibration_error(risk_cal, y.numpy()),
            **_verdict_metrics(v_logits, v_target, t_verdict)})
    if has_rules:
        v_logits, rule = logits["verdict"][ruled], val.soft_verdict[ruled].argmax(-1)  # type: ignore[index]
        if not known.any():  # cold start: the rules are the only verdict truth there is
            t_verdict = fit_temperature(v_logits, rule)
            metrics.update(_verdict_metrics(v_logits, rule, t_verdict))
        agree, balanced = rule_agreement(v_logits.argmax(-1).numpy(), rule.numpy())
        metrics.update({"rule_agreement": agree, "rule_balanced_agreement": balanced, "n_val_rule": int(ruled.sum()),
                        "rule_verdict_share": {d: float((rule == i).float().mean())
                                               for i, d in enumerate(VERDICT_NAMES)}})
    return Temperatures(verdict=t_verdict, risk=t_risk), metrics


def write_report(model: DecisionModel, card: ModelCard, val: LabelledSet, report_dir: str | Path,
                 cfg: TrainConfig = TrainConfig()) -> Path:
    """metrics.json, and the pictures the held-out truth allows: with outcomes, the
    reliability diagram, verdict-vs-outcome confusion matrix and PR curve (PNG); with
    rule verdicts, the verdict-vs-rule confusion matrix (``rule_confusion.png``)."""
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    outputs = Inference(model, card)(val.inputs)
    verdict = outputs.probs.argmax(-1).numpy()
    known = ~torch.isnan(val.is_bad)
    if known.any():
        y = val.is_bad[known].long().numpy()
        risk = outputs.risk[known].numpy()
        plot_reliability(risk, y, out / "reliability.png")
        # Predicted verdict against the binary outcome: how each verdict splits good and bad.
        plot_confusion(y, verdict[known.numpy()], VERDICT_NAMES, out / "confusion.png",
                       title="Verdict vs outcome (held-out)", true_names=["good", "bad"])
        plot_pr_curve(y, risk, out / "pr_curve.png")
    ruled = rule_rows(val)
    if ruled is not None and ruled.any():
        rule = val.soft_verdict[ruled].argmax(-1).numpy()  # type: ignore[index]
        plot_confusion(rule, verdict[ruled.numpy()], VERDICT_NAMES, out / "rule_confusion.png",
                       title="Verdict vs rule verdict (held-out)",
                       true_names=[f"rule {n}" for n in VERDICT_NAMES])
    (out / "metrics.json").write_text(json.dumps({"version": card.version, "temperature": card.temperature.model_dump(),
                                                  **card.metrics, "history": card.training.get("history", [])},
                                                 indent=2, default=float))
    return out
