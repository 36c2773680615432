"""Training losses: focal verdict loss, risk loss, anti-collapse regulariser, and the
cost rule that turns a binary outcome into a three-way verdict target.

How three verdicts are learned from binary outcomes (see docs/decision-model.md):
an outcome only says *bad* or *good*; with the label known, ``review`` is never the
best action. Review is the best action under *uncertainty*. So each event's target
verdict is the cheapest action under a belief ``b`` that mixes its label with the
model's own (detached) risk estimate: ``b = (1 - s) * y + s * p_hat``. With amount A,
``cost(pass) = b * A`` (the loss if it was fraud), ``cost(review) = c_review + b * A *
review_miss_rate`` (an analyst's time, and the frauds they miss) and ``cost(reject) =
(1 - b) * (decline_fixed + decline_share * A)`` (a good customer turned away). A good
event that looks risky becomes a *review* target; a bad one becomes *reject*. The review
price ``c_review`` is the shadow price of review capacity: raise it and fewer events
become review targets.

>>> import torch
>>> costs = VerdictCosts()
>>> y = torch.tensor([0., 0., 1.]); p = torch.tensor([0.01, 0.95, 0.6]); a = torch.tensor([50., 50., 50.])
>>> verdict_targets(y, p, a, costs, mix=0.5).tolist()   # pass, review, reject
[0, 1, 2]
"""

from __future__ import annotations

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor
from torch.nn import functional as F


class VerdictCosts(BaseModel):
    """Costs (in the event's currency) that shape the verdict targets."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    review: float = Field(default=5.0, ge=0)
    review_miss_rate: float = Field(default=0.05, ge=0, le=1)
    decline_fixed: float = Field(default=5.0, ge=0)
    decline_share: float = Field(default=0.2, ge=0)


def verdict_costs(belief: Tensor, amount: Tensor, costs: VerdictCosts) -> Tensor:
    """[N, 3] expected cost of pass / review / reject under belief ``b`` of a bad outcome."""
    a = amount.clamp_min(0)
    return torch.stack([
        belief * a,
        costs.review + belief * a * costs.review_miss_rate,
        (1 - belief) * (costs.decline_fixed + costs.decline_share * a),
    ], dim=-1)


def verdict_targets(is_bad: Tensor, risk_prob: Tensor, amount: Tensor, costs: VerdictCosts,
                    mix: float) -> Tensor:
    """Cost-optimal verdict index per event under ``b = (1 - mix) * y + mix * p_hat``."""
    belief = (1 - mix) * is_bad.float() + mix * risk_prob.detach().float()
    return verdict_costs(belief, amount, costs).argmin(dim=-1)


def focal_loss(logits: Tensor, target: Tensor, gamma: float = 2.0, alpha: Tensor | None = None,
               soft: Tensor | None = None) -> Tensor:
    """Multi-class focal loss (Lin et al., 2017), optionally against soft targets.

    ``(1 - p_t)^gamma`` down-weights the easy majority (obvious passes) so the few hard
    events shape the boundary; ``alpha`` re-weights classes.

    >>> logits = torch.tensor([[4., 0., 0.], [0., 0., 4.]]); t = torch.tensor([0, 0])
    >>> focal_loss(logits, t, gamma=2.0) < F.cross_entropy(logits, t)
    tensor(True)
    """
    logp = F.log_softmax(logits, dim=-1)
    target_dist = soft if soft is not None else F.one_hot(target, logits.shape[-1]).to(logp.dtype)
    weight = (1 - logp.exp()).pow(gamma) * target_dist
    if alpha is not None:
        weight = weight * alpha
    return -(weight * logp).sum(-1).mean()


def pairwise_rank_loss(logits: Tensor, is_bad: Tensor) -> Tensor:
    """RankNet's logistic surrogate of 1 - AUC over the batch: the mean of
    ``softplus(good - bad)`` over every (bad, good) pair of rows. Zero pairs (a batch
    without a bad or without a good row) give zero. Unlike the risk head's BCE, whose
    gradient fades on rows already far on the right side of 0.5, it keeps pulling a
    bad row above every good row it still ranks below, which is what AUC counts.

    >>> y = torch.tensor([1., 0., 0.])
    >>> bool(pairwise_rank_loss(torch.tensor([3., 0., 0.]), y) < pairwise_rank_loss(torch.tensor([0., 3., 0.]), y))
    True
    >>> float(pairwise_rank_loss(torch.tensor([1., 2.]), torch.tensor([0., 0.])))
    0.0
    """
    bad, good = logits[is_bad > 0.5], logits[is_bad <= 0.5]
    if bad.numel() == 0 or good.numel() == 0:
        return logits.new_zeros(())
    return F.softplus(good[None, :] - bad[:, None]).mean()


def collapse_penalty(logits: Tensor, target_prior: Tensor) -> Tensor:
    """KL(target prior || mean predicted distribution over the batch).

    Zero when the batch's average verdict distribution matches the targets' class
    frequencies; grows sharply when one verdict swallows the others (collapse).

    >>> prior = torch.tensor([0.8, 0.1, 0.1])
    >>> collapsed = torch.tensor([[9., 0., 0.]] * 4)
    >>> bool(collapse_penalty(collapsed, prior) > collapse_penalty(torch.log(prior).expand(4, 3), prior))
    True
    """
    mean_pred = F.softmax(logits, dim=-1).mean(0).clamp_min(1e-8)
    prior = target_prior.clamp_min(1e-8)
    return (prior * (prior.log() - mean_pred.log())).sum()


def class_weights(counts: Tensor, power: float = 0.5) -> Tensor:
    """Inverse-frequency weights, softened by ``power`` (0.5 = inverse square root) and
    normalised to mean 1, so rare verdicts count more without exploding.

    >>> [round(w, 2) for w in class_weights(torch.tensor([900., 90., 10.])).tolist()]
    [0.22, 0.7, 2.09]
    """
    w = (counts.float().clamp_min(1.0)).pow(-power)
    return w * len(w) / w.sum()
