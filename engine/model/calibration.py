"""Temperature scaling (Guo et al., 2017), fitted on held-out data.

One scalar per head divides the logits. It keeps the ranking (so AUC and the argmax
verdict are unchanged) and fixes over-confidence, which focal loss and re-weighting
both introduce. The fitted temperatures live in the model card; ``Inference`` applies
them, so calibrated probabilities are what every consumer sees.

>>> import torch
>>> g = torch.Generator().manual_seed(0)
>>> labels = torch.randint(0, 3, (2000,), generator=g)
>>> logits = torch.nn.functional.one_hot(labels, 3).float() * 2 + torch.randn(2000, 3, generator=g)
>>> t1, t4 = fit_temperature(logits, labels), fit_temperature(logits * 4, labels)
>>> round(t4 / t1, 1)       # logits made 4x over-confident need a 4x temperature
4.0
>>> nll(logits * 4, labels, t4) < nll(logits * 4, labels)
True
"""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch.nn import functional as F

MIN_T, MAX_T = 0.05, 20.0


def _nll(logits: Tensor, labels: Tensor, t: Tensor) -> Tensor:
    if logits.dim() == 1:  # binary head: one logit per row
        return F.binary_cross_entropy_with_logits(logits / t, labels.float())
    return F.cross_entropy(logits / t, labels.long())


def nll(logits: Tensor, labels: Tensor, temperature: float = 1.0) -> float:
    """Mean negative log-likelihood at a given temperature (binary if ``logits`` is 1-D)."""
    with torch.no_grad():
        return float(_nll(logits.float(), labels, torch.tensor(temperature)))


def fit_temperature(logits: Tensor, labels: Tensor, max_iter: int = 100) -> float:
    """The temperature minimising held-out NLL; 1.0 when there is nothing to fit.

    Optimised in log space with L-BFGS (one parameter: converges in a handful of steps),
    then checked against T=1 so a degenerate held-out set can never make things worse.
    """
    logits = logits.detach().float()
    if logits.numel() == 0 or labels.unique().numel() < 2:
        return 1.0
    log_t = torch.zeros((), requires_grad=True)
    opt = torch.optim.LBFGS([log_t], lr=0.1, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> Tensor:
        opt.zero_grad()
        loss = _nll(logits, labels, log_t.exp())
        loss.backward()
        return loss

    opt.step(closure)
    t = float(log_t.detach().exp().clamp(MIN_T, MAX_T))
    if not math.isfinite(t) or nll(logits, labels, t) > nll(logits, labels, 1.0):
        return 1.0
    return t
