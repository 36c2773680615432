"""Outcome-based preference optimisation on the verdict head (DPO-style), plus risk BCE.

An outcome ranks the three verdicts for the decision it judges. With a review cost
``c`` in (0, 1), the utility of each verdict is:

=========== ====== ======== ======
outcome      pass   review   reject
=========== ====== ======== ======
bad          0      1 - c    1
good         1      1 - c    0
=========== ====== ======== ======

so the right verdict ≻ review ≻ the wrong one. Every ordered pair (w ≻ l) contributes
a DPO term weighted by its utility gap::

    gap(w, l) · −log σ(β · [(log π(w) − log π_ref(w)) − (log π(l) − log π_ref(l))])

``π`` is the candidate's verdict distribution, ``π_ref`` the frozen serving model's.
The reference term is what makes the update *relative*: the candidate is pushed only
where the outcome disagrees with what the serving model already does, and ``β`` bounds
how far it may drift (the implicit KL penalty of DPO). The risk head is trained
alongside with a weighted BCE on the outcome, since it must stay a calibrated
probability of a bad outcome. Review cost ``c`` decides how cheap hedging is: with a
small ``c`` the model learns to send doubtful cases to review; with a large one it
learns to commit.

>>> import torch
>>> pol = torch.tensor([[2.0, 0.0, -2.0]]); ref = torch.zeros(1, 3)
>>> bad = torch.tensor([1.0])
>>> right = preference_loss(pol, ref, bad, beta=1.0, review_cost=0.3).loss  # pass-heavy policy, bad outcome
>>> wrong = preference_loss(-pol, ref, bad, beta=1.0, review_cost=0.3).loss
>>> bool(right > wrong)   # pushing towards reject lowers the loss on a bad outcome
True
>>> preference_loss(ref, ref, bad, beta=1.0, review_cost=0.3).accuracy  # a tie is not a win
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

PASS, REVIEW, REJECT = 0, 1, 2  # DECISIONS order


def utilities(is_bad: Tensor, review_cost: float) -> Tensor:
    """[B, 3] utility of (pass, review, reject) given the outcome (1 = bad)."""
    if not 0.0 < review_cost < 1.0:
        raise ValueError("review_cost must lie strictly between 0 and 1")
    bad = is_bad.float()
    u_pass = 1.0 - bad
    u_review = torch.full_like(bad, 1.0 - review_cost)
    return torch.stack([u_pass, u_review, bad], dim=-1)


@dataclass(slots=True, frozen=True)
class PreferenceLoss:
    loss: Tensor  # scalar, differentiable
    accuracy: float  # share of (right ≻ wrong) pairs the policy ranks right by a margin
    reward_margin: float  # mean β-scaled implicit reward margin of the main pair


def preference_loss(policy_logits: Tensor, ref_logits: Tensor, is_bad: Tensor, *, beta: float,
                    review_cost: float, weights: Tensor | None = None) -> PreferenceLoss:
    """Weighted DPO over the three ordered verdict pairs an outcome implies."""
    logp = F.log_softmax(policy_logits, dim=-1)
    logp_ref = F.log_softmax(ref_logits.detach(), dim=-1)
    reward = beta * (logp - logp_ref)  # implicit reward of every verdict, [B, 3]
    u = utilities(is_bad, review_cost)
    w = torch.ones_like(u[:, 0]) if weights is None else weights.float()
    total = policy_logits.new_zeros(())
    norm = policy_logits.new_zeros(())
    for a, b in ((PASS, REVIEW), (PASS, REJECT), (REVIEW, REJECT)):
        gap = u[:, a] - u[:, b]  # > 0: a ≻ b; < 0: b ≻ a
        sign = torch.sign(gap)
        margin = sign * (reward[:, a] - reward[:, b])
        total = total + (w * gap.abs() * -F.logsigmoid(margin)).sum()
        norm = norm + (w * gap.abs()).sum()
    right = torch.where(is_bad.bool(), torch.full_like(is_bad, REJECT, dtype=torch.long),
                        torch.full_like(is_bad, PASS, dtype=torch.long))
    wrong = REJECT - right
    main_margin = (reward.gather(1, right[:, None]) - reward.gather(1, wrong[:, None])).detach()
    return PreferenceLoss(
        loss=total / norm.clamp_min(1e-12),
        accuracy=float((main_margin > 1e-9).float().mean()) if len(main_margin) else 0.0,
        reward_margin=float(main_margin.mean()) if len(main_margin) else 0.0,
    )


def risk_loss(risk_logits: Tensor, is_bad: Tensor, weights: Tensor | None = None) -> Tensor:
    """BCE of the risk head on the outcome (the risk score is P(bad outcome))."""
    return F.binary_cross_entropy_with_logits(risk_logits, is_bad.float(), weight=weights)


def class_weights(is_bad: Tensor, cap: float = 20.0) -> Tensor:
    """Per-example weights that rebalance the rare bad class, capped so a handful of
    frauds cannot dominate a small fine-tune batch."""
    bad = is_bad.float()
    n_bad = float(bad.sum())
    n_good = float(len(bad) - n_bad)
    if n_bad == 0 or n_good == 0:
        return torch.ones_like(bad)
    ratio = min(cap, n_good / n_bad)
    return torch.where(bad > 0, torch.full_like(bad, ratio), torch.ones_like(bad))
