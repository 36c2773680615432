"""Model configuration: what the network looks like, validated when loaded.

The configuration travels inside the model card (``architecture``), so a saved model
can be rebuilt exactly without pickle. Input sizes come from the feature schema
(``InputSpec``); everything else is a choice of the person training.

>>> spec = InputSpec(n_numeric=4, n_categorical=2, categorical_buckets=64,
...                  history_len=3, history_numeric=2, history_categorical=1,
...                  text_len=5, text_vocab=100, schema_hash="abc")
>>> cfg = ModelConfig(inputs=spec)
>>> cfg.d_model, cfg.n_layers, [h.name for h in cfg.extra_heads]
(64, 2, [])
>>> ModelConfig.model_validate_json(cfg.model_dump_json()) == cfg
True
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: The card's velocity windows ``derived_numeric`` computes means from, and the encoded
#: fields it reads (engine.model.derived).
DERIVED_WINDOWS: tuple[str, ...] = ("1h", "1d", "7d")
DERIVED_INPUTS: tuple[str, ...] = ("amount_log",) + tuple(
    f"velocity_{w}_{k}" for w in DERIVED_WINDOWS for k in ("count", "amount"))
#: The card windows ``derived_card_baseline`` sets against the 30-day window's older part,
#: and the fields it reads (engine.model.derived).
DERIVED_BASELINE_WINDOWS: tuple[str, ...] = ("1d", "7d")
DERIVED_BASELINE_INPUTS: tuple[str, ...] = ("amount_log",) + tuple(
    f"velocity_{w}_{k}" for w in (*DERIVED_BASELINE_WINDOWS, "30d") for k in ("count", "amount"))
#: The terminal windows ``derived_terminal`` computes known frauds from, and their fields.
DERIVED_TERMINAL_WINDOWS: tuple[str, ...] = ("1d", "7d", "30d")
DERIVED_TERMINAL_INPUTS: tuple[str, ...] = tuple(
    f"terminal_{k}_{w}" for w in DERIVED_TERMINAL_WINDOWS for k in ("risk", "labelled"))
#: Each derivation's ``ModelConfig`` flag and the encoded fields it reads: trainers switch
#: on those whose fields the inputs carry. The order the model appends them in is
#: ``engine.model.derived.DERIVATION_MODULES``'.
DERIVATIONS: dict[str, tuple[str, ...]] = {"derived_numeric": DERIVED_INPUTS,
                                           "derived_terminal": DERIVED_TERMINAL_INPUTS,
                                           "derived_card_baseline": DERIVED_BASELINE_INPUTS}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class InputSpec(_Frozen):
    """Tensor sizes of an ``EncodedBatch`` plus the hash of the schema that produced them.

    Built from the encoder's ``FeatureSchema`` with ``InputSpec.from_schema``; kept as
    plain numbers so the model package never imports the encoder.
    """

    n_numeric: int = Field(ge=0)
    n_categorical: int = Field(ge=0)
    categorical_buckets: int = Field(ge=1)
    history_len: int = Field(ge=0)
    history_numeric: int = Field(ge=0)
    history_categorical: int = Field(ge=0)
    text_len: int = Field(ge=0)
    text_vocab: int = Field(ge=1)
    schema_hash: str
    numeric_names: tuple[str, ...] = ()
    categorical_names: tuple[str, ...] = ()
    history_categorical_names: tuple[str, ...] = ()

    @classmethod
    def from_schema(cls, schema: Any) -> InputSpec:
        """Read the sizes off a ``FeatureSchema`` (duck-typed: the encoder owns that class)."""
        def pick(*names: str, default: Any = None) -> Any:
            for name in names:
                value = getattr(schema, name, None)
                if value is not None:
                    return value() if callable(value) and not isinstance(value, (int, str, tuple, list)) else value
            if default is None:
                raise AttributeError(f"feature schema has none of {names}")
            return default

        numeric = tuple(pick("numeric_fields", "control_numeric_fields", "numeric_names", default=()))
        categorical = tuple(pick("categorical_fields", "control_categorical_fields", "categorical_names", default=()))
        hist_num = pick("history_numeric_fields", default=())
        hist_cat = pick("history_categorical_fields", default=())
        return cls(
            n_numeric=int(pick("n_numeric", default=len(numeric))),
            n_categorical=int(pick("n_categorical", default=len(categorical))),
            categorical_buckets=int(pick("categorical_buckets", "hash_buckets", "n_buckets")),
            history_len=int(pick("history_len", "history_length", "window")),
            history_numeric=int(pick("n_history_numeric", default=len(hist_num))),
            history_categorical=int(pick("n_history_categorical", default=len(hist_cat))),
            text_len=int(pick("text_len", "max_text_tokens", "text_length")),
            text_vocab=int(pick("text_vocab", "text_vocab_size", "vocab_size")),
            schema_hash=str(pick("schema_hash", "hash", "fingerprint")),
            numeric_names=tuple(str(n) for n in numeric),
            categorical_names=tuple(str(n) for n in categorical),
            history_categorical_names=tuple(str(n) for n in hist_cat),
        )


class HeadSpec(_Frozen):
    """One extra head on the shared pooled representation.

    ``single_label`` is a softmax over ``labels``; ``multi_label`` is one sigmoid per
    label; ``regression`` predicts ``len(labels)`` real numbers (``labels`` names them).
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    kind: Literal["single_label", "multi_label", "regression"]
    labels: tuple[str, ...] = Field(min_length=1)
    loss_weight: float = Field(default=1.0, ge=0)

    @model_validator(mode="after")
    def _reserved(self) -> HeadSpec:
        if self.name in ("verdict", "risk"):
            raise ValueError(f"head name {self.name!r} is reserved for the built-in heads")
        return self


class TreeShape(_Frozen):
    """What ``DecisionModel`` needs to build the ensemble before its weights load: the
    padded node arrays' sizes, the depth to walk, and the blend's weight."""

    n_trees: int = Field(ge=1)
    #: Nodes per tree, padded to the largest tree (padding nodes are never reached).
    n_nodes: int = Field(ge=1)
    #: Splits from root to the deepest leaf: the walk's number of steps.
    depth: int = Field(ge=0)
    n_features: int = Field(ge=1)
    #: Weight of the trees' log-odds in the calibrated risk (0 < w <= 1).
    weight: float = Field(gt=0, le=1)


class ModelConfig(_Frozen):
    """The default backbone is a small transformer over field tokens, sized for one CPU core.

    Sequence length and width set the CPU cost, so the defaults stay small: 2 layers,
    64 wide (``python ops/bench/model.py --quick``; figures in docs/performance.md).
    """

    inputs: InputSpec
    backbone: Literal["field_transformer", "hf"] = "field_transformer"
    d_model: int = Field(default=64, ge=8)
    n_layers: int = Field(default=2, ge=1)
    n_heads: int = Field(default=4, ge=1)
    ff_mult: int = Field(default=2, ge=1)
    dropout: float = Field(default=0.1, ge=0, lt=1)
    pooling: Literal["cls", "mean", "last"] = "cls"
    #: Numeric control fields are embedded one by one (value x per-field weights + field
    #: id), then summed in this many contiguous groups, one token each; 0 = one token per
    #: field. Grouping keeps the sequence near the ~32 tokens the CPU budget allows
    #: (26 numeric fields would otherwise double it) without mixing any text in.
    #: Field transformer only: the "hf" backbone always gives each field its own token.
    numeric_tokens: int = Field(default=6, ge=0)
    #: Piecewise-linear encoding (PLE) of the numeric fields against this many bins
    #: fitted on the training window (engine.model.numeric; Gorishniy et al. 2022), for
    #: the field tokens and the wide path; 0 = the first models' per-field GELU(x*w + b)
    #: of the value. Both backbones: the "hf" one embeds the fields through the same
    #: ``FieldEmbedder`` (engine.model.hf), PLE included. Chosen over the value
    #: embedding on the handbook's validation fold (docs/decision-model.md, "Quality on
    #: the handbook data").
    numeric_bins: int = Field(default=16, ge=0)
    #: PLE bin edges from a per-field decision tree on the labels, completed with
    #: quantiles: rare-event thresholds get their own edge (quantile bins alone put one
    #: wide bin over them and did worse than the value embedding; same section).
    target_bins: bool = True
    #: How many of the history window's most recent events become tokens (None = all).
    max_history: int | None = Field(default=None, ge=0)
    #: Categorical fields the model must not read (control and history columns of that
    #: name). Terminal ids by default: a hashed identity is easy to memorise and fails
    #: to generalise to next week's compromised terminals (the delayed-label terminal
    #: risk features carry what is known about a terminal); measured on the handbook's
    #: validation fold, docs/decision-model.md, "Quality on the handbook data".
    ignore_categorical: tuple[str, ...] = ("terminal",)
    #: Whether the model embeds the untrusted text segment at all. False: user text
    #: cannot move the model's outputs (the detector still screens it), for when the
    #: text adds no detection (issue 22; ``python ops/bench/user_text_train.py``,
    #: docs/field-isolation.md). Field transformer only.
    read_text: bool = True
    #: Append the card's mean amount and amount-to-mean ratio over 1h / 1d / 7d, derived
    #: inside the model from the velocity fields (engine.model.derived), to the numeric
    #: fields. Field transformer only.
    derived_numeric: bool = False
    #: Append the terminal's known frauds per window (count and smoothed log-odds), derived
    #: inside the model from its delayed share and label count (engine.model.derived).
    #: Field transformer only.
    derived_terminal: bool = False
    #: Append the amount and the card's recent mean, each against the card's mean over the
    #: older part of its 30-day window (before the last 1 d / 7 d), derived inside the
    #: model from the velocity fields (engine.model.derived).
    derived_card_baseline: bool = False
    #: Sparse mixture-of-experts feed-forward (engine.model.moe): this many experts per
    #: layer, each token routed to its ``moe_top_k`` best; 0 = the dense feed-forward.
    #: Field transformer only. Measured with ``python ops/bench/model_quality.py
    #: --variant moe='{"moe_experts": 4}'`` (docs/decision-quality.md).
    moe_experts: int = Field(default=0, ge=0)
    moe_top_k: int = Field(default=1, ge=1)
    #: Layers (1-based, < n_layers) that carry an early-exit verdict/risk head.
    early_exit_layers: tuple[int, ...] = ()
    extra_heads: tuple[HeadSpec, ...] = ()
    #: Gradient-boosted trees blended into every verdict and risk head (engine.model.trees).
    #: Never set by hand: training fits them (``TrainConfig.tree_blend``) and records their
    #: shape here, so the model directory loads with them. None: the network alone.
    trees: TreeShape | None = None
    #: Only for ``backbone="hf"``: a local directory (or GGUF file) of a pretrained model.
    hf_path: str | None = None
    hf_gguf_file: str | None = None
    #: Load the pretrained weights in 8 or 4 bits through bitsandbytes (CUDA only).
    hf_bits: Literal[4, 8] | None = None
    #: LoRA rank for the pretrained backbone (0 = train nothing inside it).
    hf_lora_rank: int = Field(default=0, ge=0)

    @classmethod
    def default_for(cls, inputs: InputSpec, **overrides: Any) -> ModelConfig:
        """The configuration every trainer starts from (``tollgate model train``, the
        quickstart, the backtest, ``fresh_model``): the field defaults, plus the derived card means,
        terminal frauds and card baselines when the inputs carry the fields they are derived from.
        Chosen on the four validation folds of the handbook protocol (docs/decision-quality.md). A field
        default would instead change what an older card without the field loads as."""
        transformer = overrides.get("backbone", "field_transformer") == "field_transformer"
        chosen = {flag: transformer and all(n in inputs.numeric_names for n in needed)
                  for flag, needed in DERIVATIONS.items()}
        return cls(inputs=inputs, **{**chosen, **overrides})

    @model_validator(mode="after")
    def _consistent(self) -> ModelConfig:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        for layer in self.early_exit_layers:
            if not 1 <= layer < self.n_layers:
                raise ValueError(f"early-exit layer {layer} must be in [1, {self.n_layers - 1}]")
        names = [h.name for h in self.extra_heads]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate extra head names: {names}")
        if self.backbone == "hf" and not self.read_text:
            raise ValueError("read_text=False is implemented for the field transformer only")
        if self.backbone == "hf" and not self.hf_path:
            raise ValueError("backbone 'hf' needs hf_path (a local directory; nothing is fetched)")
        if self.moe_experts and not 1 <= self.moe_top_k <= self.moe_experts:
            raise ValueError(f"moe_top_k {self.moe_top_k} must be in [1, moe_experts={self.moe_experts}]")
        if self.backbone == "hf" and any(getattr(self, flag) for flag in DERIVATIONS):
            raise ValueError(f"{', '.join(DERIVATIONS)} are implemented for the field transformer only")
        if self.backbone == "hf" and self.moe_experts:
            raise ValueError("moe_experts is implemented for the field transformer only")
        if self.backbone == "hf" and self.trees is not None:
            raise ValueError("the trees blend is implemented for the field transformer only")
        if self.backbone == "hf" and self.early_exit_layers:
            raise ValueError("early exit needs the field transformer's layer-by-layer stepping")
        return self


def output_names(config: ModelConfig) -> tuple[str, ...]:
    """An exported graph's outputs, in order: ``DecisionModel.forward``'s keys (here, not in
    ``engine.model.portable``, so that the NumPy serving path reads them without PyTorch)."""
    exits = [f"exit{k}.{h}" for k in config.early_exit_layers for h in ("verdict", "risk")]
    return (*exits, "verdict", "risk", *(h.name for h in config.extra_heads))
