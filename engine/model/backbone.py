"""Backbones: turn an ``EncodedBatch`` into one hidden vector per token, layer by layer.

Field isolation carries through the network: every control field is its own token
tagged by a field-type embedding (numbers go in as numbers through a per-field
projection, never as digit text), each past event of the history window is one token,
and user-written text is a separate *untrusted* segment with its own segment embedding.
Text token ids come from the encoder's tokenizer, whose vocabulary cannot express a
field marker, so text can only ever land in text positions.

The default ``FieldTransformer`` is trained from scratch and sized for the CPU. The
optional Hugging Face backbone (``engine.model.hf``) reuses ``FieldEmbedder`` at the
pretrained model's width and feeds the result as ``inputs_embeds``.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from engine.model.config import InputSpec
from engine.model.inputs import ModelInputs
from engine.model.moe import MoEEncoderLayer
from engine.model.numeric import PLEFieldEmbedding

# Segment ids: which part of the event a token comes from.
SEG_CLS, SEG_NUMERIC, SEG_CATEGORICAL, SEG_HISTORY, SEG_TEXT = range(5)


def squash(x: Tensor) -> Tensor:
    """Signed log1p with NaN/inf scrubbed: amounts span six orders of magnitude, and a
    NaN that slipped past validation must not poison a whole micro-batch."""
    x = torch.nan_to_num(x, nan=0.0, posinf=1e6, neginf=-1e6)
    return torch.sign(x) * torch.log1p(torch.abs(x))


class NumericFieldEmbedding(nn.Module):
    """Each numeric field f: value -> GELU(x * w_f + b_f) -> shared projection, plus a field id."""

    def __init__(self, n_fields: int, d: int):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(n_fields, d) * 0.5)
        self.bias = nn.Parameter(torch.randn(n_fields, d) * 0.5)
        self.proj = nn.Linear(d, d)

    def forward(self, x: Tensor) -> Tensor:  # [B, F] -> [B, F, d]
        return self.proj(torch.nn.functional.gelu(x[..., None] * self.weight + self.bias))


class FieldEmbedder(nn.Module):
    """Builds the token sequence [CLS | numeric fields | categorical fields | history | text].

    Returns embeddings [B, L, d] and a padding mask [B, L] (True = ignore), the
    convention of ``nn.TransformerEncoder`` and (inverted) of Hugging Face models.
    """

    def __init__(self, spec: InputSpec, d: int, numeric_tokens: int = 0, ignore: tuple[str, ...] = (),
                 numeric_bins: int = 0, max_history: int | None = None, read_text: bool = True):
        super().__init__()
        self.spec = spec
        #: False: the untrusted text segment is never embedded (``ModelConfig.read_text``).
        self.read_text = read_text
        #: True only in a graph being exported (``engine.model.export``): every position
        #: given is kept (masked ones included) instead of trimming trailing padding, which
        #: would bake one batch's lengths into the graph (its runner trims the inputs
        #: instead); numeric fields are summed into their tokens by a matmul, since the
        #: ONNX exporter's index_add drops all but one of repeated indices.
        self.for_export = False
        self.max_history = spec.history_len if max_history is None else min(max_history, spec.history_len)
        # 0/1 per categorical column: ignored fields contribute nothing (their token keeps
        # only its field and segment embeddings).
        self.register_buffer("cat_keep", torch.tensor(
            [0.0 if n in ignore else 1.0 for n in spec.categorical_names] or [1.0] * spec.n_categorical),
            persistent=False)
        self.register_buffer("hist_cat_keep", torch.tensor(
            [0.0 if n in ignore else 1.0 for n in spec.history_categorical_names]
            or [1.0] * spec.history_categorical), persistent=False)
        n_groups = spec.n_numeric if numeric_tokens <= 0 else min(numeric_tokens, spec.n_numeric)
        # group[f] = the token numeric field f is summed into (contiguous, near-equal groups)
        self.register_buffer("numeric_group", torch.arange(spec.n_numeric) * max(1, n_groups)
                             // max(1, spec.n_numeric), persistent=False)
        self.n_numeric_tokens = n_groups
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.segment = nn.Embedding(5, d)
        self.field = nn.Embedding(max(1, spec.n_numeric + spec.n_categorical), d)
        # numeric_bins > 0: piecewise-linear encoding against bins fitted on the training
        # window (engine.model.numeric); 0: the first models' GELU(x * w_f + b_f) of the value.
        self.numeric: nn.Module = (PLEFieldEmbedding(max(1, spec.n_numeric), numeric_bins, d) if numeric_bins
                                   else NumericFieldEmbedding(max(1, spec.n_numeric), d))
        self.numeric_bins = numeric_bins
        self.buckets = nn.Embedding(spec.categorical_buckets, d)
        self.hist_numeric = nn.Linear(max(1, spec.history_numeric), d)
        self.hist_categorical = nn.Embedding(spec.categorical_buckets, d)
        self.hist_position = nn.Embedding(max(1, spec.history_len), d)
        self.text = nn.Embedding(spec.text_vocab, d, padding_idx=0)
        self.text_position = nn.Embedding(max(1, spec.text_len), d)
        self.norm = nn.LayerNorm(d)
        self.n_control = 1 + self.n_numeric_tokens + spec.n_categorical

    def numeric_input(self, x: Tensor) -> Tensor:
        """What the numeric embedding reads: the encoder's values, NaN/inf scrubbed; the
        value embedding also squashes them (PLE's fitted bins need no rescaling)."""
        return squash(x.float()) if not self.numeric_bins else torch.nan_to_num(
            x.float(), nan=0.0, posinf=1e6, neginf=-1e6)

    def forward(self, b: ModelInputs) -> tuple[Tensor, Tensor]:
        spec, B = self.spec, b.control_numeric.shape[0]
        dev = self.cls.device
        parts = [self.cls.expand(B, -1, -1) + self.segment.weight[SEG_CLS]]
        if spec.n_numeric:
            ids = torch.arange(spec.n_numeric, device=dev)
            fields = self.numeric(self.numeric_input(b.control_numeric)) + self.field(ids)  # [B, Fn, d]
            if self.n_numeric_tokens < spec.n_numeric:
                if self.for_export:
                    onehot = torch.nn.functional.one_hot(self.numeric_group, self.n_numeric_tokens)
                    fields = torch.matmul(onehot.to(fields.dtype).t(), fields)  # [G, Fn] @ [B, Fn, d]
                else:
                    grouped = fields.new_zeros(B, self.n_numeric_tokens, fields.shape[-1])
                    fields = grouped.index_add_(1, self.numeric_group, fields)
            parts.append(fields + self.segment.weight[SEG_NUMERIC])
        if spec.n_categorical:
            ids = torch.arange(spec.n_numeric, spec.n_numeric + spec.n_categorical, device=dev)
            cats = b.control_categorical.long().clamp(0, spec.categorical_buckets - 1)
            parts.append(self.buckets(cats) * self.cat_keep[:, None] + self.field(ids)
                         + self.segment.weight[SEG_CATEGORICAL])
        masks = [torch.zeros(B, self.n_control, dtype=torch.bool, device=dev)]
        # Trailing positions that are padding in every row are dropped: they are masked
        # anyway, so the result is identical, and a batch without memos (most payments)
        # then costs no attention over 64 empty text slots.
        n_hist = ((min(self.max_history, _used_length(b.history_mask)) if not self.for_export
                   else b.history_mask.shape[1]) if self.max_history else 0)
        if n_hist:
            h = self.hist_position.weight[:n_hist] + self.segment.weight[SEG_HISTORY]
            if spec.history_numeric:
                h = h + self.hist_numeric(squash(b.history_numeric[:, :n_hist].float()))
            if spec.history_categorical:
                cats = b.history_categorical[:, :n_hist].long().clamp(0, spec.categorical_buckets - 1)
                h = h + (self.hist_categorical(cats) * self.hist_cat_keep[:, None]).sum(dim=2)
            parts.append(h.expand(B, -1, -1) if h.dim() == 2 else h)
            masks.append(~b.history_mask[:, :n_hist].bool())
        n_text = ((_used_length(b.text_mask) if not self.for_export else b.text_mask.shape[1])
                  if spec.text_len and self.read_text else 0)
        if n_text:
            ids = b.text_ids[:, :n_text].long().clamp(0, spec.text_vocab - 1)
            parts.append(self.text(ids) + self.text_position.weight[:n_text]
                         + self.segment.weight[SEG_TEXT])
            masks.append(~b.text_mask[:, :n_text].bool())
        return self.norm(torch.cat(parts, dim=1)), torch.cat(masks, dim=1)


def _used_length(mask: Tensor) -> int:
    """1 + the last position that is valid in any row (0 if none)."""
    used = mask.bool().any(dim=0).nonzero()
    return int(used[-1]) + 1 if used.numel() else 0


class FieldTransformer(nn.Module):
    """Pre-norm transformer encoder over field tokens; yields the hidden states after each layer.

    Layers are stepped one at a time (not ``nn.TransformerEncoder``) so early-exit heads
    can look at intermediate layers and stop rows that are already confident.
    """

    def __init__(self, spec: InputSpec, d: int = 64, n_layers: int = 2, n_heads: int = 4,
                 ff_mult: int = 2, dropout: float = 0.1, numeric_tokens: int = 0,
                 ignore_categorical: tuple[str, ...] = (), numeric_bins: int = 0,
                 max_history: int | None = None, read_text: bool = True, moe_experts: int = 0,
                 moe_top_k: int = 1):
        super().__init__()
        self.embed = FieldEmbedder(spec, d, numeric_tokens, ignore_categorical, numeric_bins, max_history,
                                   read_text=read_text)
        self.layers = nn.ModuleList(
            MoEEncoderLayer(d, n_heads, d * ff_mult, dropout, moe_experts, moe_top_k) if moe_experts else
            nn.TransformerEncoderLayer(d, n_heads, d * ff_mult, dropout, activation="gelu",
                                       batch_first=True, norm_first=True)
            for _ in range(n_layers)
        )
        self.final_norm = nn.LayerNorm(d)
        self.d_model = d

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def embed_inputs(self, b: ModelInputs) -> tuple[Tensor, Tensor]:
        return self.embed(b)

    def run_layer(self, i: int, h: Tensor, pad: Tensor, *, first_only: bool = False) -> Tensor:
        """Layer ``i`` over [B, L, d]. ``first_only``: only position 0 is read afterwards
        (CLS pooling after the last layer), so [B, 1, d] is returned: the serving layer
        (``engine.model.serving_layers``) then computes that position alone; any other layer
        computes them all and keeps the first. The values are the same either way."""
        layer = self.layers[i]
        if first_only and getattr(layer, "computes_first_only", False):
            return layer.forward_first(h, src_key_padding_mask=pad)
        out = layer(h, src_key_padding_mask=pad)
        return out[:, :1] if first_only else out

    def finish(self, h: Tensor) -> Tensor:
        """Normalise a layer output before pooling (pre-norm stacks need a final norm)."""
        return self.final_norm(h)


def pool(h: Tensor, pad: Tensor, how: str) -> Tensor:
    """cls / mean / last-token pooling over [B, L, d] with padding mask [B, L] (True = pad).

    >>> h = torch.arange(6.).view(1, 3, 2); pad = torch.tensor([[False, False, True]])
    >>> pool(h, pad, "cls").tolist(), pool(h, pad, "mean").tolist(), pool(h, pad, "last").tolist()
    ([[0.0, 1.0]], [[1.0, 2.0]], [[2.0, 3.0]])
    """
    if how == "cls":
        return h[:, 0]
    keep = (~pad).to(h.dtype)
    if how == "mean":
        return (h * keep[..., None]).sum(1) / keep.sum(1, keepdim=True).clamp_min(1.0)
    if how == "last":
        positions = torch.arange(h.shape[1], device=h.device).expand_as(keep)
        last = torch.where(keep.bool(), positions, torch.zeros_like(positions)).max(dim=1).values
        return h[torch.arange(h.shape[0], device=h.device), last]
    raise ValueError(f"unknown pooling {how!r}: use cls, mean or last")
