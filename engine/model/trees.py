"""Gradient-boosted trees inside the decision model: a served blend (``ModelConfig.trees``).

On the handbook's protocol, XGBoost reading the very fields the network's layers read and
the network rank frauds about equally well, and the mean of their log-odds ranks better
than either (docs/decision-quality.md, "the served blend"). So a model may carry the
trees: an XGBoost ensemble, fitted by the trainer on the same training rows
(``engine.offline.train.trees``), evaluated inside ``DecisionModel.forward`` (as tensor
operations; in an ONNX export as onnxruntime's own tree ensemble). Being part of the
forward pass is what makes the blend the model every entry point serves: the worker, the
Python API, HTTP and the batch CLI, the
ONNX and TorchScript graphs, int8 and fp16 (the trees' thresholds stay fp32), early exit,
the fine-tune and its gate all see one model.

The blend, per head pair (final and early exit), with the network's raw risk logit
``r``, verdict logits ``v``, the temperatures the network alone was calibrated with
(``t_risk``, ``t_verdict``), the trees' log-odds ``m`` and the weight ``w``:

* calibrated risk log-odds become ``(1 - w) * r / t_risk + w * m``: the mean of the two
  models' calibrated log-odds that the what-if measured, at ``w = 0.5``;
* the verdict's calibrated log-odds of "not a clean pass", ``g`` (review and reject
  against pass), become ``(1 - w) * g + w * (m + verdict_offset)``: the same mean, read
  from the verdict head's own logits (its review and reject logits move together, so
  their ratio stays the network's). ``verdict_offset`` is the median of ``g - r / t_risk``
  over the rows the trees were first fitted on (a refit keeps it: the blend was calibrated
  with it): the verdict head's cost-shaped level against the risk's, so that the trees'
  log-odds enter at the verdict's scale.

  The verdict reads ``g`` and not the risk head: a fine-tune moves the two heads apart,
  and a verdict blended against the network's risk moved *against* what the fine-tune
  taught it (tests/integration/test_feedback_e2e.py caught a candidate fine-tuned on
  flipped labels stopping more fraud, and genuine ones less).

Temperatures are then fitted again on the blended outputs (``calibrate``), as for any model.

>>> import torch
>>> from engine.model.config import TreeShape
>>> ensemble = TreeEnsemble(TreeShape(n_trees=1, n_nodes=3, depth=1, n_features=2, weight=0.5))
>>> with torch.no_grad():
...     _ = ensemble.feature.copy_(torch.tensor([1, 0, 0]))     # the root splits on field 1
...     _ = ensemble.threshold.copy_(torch.tensor([0.5, 0, 0]))
...     _ = ensemble.left.copy_(torch.tensor([1, 1, 2]))         # leaves point to themselves
...     _ = ensemble.right.copy_(torch.tensor([2, 1, 2]))
...     _ = ensemble.leaf_value.copy_(torch.tensor([0.0, -2.0, 3.0]))
>>> ensemble.margin(torch.tensor([[9.0, 0.1], [9.0, 0.7], [0.0, float("nan")]])).tolist()
[-2.0, 3.0, 3.0]
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from engine.model.config import TreeShape
from engine.model.heads import not_pass_log_odds

__all__ = ["TreeEnsemble", "TreeShape", "network_alone", "tree_inputs"]


def tree_inputs(inputs: Any) -> Tensor:
    """The table the trees read, [N, n_numeric + 2] float32 (here, beside the ensemble, so
    that the trainer, the teacher and the benchmarks' trees read one table): the numeric
    control fields (after the model's derivations, when ``inputs`` are the layers' inputs), then the hour
    and weekday ids (the last two categorical fields; other ids are constant, such as the
    channel, or hashed identities such as the terminal that a tree would memorise)."""
    return torch.cat([inputs.control_numeric.float(), inputs.control_categorical[:, -2:].float()], dim=1)


class TreeEnsemble(nn.Module):
    """An additive tree ensemble as flat node arrays, walked for all rows and trees at once.

    ``feature``, ``threshold``, ``left``, ``right``, ``default_left`` and ``leaf_value`` hold
    every node of every tree, tree ``t`` at offsets ``t * n_nodes ...``; child indices are
    global. A leaf's children are itself, so ``depth`` steps of "go left when the value is
    below the threshold (or missing and the node sends missing left)" end every row on its
    leaf in every tree: XGBoost's own rule, so the sum of leaf values plus ``base_margin``
    is its margin (``tests/unit/test_model_trees.py`` holds the two within 1e-4).
    """

    feature: Tensor
    threshold: Tensor
    left: Tensor
    right: Tensor
    default_left: Tensor
    leaf_value: Tensor
    base_margin: Tensor
    t_risk: Tensor
    t_verdict: Tensor
    verdict_offset: Tensor
    risk_offset: Tensor

    def __init__(self, shape: TreeShape):
        super().__init__()
        self.shape = shape
        size = shape.n_trees * shape.n_nodes
        self.register_buffer("feature", torch.zeros(size, dtype=torch.long))
        self.register_buffer("threshold", torch.zeros(size, dtype=torch.float32))
        self.register_buffer("left", torch.arange(size, dtype=torch.long))
        self.register_buffer("right", torch.arange(size, dtype=torch.long))
        self.register_buffer("default_left", torch.zeros(size, dtype=torch.bool))
        self.register_buffer("leaf_value", torch.zeros(size, dtype=torch.float32))
        self.register_buffer("base_margin", torch.zeros((), dtype=torch.float32))
        # The network's own temperatures when the trees were installed (see the module doc).
        self.register_buffer("t_risk", torch.ones((), dtype=torch.float32))
        self.register_buffer("t_verdict", torch.ones((), dtype=torch.float32))
        self.register_buffer("verdict_offset", torch.zeros((), dtype=torch.float32))
        # A shift of the blended risk logit alone (``shift_risk``): the fine-tune's level match.
        self.register_buffer("risk_offset", torch.zeros((), dtype=torch.float32))
        self.register_buffer("roots", torch.arange(shape.n_trees, dtype=torch.long) * shape.n_nodes,
                             persistent=False)
        #: False inside ``network_alone``: the model answers as its network, unblended.
        self.enabled = True

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> TreeEnsemble:
        # ``model.half()`` (a GPU run) would round the thresholds and leaf values, and a
        # rounded threshold sends rows down other branches: they stay fp32, only moving device.
        kept = {name: self._buffers[name] for name in ("threshold", "leaf_value", "base_margin", "t_risk",
                                                        "t_verdict", "verdict_offset", "risk_offset")}
        super()._apply(fn, recurse)
        for name, value in kept.items():
            moved = self._buffers[name]
            assert moved is not None
            self._buffers[name] = value.to(device=moved.device)
        return self

    def margin(self, x: Tensor) -> Tensor:
        """[N] log-odds of the ensemble for the rows of ``x`` [N, n_features]. In an ONNX
        export this is one native ``TreeEnsembleRegressor`` node (``_Margin.symbolic``)."""
        x = x.float()
        if torch.onnx.is_in_onnx_export():
            return _Margin.apply(x, self.onnx_attributes(), self.shape.depth, *self._arrays())
        return _walk(x, self.shape.depth, *self._arrays())

    def _arrays(self) -> tuple[Tensor, ...]:
        return (self.roots, self.feature, self.threshold, self.default_left, self.left, self.right,
                self.leaf_value, self.base_margin)

    def blend(self, verdict: Tensor, risk: Tensor, margin: Tensor) -> tuple[Tensor, Tensor]:
        """The verdict logits and risk logit of one head pair, with the trees' evidence in."""
        w = self.shape.weight
        delta = w * (margin - risk.float() / self.t_risk)  # change of the calibrated risk log-odds
        stop = not_pass_log_odds(verdict.float() / self.t_verdict)
        moved = w * (margin + self.verdict_offset - stop)  # change of the verdict's, the same mean
        shift = torch.stack([torch.zeros_like(moved), moved, moved], dim=-1) * self.t_verdict
        return (verdict + shift.to(verdict.dtype)), (risk + (delta * self.t_risk + self.risk_offset).to(risk.dtype))

    @torch.no_grad()
    def shift_risk(self, shift: float) -> None:
        """Move every blended risk logit by ``shift`` and leave the verdicts alone. (Moving
        the network's risk bias instead would move the blend's ``delta``, and with it the
        verdict logits: ``feedback.learn.finetune.match_risk_level``.)"""
        self.risk_offset += shift

    def onnx_attributes(self) -> dict[str, Any]:
        """The ensemble as the attributes of ONNX-ML's ``TreeEnsembleRegressor`` (opset 3):
        per tree its nodes by local id, a branch going to its true (left) child when the
        value is below the threshold (``BRANCH_LT``, XGBoost's rule) or missing and the node
        sends missing left; leaves carry their values as targets."""
        n = self.shape.n_nodes
        size = self.shape.n_trees * n
        index = torch.arange(size)
        leaf = self.left == index
        tree, local = (index // n).tolist(), (index % n).tolist()
        true, false = (self.left % n).tolist(), (self.right % n).tolist()
        is_leaf = leaf.tolist()
        leaves = leaf.nonzero().squeeze(1)
        return {
            "n_targets_i": 1, "aggregate_function_s": "SUM", "post_transform_s": "NONE",
            "base_values_f": [float(self.base_margin)],
            "nodes_treeids_i": tree, "nodes_nodeids_i": local,
            "nodes_featureids_i": self.feature.tolist(),
            "nodes_modes_s": ["LEAF" if f else "BRANCH_LT" for f in is_leaf],
            "nodes_values_f": self.threshold.tolist(),
            "nodes_truenodeids_i": [0 if f else c for f, c in zip(is_leaf, true)],
            "nodes_falsenodeids_i": [0 if f else c for f, c in zip(is_leaf, false)],
            "nodes_missing_value_tracks_true_i": self.default_left.long().tolist(),
            "target_treeids_i": (leaves // n).tolist(), "target_nodeids_i": (leaves % n).tolist(),
            "target_ids_i": [0] * len(leaves), "target_weights_f": self.leaf_value[leaves].tolist(),
        }

    @classmethod
    def from_xgboost(cls, booster: Any, weight: float, n_features: int, t_risk: float = 1.0,
                     t_verdict: float = 1.0, verdict_offset: float = 0.0) -> TreeEnsemble:
        """The ensemble of a fitted binary-logistic ``xgboost.Booster`` (its JSON model)."""
        model = json.loads(bytes(booster.save_raw("json")))["learner"]
        objective = model["objective"]["name"]
        if objective != "binary:logistic":
            raise ValueError(f"the trees must be fitted with binary:logistic, not {objective}")
        trees = model["gradient_booster"]["model"]["trees"]
        n_nodes = max(len(t["left_children"]) for t in trees)
        depths = [_depth(t["left_children"], t["right_children"]) for t in trees]
        ensemble = cls(TreeShape(n_trees=len(trees), n_nodes=n_nodes, depth=max(depths),
                                 n_features=n_features, weight=weight))
        size = len(trees) * n_nodes
        feature = np.zeros(size, dtype=np.int64)
        threshold = np.zeros(size, dtype=np.float32)
        left, right = np.arange(size, dtype=np.int64), np.arange(size, dtype=np.int64)
        default_left = np.zeros(size, dtype=bool)
        leaf = np.zeros(size, dtype=np.float32)
        for t, tree in enumerate(trees):
            offset = t * n_nodes
            lc, rc = np.asarray(tree["left_children"]), np.asarray(tree["right_children"])
            cond = np.asarray(tree["split_conditions"], dtype=np.float32)
            is_leaf = lc == -1
            rows = offset + np.arange(len(lc))
            feature[rows] = np.where(is_leaf, 0, np.asarray(tree["split_indices"]))
            threshold[rows] = np.where(is_leaf, 0.0, cond)
            left[rows] = np.where(is_leaf, rows, offset + lc)
            right[rows] = np.where(is_leaf, rows, offset + rc)
            default_left[rows] = np.asarray(tree["default_left"], dtype=bool) & ~is_leaf
            leaf[rows] = np.where(is_leaf, cond, 0.0)  # a leaf's "split condition" is its value
        if int(feature.max(initial=0)) >= n_features:
            raise ValueError(f"the trees read field {int(feature.max())}, beyond the {n_features} given")
        with torch.no_grad():
            for name, value in (("feature", feature), ("threshold", threshold), ("left", left), ("right", right),
                                ("default_left", default_left), ("leaf_value", leaf)):
                getattr(ensemble, name).copy_(torch.from_numpy(value))
            ensemble.base_margin.fill_(_base_margin(model["learner_model_param"]["base_score"]))
            ensemble.t_risk.fill_(t_risk)
            ensemble.t_verdict.fill_(t_verdict)
            ensemble.verdict_offset.fill_(verdict_offset)
        return ensemble


@contextmanager
def network_alone(*models: nn.Module) -> Iterator[None]:
    """Within the block, every model given answers as its network alone (no blend).

    The fine-tune trains the network this way (``feedback.learn.finetune``). Trained
    through the blend, its preference loss on the verdict could raise a row's stop logits
    by *lowering* the network's risk, since the blend moves the verdict by the trees'
    margin minus that risk; such a candidate learns the inverse of its labels.
    """
    ensembles = [m for model in models for m in model.modules() if isinstance(m, TreeEnsemble)]
    before = [e.enabled for e in ensembles]
    for e in ensembles:
        e.enabled = False
    try:
        yield
    finally:
        for e, was in zip(ensembles, before):
            e.enabled = was


def _walk(x: Tensor, depth: int, roots: Tensor, feature: Tensor, threshold: Tensor, default_left: Tensor, left: Tensor,
          right: Tensor, leaf_value: Tensor, base_margin: Tensor) -> Tensor:
    """The margin in tensor operations: every row down every tree at once, one level a step
    (a leaf is its own child, so a row that reached one stays there)."""
    node = roots.unsqueeze(0).expand(x.shape[0], -1)
    for _ in range(depth):
        value = torch.gather(x, 1, feature[node])
        go_left = (value < threshold[node]) | (torch.isnan(value) & default_left[node])
        node = torch.where(go_left, left[node], right[node])
    return leaf_value[node].sum(dim=1) + base_margin


class _Margin(torch.autograd.Function):
    """The trees' margin: gathers in PyTorch (and TorchScript, which traces them); in an
    ONNX export, onnxruntime's own tree ensemble. Walked as gather and compare nodes, the
    trees made the graph several times dearer than the native node, which walks them in C++
    (docs/performance.md; ``python ops/bench/model.py --only-served-blend``)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, attrs: dict[str, Any], depth: int,  # type: ignore[override]
                *arrays: Tensor) -> Tensor:
        return _walk(x, depth, *arrays)

    @staticmethod
    def symbolic(g: Any, x: Any, attrs: dict[str, Any], depth: int, *arrays: Any) -> Any:
        y = g.op("ai.onnx.ml::TreeEnsembleRegressor", x, **attrs)
        return g.op("Squeeze", y, g.op("Constant", value_t=torch.tensor([1])))


def _depth(left: list[int], right: list[int]) -> int:
    """Edges on the longest root-to-leaf path of one tree (node 0 is the root)."""
    deepest, stack = 0, [(0, 0)]
    while stack:
        node, d = stack.pop()
        if left[node] == -1:
            deepest = max(deepest, d)
        else:
            stack += [(left[node], d + 1), (right[node], d + 1)]
    return deepest


def _base_margin(base_score: str) -> float:
    """XGBoost stores the prior as a probability (a string, bracketed in 3.x): its log-odds."""
    p = float(str(base_score).strip("[]"))
    return math.log(p / (1.0 - p))
