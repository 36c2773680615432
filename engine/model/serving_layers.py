"""Serving-only encoder layers for the CPU: the same arithmetic, cheaper attention.

``nn.TransformerEncoderLayer`` in eval mode on the CPU takes PyTorch's fused fast path,
whose masked softmax costs more than the matmuls around it on our short sequences
(~45 tokens, 4 heads of 16). Here attention is two batched matmuls (the scale and the
padding mask folded into the first) and a plain softmax: less CPU, outputs within 2e-7
of PyTorch's. Padded positions are computed rather than zeroed; nothing reads them (as
keys they are masked, and pooling skips them). In the last layer only position 0 is
computed (``forward_first``; the model asks for it when it pools the CLS token), since
CLS pooling reads nothing else. ``python ops/bench/engine_infer.py`` measures both;
figures in docs/performance.md.

``with_serving_layers(model)`` returns a copy of the model in which every plain
pre-norm GELU ``nn.TransformerEncoderLayer`` is wrapped by ``ServingEncoderLayer``;
the model passed in is untouched, and any other layer (post-norm, ReLU, a Hugging
Face backbone) is left as it is. The wrapper only ever serves: in training mode, or
with an attention mask or causal flag, it calls the wrapped layer itself.

>>> layer = nn.TransformerEncoderLayer(8, 2, 16, 0.1, activation="gelu", batch_first=True, norm_first=True)
>>> layer = layer.eval(); x = torch.randn(3, 5, 8); pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2,
...                                                                      [False] + [True] * 4])
>>> served = ServingEncoderLayer(layer)
>>> served.training, served.forward is not layer.forward
(False, True)
>>> with torch.inference_mode():
...     ours, theirs = served(x, src_key_padding_mask=pad), layer(x, src_key_padding_mask=pad)
>>> bool(torch.allclose(ours[~pad], theirs[~pad], atol=1e-5))
True

After the last layer CLS pooling reads position 0 only, and ``forward_first`` computes
that position alone (keys and values still from all of them):

>>> with torch.inference_mode():
...     first = served.forward_first(x, src_key_padding_mask=pad)
>>> tuple(first.shape), bool(torch.allclose(first, theirs[:, :1], atol=1e-5))
((3, 1, 8), True)
"""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class ServingEncoderLayer(nn.Module):
    """A pre-norm GELU ``nn.TransformerEncoderLayer`` (batch first) for inference."""

    def __init__(self, layer: nn.TransformerEncoderLayer, first_only: bool = True):
        super().__init__()
        if not is_servable(layer):
            raise ValueError("only batch-first, pre-norm GELU encoder layers without extra biases are served")
        self.layer = layer
        self.heads = layer.self_attn.num_heads
        #: Whether ``FieldTransformer.run_layer`` may call ``forward_first`` (False only
        #: to measure what it saves: ``ops/bench/engine_infer.py``).
        self.computes_first_only = first_only
        self.train(layer.training)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        if self.training or src_mask is not None or is_causal:
            return self.layer(src, src_mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        layer, attn = self.layer, self.layer.self_attn
        d = attn.embed_dim  # a number, not a traced size (ONNX export: engine.model.export)
        y = F.layer_norm(src, (d,), layer.norm1.weight, layer.norm1.bias, layer.norm1.eps)
        q, k, v = F.linear(y, attn.in_proj_weight, attn.in_proj_bias).chunk(3, dim=-1)
        return self._rest(src, self._attend(q, k, v, src_key_padding_mask))

    def forward_first(self, src: Tensor, src_key_padding_mask: Tensor | None = None) -> Tensor:
        """Position 0's output alone, [B, 1, d]: what CLS pooling reads after the last
        layer. Keys and values still come from every position; the query, attention
        output, feed-forward and second norm are computed for one position instead of L
        (~45), which leaves about a quarter of the layer's multiply-adds."""
        if self.training:
            return self.layer(src, src_key_padding_mask=src_key_padding_mask)[:, :1]
        layer, attn = self.layer, self.layer.self_attn
        d = attn.embed_dim  # a number, not a traced size (ONNX export: engine.model.export)
        y = F.layer_norm(src, (d,), layer.norm1.weight, layer.norm1.bias, layer.norm1.eps)
        q = F.linear(y[:, :1], attn.in_proj_weight[:d], attn.in_proj_bias[:d])
        k, v = F.linear(y, attn.in_proj_weight[d:], attn.in_proj_bias[d:]).chunk(2, dim=-1)
        return self._rest(src[:, :1], self._attend(q, k, v, src_key_padding_mask))

    def _attend(self, q: Tensor, k: Tensor, v: Tensor, pad: Tensor | None) -> Tensor:
        """Multi-head attention of queries [B, Lq, d] over keys and values [B, L, d]."""
        B, Lq, d = q.shape
        L, H = k.shape[1], self.heads
        dh = d // H
        # one (row, head) pair per matrix: [B*H, len, dh]
        q, k, v = (t.reshape(B, -1, H, dh).transpose(1, 2).reshape(B * H, -1, dh) for t in (q, k, v))
        # -inf on padded keys, added inside the score matmul (with the 1/sqrt(dh) scale)
        # (built from pad's own shape, not from B and L as numbers, so an ONNX export keeps
        # the batch and length dynamic: engine.model.export)
        bias = (k.new_zeros(B, L) if pad is None
                else torch.zeros_like(pad, dtype=q.dtype).masked_fill(pad.bool(), float("-inf")))
        bias = bias.unsqueeze(1).expand(-1, H, -1).flatten(0, 1).unsqueeze(1)  # [B*H, 1, L]
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=dh ** -0.5)  # [B*H, Lq, L]
        return torch.bmm(torch.softmax(scores, dim=-1), v).view(B, H, Lq, dh).transpose(1, 2).reshape(B, Lq, d)

    def _rest(self, src: Tensor, attended: Tensor) -> Tensor:
        """Attention output projection, residual, second norm and feed-forward."""
        layer = self.layer
        x = src + F.linear(attended, layer.self_attn.out_proj.weight, layer.self_attn.out_proj.bias)
        y = F.layer_norm(x, layer.norm2.normalized_shape, layer.norm2.weight, layer.norm2.bias, layer.norm2.eps)
        return x + F.linear(F.gelu(F.linear(y, layer.linear1.weight, layer.linear1.bias)),
                            layer.linear2.weight, layer.linear2.bias)


def is_servable(layer: nn.Module) -> bool:
    """Exactly the layer ``ServingEncoderLayer`` reproduces (the default backbone's)."""
    if type(layer) is not nn.TransformerEncoderLayer:
        return False
    attn = layer.self_attn
    return (layer.norm_first and layer.activation_relu_or_gelu == 2 and attn.batch_first
            and attn._qkv_same_embed_dim and attn.in_proj_bias is not None and attn.bias_k is None
            and not attn.add_zero_attn and attn.out_proj.bias is not None
            and isinstance(layer.norm1, nn.LayerNorm) and isinstance(layer.norm2, nn.LayerNorm))


def with_serving_layers(model: nn.Module, first_only: bool = True) -> nn.Module:
    """A copy of ``model`` with its servable encoder layers wrapped, or ``model`` itself
    when it has none. ``first_only``: a last layer whose CLS alone is read computes only
    that position."""
    if not any(is_servable(m) for m in model.modules()):
        return model
    served = copy.deepcopy(model)
    for parent in list(served.modules()):
        for name, child in list(parent.named_children()):
            if is_servable(child):
                setattr(parent, name, ServingEncoderLayer(child, first_only))
    return served.train(model.training)
