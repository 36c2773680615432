"""Numeric features as numbers a network can cut: piecewise-linear encoding (PLE).

Gorishniy, Rubachev, Babenko, *On Embeddings for Numerical Features in Tabular Deep
Learning* (NeurIPS 2022): split each feature's range at its training quantiles
``b_0 < b_1 < ... < b_T`` and encode a value x as T numbers, bin t holding
``clamp((x - b_{t-1}) / (b_t - b_{t-1}), 0, 1)``: 1 for every bin wholly below x, the
fraction of x's own bin, 0 above. A linear layer on that is any piecewise-linear
function of x with knots at the quantiles, so a threshold (an amount above 220, a
terminal with any confirmed fraud) is one weight away, as it is for a tree, instead of
something a GELU of ``x * w + b`` must approximate. It is what closes most of the gap
between MLPs/transformers and gradient-boosted trees in that paper.

The bin edges are fitted on the training window (``fit``) and stored as a persistent
buffer, so they travel in ``model.safetensors`` with the weights and serving encodes
exactly as training did. A feature with fewer distinct values than bins (a flag, a
mostly-zero risk share) gets fewer real bins; the rest are masked to 0.

>>> import torch
>>> ple = PiecewiseLinearEncoding(n_fields=1, n_bins=4)
>>> ple.fit(torch.tensor([[0.], [1.], [2.], [3.], [4.]]))
>>> ple.edges[0].tolist()
[0.0, 1.0, 2.0, 3.0, 4.0]
>>> ple(torch.tensor([[2.5], [-1.0], [9.0]]))[:, 0].tolist()
[[1.0, 1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]
>>> flag = PiecewiseLinearEncoding(n_fields=1, n_bins=4); flag.fit(torch.tensor([[0.], [0.], [0.], [0.], [1.]]))
>>> flag(torch.tensor([[0.], [1.]]))[:, 0].tolist()
[[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


class PiecewiseLinearEncoding(nn.Module):
    """[B, F] values -> [B, F, T] piecewise-linear codes against per-field quantile bins.

    Before ``fit`` the edges split [0, 1] evenly (an untrained model still runs).
    """

    def __init__(self, n_fields: int, n_bins: int):
        super().__init__()
        self.n_bins = n_bins
        default = torch.linspace(0.0, 1.0, n_bins + 1).expand(n_fields, -1).contiguous()
        # Persistent: saved in model.safetensors with the weights (no separate file to lose).
        self.register_buffer("edges", default)
        self.register_buffer("bin_mask", torch.ones(n_fields, n_bins))

    @torch.no_grad()
    def fit(self, x: Tensor, y: Tensor | None = None, max_rows: int = 200_000) -> None:
        """Edges per field from training values [N, F] (NaN/inf ignored): quantiles, or,
        with labels ``y`` [N] (1 bad, 0 good, NaN unknown), *target-aware* edges: the
        split points of a small decision tree fitted on that one field (the paper's
        tree-based bins), completed with quantiles up to ``n_bins``. Quantile bins alone
        put one wide bin over the top 6 % of amounts, where a rare-event threshold such
        as "above 220" lives; a tree puts an edge right there."""
        x = x.float()
        if x.shape[0] > max_rows:  # an even subsample: same bins, bounded memory and time
            pick = torch.linspace(0, x.shape[0] - 1, max_rows).long()
            x, y = x[pick], (None if y is None else y[pick])
        q = torch.linspace(0.0, 1.0, self.n_bins + 1)
        edges, mask = self.edges.clone(), torch.zeros_like(self.bin_mask)
        for f in range(x.shape[1]):
            ok = torch.isfinite(x[:, f])
            col = x[:, f][ok]
            if col.numel() == 0:
                continue
            knots = torch.unique(torch.quantile(col, q))  # sorted; ties collapse
            if y is not None:
                knots = _with_tree_splits(col, y[ok], knots, self.n_bins)
            if knots.numel() == 1:  # constant feature: one step bin at its value
                knots = torch.cat([knots, knots + 1.0])
            n = knots.numel() - 1
            edges[f, : n + 1] = knots
            edges[f, n + 1:] = knots[-1]
            mask[f, :n] = 1.0
        self.edges.copy_(edges)
        self.bin_mask.copy_(mask)

    def forward(self, x: Tensor) -> Tensor:
        lo, hi = self.edges[:, :-1], self.edges[:, 1:]
        width = (hi - lo).clamp_min(1e-6)
        codes = ((x[..., None] - lo) / width).clamp(0.0, 1.0)
        return codes * self.bin_mask


class PLEFieldEmbedding(nn.Module):
    """Each numeric field f: PLE codes [T] -> its own linear map to d (+ bias), then GELU
    and a shared projection, so a field's embedding is a learned piecewise-linear curve."""

    def __init__(self, n_fields: int, n_bins: int, d: int):
        super().__init__()
        self.encode = PiecewiseLinearEncoding(n_fields, n_bins)
        self.weight = nn.Parameter(torch.randn(n_fields, n_bins, d) * (n_bins ** -0.5))
        self.bias = nn.Parameter(torch.zeros(n_fields, d))
        self.proj = nn.Linear(d, d)

    def forward(self, x: Tensor) -> Tensor:  # [B, F] -> [B, F, d]
        codes = self.encode(x)
        h = torch.einsum("bft,ftd->bfd", codes, self.weight) + self.bias
        return self.proj(torch.nn.functional.gelu(h))


def _with_tree_splits(col: Tensor, y: Tensor, quantile_knots: Tensor, n_bins: int) -> Tensor:
    """Up to ``n_bins - 1`` split points of a decision tree on (col, y), plus min and max,
    filled up with the quantile knots nearest to the middle of the widest gaps."""
    # local: scikit-learn loads only for training and evaluation
    from sklearn.tree import DecisionTreeClassifier

    known = ~torch.isnan(y)
    if known.sum() < 2 or torch.unique(y[known]).numel() < 2:
        return quantile_knots
    xs, ys = col[known].double().numpy()[:, None], y[known].numpy().astype(int)
    tree = DecisionTreeClassifier(max_leaf_nodes=max(2, n_bins // 2), min_samples_leaf=max(20, len(ys) // 2000),
                                  random_state=0).fit(xs, ys)
    splits = torch.tensor(tree.tree_.threshold[tree.tree_.feature >= 0], dtype=torch.float32)
    knots = torch.unique(torch.cat([col.min()[None], col.max()[None], splits]))
    for k in quantile_knots.tolist():  # complete with quantiles while room is left
        if knots.numel() >= n_bins + 1:
            break
        if not bool(torch.isclose(knots, torch.tensor(k)).any()):
            knots = torch.unique(torch.cat([knots, torch.tensor([k])]))
    return knots[: n_bins + 1] if knots.numel() > n_bins + 1 else knots
