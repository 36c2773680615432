"""Sparse mixture-of-experts feed-forward: top-k token routing with a load-balance loss.

``MoEEncoderLayer`` is the field transformer's pre-norm encoder layer with its one
feed-forward block replaced by ``n_experts`` smaller ones. A linear router scores each
token, the token goes to its ``top_k`` experts only, and their outputs are mixed by the
renormalised router probabilities (Shazeer et al. 2017; Fedus et al., Switch
Transformer, 2021). Each expert has the dense block's width divided by ``top_k``, so
a token costs about what it costs in the dense layer.

Training adds the Switch load-balance loss ``n_experts * sum_e f_e * P_e`` (``f_e``: the
share of real tokens whose first choice is expert e; ``P_e``: the mean router
probability of e), weighted by ``TrainConfig.moe_aux_weight``; ``expert_load`` keeps the
last batch's ``f`` (per layer) so training can log the per-expert load and its variance
and raise the penalty when one expert takes over (``engine.offline.train.fit``). Padding tokens are
routed (their outputs are never read) but left out of the load and the loss.

>>> layer = MoEEncoderLayer(8, 2, 16, 0.0, n_experts=4, top_k=2).train()
>>> x = torch.randn(3, 5, 8); pad = torch.zeros(3, 5, dtype=torch.bool); pad[1, 3:] = True
>>> y = layer(x, src_key_padding_mask=pad)
>>> tuple(y.shape), layer.expert_load.shape[0], round(float(layer.expert_load.sum()), 4)
((3, 5, 8), 4, 1.0)
>>> bool(layer.moe.pop_aux_loss() >= 1.0 - 1e-6)  # 1 exactly when routing is uniform
True
>>> layer = layer.eval()
>>> bool(torch.allclose(layer.forward_first(x, pad), layer(x, src_key_padding_mask=pad)[:, :1], atol=1e-5))
True
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class MoEFeedForward(nn.Module):
    """Top-k routed experts, each ``Linear(d, h) -> GELU -> Linear(h, d)``."""

    def __init__(self, d: int, hidden: int, n_experts: int, top_k: int, dropout: float):
        super().__init__()
        if not 1 <= top_k <= n_experts:
            raise ValueError(f"top_k {top_k} must be in [1, n_experts={n_experts}]")
        self.top_k = top_k
        self.router = nn.Linear(d, n_experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(d, hidden), nn.GELU(), nn.Linear(hidden, d)) for _ in range(n_experts))
        self.dropout = nn.Dropout(dropout)
        self.aux_loss: Tensor = torch.zeros(())
        self.expert_load: Tensor = torch.zeros(n_experts)

    def forward(self, x: Tensor, real: Tensor | None = None) -> Tensor:
        """``x`` [B, L, d]; ``real`` [B, L] bool, the tokens that count for the load."""
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        probs = torch.softmax(self.router(flat), dim=-1)  # [N, E]
        gate, choice = probs.topk(self.top_k, dim=-1)  # [N, k]
        gate = gate / gate.sum(-1, keepdim=True)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            rows, slot = (choice == e).nonzero(as_tuple=True)
            if rows.numel():
                out.index_add_(0, rows, expert(flat[rows]) * gate[rows, slot, None])
        if self.training:
            keep = torch.ones(flat.shape[0], dtype=torch.bool, device=x.device) if real is None \
                else real.reshape(-1)
            first = F.one_hot(choice[keep, 0], probs.shape[-1]).float()
            share = first.mean(0) if first.shape[0] else first.new_zeros(probs.shape[-1])
            mean_prob = probs[keep].mean(0) if first.shape[0] else share
            self.aux_loss = probs.shape[-1] * (share * mean_prob).sum()
            self.expert_load = share.detach()
        return self.dropout(out).reshape(shape)

    def pop_aux_loss(self) -> Tensor:
        """The last training forward's load-balance loss, then cleared: a module must not
        keep a graph alive (nor can it be deep-copied, as ``Inference`` does, with one)."""
        loss, self.aux_loss = self.aux_loss, torch.zeros(())
        return loss


class MoEEncoderLayer(nn.Module):
    """Pre-norm encoder layer (batch first, GELU) with a ``MoEFeedForward`` block.

    Not an ``nn.TransformerEncoderLayer``: the serving layers (``engine.model.serving_layers``)
    leave it as it is, and PyTorch's fused fast path, which would bypass the routed
    block, never runs it.
    """

    def __init__(self, d: int, n_heads: int, hidden: int, dropout: float, n_experts: int, top_k: int):
        super().__init__()
        self.self_attn = nn.MultiheadAttention(d, n_heads, dropout=dropout, batch_first=True)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.dropout1 = nn.Dropout(dropout)
        # the dense block's width split over the experts a token visits: same cost per token
        self.moe = MoEFeedForward(d, max(1, hidden // top_k), n_experts, top_k, dropout)

    @property
    def expert_load(self) -> Tensor:
        return self.moe.expert_load

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        y = self.norm1(src)
        attended, _ = self.self_attn(y, y, y, attn_mask=src_mask, key_padding_mask=src_key_padding_mask,
                                     need_weights=False, is_causal=is_causal)
        x = src + self.dropout1(attended)
        real = None if src_key_padding_mask is None else ~src_key_padding_mask.bool()
        return x + self.moe(self.norm2(x), real)

    #: ``FieldTransformer.run_layer`` may ask for position 0 alone after the last layer.
    computes_first_only = True

    def forward_first(self, src: Tensor, src_key_padding_mask: Tensor | None = None) -> Tensor:
        """Position 0's output alone, [B, 1, d] (what CLS pooling reads): keys and values
        from every position, the query, routing and experts for one. Training computes
        every position, so the load-balance loss sees every token as in other layers."""
        if self.training:
            return self(src, src_key_padding_mask=src_key_padding_mask)[:, :1]
        y = self.norm1(src)
        attended, _ = self.self_attn(y[:, :1], y, y, key_padding_mask=src_key_padding_mask, need_weights=False)
        x = src[:, :1] + attended
        return x + self.moe(self.norm2(x))


def moe_layers(model: nn.Module) -> list[MoEFeedForward]:
    """The routed blocks of a model, in order (empty for a dense model)."""
    return [m for m in model.modules() if isinstance(m, MoEFeedForward)]
