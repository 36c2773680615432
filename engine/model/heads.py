"""Decision heads: small layers on the one pooled vector, all fed by the same forward pass.

The verdict head (pass/review/reject, in ``DECISIONS`` order) and the risk head
(logit of a bad outcome) always exist; extra heads come from ``HeadSpec``s. Early-exit
layers get their own verdict + risk pair.

>>> import torch
>>> from engine.model.config import HeadSpec
>>> heads = DecisionHeads(8, (HeadSpec(name="channel", kind="single_label", labels=("a", "b")),))
>>> out = heads(torch.zeros(2, 8))
>>> sorted(out), tuple(out["verdict"].shape), tuple(out["risk"].shape), tuple(out["channel"].shape)
(['channel', 'risk', 'verdict'], (2, 3), (2,), (2, 2))
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from engine.model.config import HeadSpec
from engine.records import DECISIONS


class DecisionHeads(nn.Module):
    def __init__(self, d: int, extra: tuple[HeadSpec, ...] = ()):
        super().__init__()
        # A shared hidden layer: verdict and risk read the same evidence, and a tiny
        # trunk lets the verdict learn the cost-shaped boundaries the risk logit cannot.
        self.trunk = nn.Sequential(nn.Linear(d, d), nn.GELU())
        self.verdict = nn.Linear(d, len(DECISIONS))
        self.risk = nn.Linear(d, 1)
        self.extra = nn.ModuleDict({spec.name: nn.Linear(d, len(spec.labels)) for spec in extra})

    def forward(self, pooled: Tensor) -> dict[str, Tensor]:
        z = self.trunk(pooled)
        out = {"verdict": self.verdict(z), "risk": self.risk(z).squeeze(-1)}
        for name, head in self.extra.items():
            out[name] = head(z)
        return out


class ExitHeads(nn.Module):
    """Verdict + risk on an intermediate layer, for early exit."""

    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.verdict = nn.Linear(d, len(DECISIONS))
        self.risk = nn.Linear(d, 1)

    def forward(self, pooled: Tensor) -> dict[str, Tensor]:
        z = self.norm(pooled)
        return {"verdict": self.verdict(z), "risk": self.risk(z).squeeze(-1)}


def not_pass_log_odds(verdict: Tensor) -> Tensor:
    """[N] log-odds of review or reject against pass, from verdict logits in ``DECISIONS``
    order (pass, review, reject): what the policy's review threshold reads (it escalates on
    p(review) + p(reject)). The served blend moves it (``engine.model.trees``) and the
    fine-tune's preference losses reward it (``feedback.learn.preference``)."""
    return torch.logsumexp(verdict[..., 1:], dim=-1) - verdict[..., 0]
