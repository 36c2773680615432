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

Why that alone never moved a verdict (issue #21): every pair above lives inside one
decision, so what it teaches is a *level* — shift this row towards its outcome — and a
weak serving model puts p(pass) near 0.99 everywhere; a dozen small steps of it did
not bring one row to the policy's review threshold. Two more terms make it work:

* ``ranked_pair_loss`` — DPO over pairs of *decisions* ranked by their outcomes (a
  bad one ≻ a good one on stop log-odds, both relative to the reference): the
  *order*, balanced by construction however one-sided the labels;
* ``stop_budget_penalty`` — a hinge that lets good outcomes' mean stop probability
  rise at most a budget over the serving model's: the level may move for the bad
  rows, not for good customers. ``kl_to_reference`` is the optional explicit leash.

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

from engine.model.heads import not_pass_log_odds

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


def ranked_pair_loss(policy_logits: Tensor, ref_logits: Tensor, is_bad: Tensor, *, beta: float,
                     max_pairs: int = 4096, generator: torch.Generator | None = None) -> PreferenceLoss:
    """DPO over pairs of *decisions* ranked by their outcomes: for every (bad, good) pair
    in the batch, the bad decision should gain more stop log-odds over the reference than
    the good one. Every pair holds one outcome of each class, so the term is balanced by
    construction, however one-sided the labels; it moves the ordering, not the level.

    >>> ref = torch.zeros(2, 3); bad = torch.tensor([1.0, 0.0])
    >>> good_order = torch.tensor([[0.0, 0.0, 2.0], [2.0, 0.0, 0.0]])
    >>> bool(ranked_pair_loss(good_order, ref, bad, beta=1.0).loss < ranked_pair_loss(-good_order, ref, bad, beta=1.0).loss)
    True
    """
    reward = beta * (not_pass_log_odds(policy_logits) - not_pass_log_odds(ref_logits.detach()))
    bad = is_bad.bool()
    rb, rg = reward[bad], reward[~bad]
    if rb.numel() == 0 or rg.numel() == 0:
        zero = policy_logits.sum() * 0.0
        return PreferenceLoss(zero, 0.0, 0.0)
    margin = (rb[:, None] - rg[None, :]).reshape(-1)
    if margin.numel() > max_pairs:
        margin = margin[torch.randperm(margin.numel(), generator=generator)[:max_pairs]]
    return PreferenceLoss(-F.logsigmoid(margin).mean(), float((margin.detach() > 1e-9).float().mean()),
                          float(margin.detach().mean()))


def kl_to_reference(policy_logits: Tensor, ref_logits: Tensor) -> Tensor:
    """Mean KL(π ‖ π_ref) of the verdict distributions: an explicit leash on the rows it
    sees (DPO's own β only bounds the pairs it is given)."""
    logp = F.log_softmax(policy_logits, dim=-1)
    logp_ref = F.log_softmax(ref_logits.detach(), dim=-1)
    return (logp.exp() * (logp - logp_ref)).sum(-1).mean()


def stop_budget_penalty(policy_logits: Tensor, ref_logits: Tensor, is_bad: Tensor, budget: float,
                        temperature: float = 1.0) -> Tensor:
    """Hinge on the good outcomes' stop share rising more than ``budget`` above the
    reference's: the level may move only as far as good customers allow. The share is
    soft, ``mean σ(stop log-odds / temperature)``: at 1 it is the mean stop probability;
    smaller counts the goods that cross the policy's 0.5 review threshold more sharply.
    Zero when the batch has no good outcome."""
    good = ~is_bad.bool()
    if not good.any():
        return policy_logits.sum() * 0.0
    share = torch.sigmoid(not_pass_log_odds(policy_logits[good]) / temperature).mean()
    share_ref = torch.sigmoid(not_pass_log_odds(ref_logits[good].detach()) / temperature).mean()
    return F.relu(share - share_ref - budget)


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
