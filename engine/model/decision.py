"""``DecisionModel``: backbone -> pooling -> decision heads, in one forward pass.

``forward`` runs every layer and returns raw logits for all heads, including the
early-exit heads (keys ``exit{layer}.verdict`` / ``exit{layer}.risk``) so training can
supervise them. ``forward_early_exit`` is the serving path: rows whose calibrated
confidence at an exit layer reaches the threshold stop there; the rest go deeper.

>>> from engine.model.config import InputSpec, ModelConfig
>>> from engine.model.inputs import random_inputs
>>> spec = InputSpec(n_numeric=3, n_categorical=2, categorical_buckets=16, history_len=4,
...     history_numeric=2, history_categorical=1, text_len=5, text_vocab=50, schema_hash="h")
>>> model = DecisionModel(ModelConfig(inputs=spec, n_layers=3, early_exit_layers=(1,))).eval()
>>> out = model(random_inputs(spec, 4))
>>> tuple(out["verdict"].shape), tuple(out["risk"].shape), "exit1.verdict" in out
((4, 3), (4,), True)
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import Tensor, nn

from engine.model.backbone import FieldTransformer, pool, squash
from engine.model.config import ModelConfig
from engine.model.derived import DERIVATION_MODULES
from engine.model.heads import DecisionHeads, ExitHeads
from engine.model.hf import HFBackbone
from engine.model.inputs import as_inputs
from engine.model.numeric import PiecewiseLinearEncoding
from engine.model.trees import TreeEnsemble, tree_inputs


class DecisionModel(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        # The derived fields (engine.model.derived) enter as extra numeric fields: the layers
        # are built for the widened field list, the card keeps the schema's. Each derivation
        # reads the schema's fields and appends its own after those already there, in
        # DERIVATION_MODULES' order.
        names = config.inputs.numeric_names
        derivations: list[nn.Module] = []
        for flag, (module, appended) in DERIVATION_MODULES.items():
            if getattr(config, flag):
                derivations.append(module(config.inputs.numeric_names))
                names += appended
        self.derive = nn.Sequential(*derivations) if derivations else None
        spec = config.inputs if self.derive is None else config.inputs.model_copy(update={
            "n_numeric": len(names), "numeric_names": names})
        if config.backbone == "hf":
            self.backbone: Any = HFBackbone(config)
        else:
            self.backbone = FieldTransformer(spec, config.d_model, config.n_layers,
                                             config.n_heads, config.ff_mult, config.dropout,
                                             config.numeric_tokens, config.ignore_categorical,
                                             config.numeric_bins, config.max_history, config.read_text,
                                             config.moe_experts, config.moe_top_k)
        d = self.backbone.d_model
        # Wide path: the numeric control fields reach the heads directly as well as through
        # attention. Threshold-like evidence (an amount far above the customer's mean, a
        # terminal with confirmed fraud) is then learned in a few steps, as a tree would,
        # while the transformer adds what only the sequence shows.
        # With PLE the wide path reads the fields' bin codes, so each field's effect can be
        # a step or a ramp at its own bin edges (a GBDT's split, learnt by one weight).
        n_numeric = max(1, spec.n_numeric)
        n_wide = n_numeric * config.numeric_bins if self._ple is not None else n_numeric
        self.wide = nn.Sequential(nn.Linear(n_wide, d), nn.GELU(), nn.Linear(d, d))
        self.heads = DecisionHeads(d, config.extra_heads)
        self.exit_heads = nn.ModuleDict({str(k): ExitHeads(d) for k in config.early_exit_layers})
        # The served blend with gradient-boosted trees (engine.model.trees): they read the
        # numeric fields after the derivations, then hour and weekday.
        self.trees = TreeEnsemble(config.trees) if config.trees is not None else None
        tree_fields = spec.n_numeric + min(2, spec.n_categorical)  # tree_inputs' width
        if config.trees is not None and config.trees.n_features != tree_fields:
            raise ValueError(f"the trees read {config.trees.n_features} fields; this model gives them {tree_fields}")

    def with_trees(self, trees: TreeEnsemble) -> DecisionModel:
        """This model with ``trees`` blended in: its config records their shape, so that the
        model directory it is saved to builds them again when it loads."""
        self.config = self.config.model_copy(update={"trees": trees.shape})
        self.trees = trees
        return self

    def _blended(self, out: dict[str, Tensor], margin: Tensor | None, prefix: str = "") -> dict[str, Tensor]:
        """``out``'s verdict and risk (keys ``prefix`` + name) with the trees' margin in."""
        if self.trees is None or margin is None:
            return out
        out[prefix + "verdict"], out[prefix + "risk"] = self.trees.blend(
            out[prefix + "verdict"], out[prefix + "risk"], margin)
        return out

    def _inputs(self, batch: Any) -> Any:
        inputs = as_inputs(batch)
        if self.derive is None:
            return inputs
        return dataclasses.replace(inputs, control_numeric=self.derive(inputs.control_numeric))

    def forward(self, batch: Any) -> dict[str, Tensor]:
        inputs = self._inputs(batch)
        margin = self._margin(inputs)
        h, pad = self.backbone.embed_inputs(inputs)
        out: dict[str, Tensor] = {}
        for i in range(self.backbone.n_layers):
            h = self.backbone.run_layer(i, h, pad, first_only=self._only_cls_read_after(i))
            key = str(i + 1)
            if key in self.exit_heads:
                for name, value in self.exit_heads[key](pool(h, pad, self.config.pooling)).items():
                    out[f"exit{key}.{name}"] = value
                self._blended(out, margin, f"exit{key}.")
        out.update(self.heads(pool(self.backbone.finish(h), pad, self.config.pooling) + self._wide(inputs)))
        return self._blended(out, margin)

    def _margin(self, inputs: Any) -> Tensor | None:
        """The trees' log-odds per row (None: no trees, or ``network_alone``)."""
        if self.trees is None or not self.trees.enabled:
            return None
        return self.trees.margin(tree_inputs(inputs))

    def _only_cls_read_after(self, i: int) -> bool:
        """Whether only position 0 of layer ``i``'s output is ever read: after the last
        layer, CLS pooling reads nothing else (exit heads sit below the last layer). The
        serving layers then skip the queries, feed-forward and norms of every other
        position in that layer, about a third of the backbone's work at two layers."""
        return self.config.pooling == "cls" and i == self.backbone.n_layers - 1

    @property
    def _ple(self) -> PiecewiseLinearEncoding | None:
        """The numeric fields' PLE (shared by the field tokens and the wide path), if any."""
        embed = getattr(self.backbone, "embed", None)
        numeric = getattr(embed, "numeric", None)
        return getattr(numeric, "encode", None) if self.config.numeric_bins else None

    @torch.no_grad()
    def fit_input_statistics(self, batch: Any, labels: Tensor | None = None) -> None:
        """Fit what the model learns from the training inputs before any gradient step:
        the PLE bins of the numeric fields (kept in the weights file); with ``labels``
        (1 bad, 0 good, NaN unknown) and ``config.target_bins``, target-aware bins."""
        if self._ple is not None and self.config.inputs.n_numeric:
            self._ple.fit(self.backbone.embed.numeric_input(self._inputs(batch).control_numeric),
                          labels if self.config.target_bins else None)

    def _wide(self, inputs: Any) -> Tensor:
        x = inputs.control_numeric
        if not x.shape[-1]:
            return self.wide(x.new_zeros(x.shape[0], 1))
        if self._ple is not None:
            return self.wide(self._ple(self.backbone.embed.numeric_input(x)).flatten(1))
        return self.wide(squash(x.float()))

    def forward_early_exit(self, batch: Any, threshold: float,
                           temperature: float = 1.0) -> tuple[dict[str, Tensor], Tensor]:
        """Serving path. Returns the final-head outputs (verdict/risk from whichever layer
        each row exited at) and ``exit_layer`` [B] (1-based; n_layers = ran to the end).

        Confidence is the calibrated top verdict probability; a row exits at layer k if
        it reaches ``threshold`` there. Extra heads are only computed at full depth, so
        a row that exits early gets NaN for them.
        """
        inputs = self._inputs(batch)
        margin = self._margin(inputs)
        h, pad = self.backbone.embed_inputs(inputs)
        B, n_layers = h.shape[0], self.backbone.n_layers
        verdict = torch.empty(B, 3, dtype=h.dtype, device=h.device)
        risk = torch.empty(B, dtype=h.dtype, device=h.device)
        exit_layer = torch.full((B,), n_layers, dtype=torch.long, device=h.device)
        alive = torch.arange(B, device=h.device)
        for i in range(n_layers):
            h = self.backbone.run_layer(i, h, pad, first_only=self._only_cls_read_after(i))
            key = str(i + 1)
            if key in self.exit_heads and i + 1 < n_layers:
                early = self._blended(self.exit_heads[key](pool(h, pad, self.config.pooling)),
                                      None if margin is None else margin[alive])
                conf = torch.softmax(early["verdict"] / temperature, dim=-1).max(dim=-1).values
                done = conf >= threshold
                if done.any():
                    rows = alive[done]
                    verdict[rows] = early["verdict"][done]
                    risk[rows] = early["risk"][done]
                    exit_layer[rows] = i + 1
                    keep = ~done
                    alive, h, pad = alive[keep], h[keep], pad[keep]
                    if alive.numel() == 0:
                        return {"verdict": verdict, "risk": risk}, exit_layer
        final = self._blended(self.heads(pool(self.backbone.finish(h), pad, self.config.pooling)
                                         + self._wide(inputs)[alive]),
                              None if margin is None else margin[alive])
        verdict[alive] = final["verdict"]
        risk[alive] = final["risk"]
        out = {"verdict": verdict, "risk": risk}
        for spec in self.config.extra_heads:
            full = torch.full((B, len(spec.labels)), float("nan"), dtype=h.dtype, device=h.device)
            full[alive] = final[spec.name]
            out[spec.name] = full
        return out, exit_layer
