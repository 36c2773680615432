"""What training reads: a labelled, encoded set of events, and the training configuration.

Apart from ``fit`` so that evaluation (``evaluate``) can read them without importing the
training loop that calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from engine.model.inputs import ModelInputs, inputs_to, take_rows
from engine.model.losses import VerdictCosts


@dataclass(slots=True)
class LabelledSet:
    """Encoded events with what training needs beside the tensors."""

    inputs: ModelInputs
    is_bad: Tensor  # [N] float: 1 bad, 0 good, NaN = outcome not (yet) known
    amount: Tensor  # [N] float, for the cost-derived verdict targets
    event_time_ms: Tensor  # [N] int64
    #: [N, 3] rule-engine verdicts as soft labels (cold start); a NaN row = no rule verdict.
    soft_verdict: Tensor | None = None
    extra_targets: dict[str, Tensor] = field(default_factory=dict)
    #: [N] float: a teacher's out-of-fold log-odds of bad (``engine.offline.train.teacher``;
    #: NaN = none for the row), or None when training has no teacher.
    teacher_logit: Tensor | None = None

    def __len__(self) -> int:
        return int(self.is_bad.shape[0])

    def rows(self, idx: Tensor) -> LabelledSet:
        return LabelledSet(take_rows(self.inputs, idx), self.is_bad[idx], self.amount[idx],
                           self.event_time_ms[idx],
                           None if self.soft_verdict is None else self.soft_verdict[idx],
                           {k: v[idx] for k, v in self.extra_targets.items()},
                           None if self.teacher_logit is None else self.teacher_logit[idx])

    def to(self, device: torch.device | str) -> LabelledSet:
        """Every tensor on ``device`` (training on a GPU moves each mini-batch)."""
        return LabelledSet(inputs_to(self.inputs, device), self.is_bad.to(device), self.amount.to(device),
                           self.event_time_ms.to(device),
                           None if self.soft_verdict is None else self.soft_verdict.to(device),
                           {k: v.to(device) for k, v in self.extra_targets.items()},
                           None if self.teacher_logit is None else self.teacher_logit.to(device))

    def split_by_time(self, val_fraction: float) -> tuple[LabelledSet, LabelledSet]:
        """Earlier events train, the latest ``val_fraction`` validate (no look-ahead)."""
        order = torch.argsort(self.event_time_ms, stable=True)
        n_val = int(round(len(self) * val_fraction))
        return self.rows(order[: len(self) - n_val]), self.rows(order[len(self) - n_val:])


class TrainConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 0
    #: 14: the configuration the published handbook figures were measured with
    #: (docs/decision-model.md); quick runs (tests, quickstart) pass fewer.
    epochs: int = Field(default=14, ge=1)
    batch_size: int = Field(default=128, ge=1)
    lr: float = Field(default=3e-3, gt=0)
    weight_decay: float = Field(default=1e-4, ge=0)
    focal_gamma: float = Field(default=2.0, ge=0)
    risk_weight: float = Field(default=1.0, ge=0)
    verdict_weight: float = Field(default=0.5, ge=0)
    collapse_weight: float = Field(default=0.1, ge=0)
    soft_label_weight: float = Field(default=0.5, ge=0)
    exit_weight: float = Field(default=0.5, ge=0)
    #: Weight of the model's own risk estimate in the belief behind verdict targets
    #: (ramped up from 0 over the first epoch, while that estimate is still noise).
    belief_mix: float = Field(default=0.5, ge=0, le=1)
    costs: VerdictCosts = Field(default_factory=VerdictCosts)
    #: Re-sampling: each epoch keeps every bad (and unlabelled) event and this share of
    #: the good ones, drawn afresh, so epochs are short but all data is seen. The risk
    #: loss adds log(1/keep) to the logit (logit adjustment), so the head still learns
    #: the natural-prior probability and only needs a temperature.
    negative_keep: float = Field(default=1.0, gt=0, le=1)
    val_fraction: float = Field(default=0.15, ge=0, lt=1)
    #: Per training row and user-text field, the chance that the field is blanked, as if
    #: the event had come without it; the row keeps its labels. Without it the model saw
    #: no event without a descriptor and learned that text means safety: any polite memo
    #: lowered the risk score (issue 22). Chosen on validation data, measured with
    #: ``python ops/bench/user_text_train.py`` (docs/field-isolation.md). 0: off.
    text_dropout: float = Field(default=0.5, ge=0, le=1)
    #: Token positions of each user-text field in ``text_ids``, in order: what
    #: ``text_dropout`` blanks as one field. None: the encoder's ``TEXT_FIELDS`` when they
    #: cover the inputs' text segment, else the whole segment as one field.
    text_field_lengths: tuple[int, ...] | None = None
    #: 1 by default: on a shared, oversubscribed CPU two OpenMP threads spin and run many
    #: times slower (docs/performance.md, "Quickstart"); raise it on a dedicated machine.
    threads: int = Field(default=1, ge=1)
    early_exit_threshold: float | None = 0.98
    #: Keep the mean of the weights after each of the last this-many epochs instead of the
    #: single epoch with the best held-out AP (0: the best epoch). With the one-cycle
    #: schedule the last epochs run at a small learning rate near one optimum, so their
    #: mean is a flatter solution (stochastic weight averaging, Izmailov et al. 2018) and
    #: no longer hangs on one noisy held-out day with ~80 frauds.
    #: ``python ops/bench/model_quality.py --variant avg='{"average_last": 4}'``.
    average_last: int = Field(default=0, ge=0)
    #: The held-out metric that picks the epoch (without ``average_last``): outcome AP, AUC
    #: ROC, or the risk head's NLL, a proper score over every held-out row rather than the
    #: ranks of the ~80 frauds of one held-out day.
    #: ``python ops/bench/quality_sweep.py --variant nll='{"select_epoch_by": "risk_nll"}'``.
    select_epoch_by: Literal["average_precision", "auc_roc", "risk_nll"] = "average_precision"
    #: Distillation from a gradient-boosted teacher (``engine.offline.train.teacher``):
    #: weight of the pull of the risk head toward LightGBM's out-of-fold log-odds, fitted on
    #: ``distill_folds`` folds of the training part. 0: off (no LightGBM is fitted).
    #: ``python ops/bench/quality_sweep.py --variant distill='{"distill_weight": 0.5}'``.
    distill_weight: float = Field(default=0.0, ge=0)
    distill_folds: int = Field(default=4, ge=2)
    #: Weight of gradient-boosted trees blended into the served model (engine.model.trees):
    #: after the network is trained and calibrated, XGBoost is fitted on the same training
    #: rows and the model serves, at 0.5, the mean of the two calibrated log-odds. 0: the
    #: network alone (no trees are fitted). 0.5 won on the four validation folds, fixed
    #: before any run (docs/decision-quality.md, "The served blend");
    #: ``python ops/bench/quality_sweep.py --variant blend='{"tree_blend": 0.5}'``.
    tree_blend: float = Field(default=0.5, ge=0, le=1)
    #: Once the blend is calibrated, fit the trees again on every labelled row, the held-out
    #: tail included (the same configuration; the temperatures stay), so that the served
    #: trees know the latest day as the network's what-if trees did. False: the trees fitted
    #: on the training part alone are served.
    #: ``python ops/bench/quality_sweep.py --variant split='{"tree_refit": false}'``.
    tree_refit: bool = True
    #: Weight of a pairwise ranking loss on the risk head (``losses.pairwise_rank_loss``,
    #: every bad row of a mini-batch against every good one), beside its BCE. 0: off.
    #: ``python ops/bench/quality_sweep.py --variant rank='{"rank_weight": 0.1}'``.
    rank_weight: float = Field(default=0.0, ge=0)
    #: Mixture-of-experts layers only (``ModelConfig.moe_experts``): weight of the
    #: load-balance loss, and the variance of the per-expert token share (over experts,
    #: mean over layers, per epoch) above which that weight is doubled for the next epoch
    #: (at most to 1.0). 0.01 is e.g. shares 0.40/0.20/0.20/0.20 over four experts.
    moe_aux_weight: float = Field(default=0.05, ge=0)
    moe_load_variance_limit: float = Field(default=0.01, gt=0)
    progress: bool = True
    #: Where the forward and backward passes run: "cpu", or "cuda" on a GPU machine (a
    #: sweep of many configurations; docs/gpu.md). Input statistics, the epoch choice,
    #: calibration and the saved model are the same code either way, on the CPU; the
    #: trained weights differ from a CPU run's by floating-point order, like another seed.
    device: str = "cpu"


def rule_rows(data: LabelledSet) -> Tensor | None:
    """[N] bool: rows that carry a rule verdict (None: no soft labels at all)."""
    if data.soft_verdict is None:
        return None
    return ~torch.isnan(data.soft_verdict).any(-1)
