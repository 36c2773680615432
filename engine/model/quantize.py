"""INT8 dynamic quantisation for CPU serving.

Linear-layer weights are stored as int8 and activations quantised on the fly
(``torch.ao.quantization.quantize_dynamic``). The attention projections inside
``nn.MultiheadAttention`` stay fp32 (PyTorch keeps them out on purpose); the
feed-forward layers and the heads, most of the weights, are quantised. The accuracy
cost is measured by ``tollgate backtest --int8`` and ``ops/bench/model.py``.
"""

from __future__ import annotations

import copy
import warnings

import torch
from torch import nn


def quantize_int8(model: nn.Module) -> nn.Module:
    """Return an int8 copy of ``model`` for CPU inference; the original is untouched."""
    # local: torch loads only on this path
    from torch.ao.quantization import quantize_dynamic

    clone = copy.deepcopy(model).cpu().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao deprecation notice, not actionable here
        quantized = quantize_dynamic(clone, {nn.Linear}, dtype=torch.qint8)
    for layer in quantized.modules():
        if isinstance(layer, nn.TransformerEncoderLayer):
            # The fused fp32 fast path reads ``linear1.weight`` as a tensor, which a
            # quantised linear does not have. PyTorch skips the fast path for a layer
            # with hooks, so a no-op hook routes it through the plain (quantised) path.
            layer.register_forward_hook(_no_op_hook)
    return quantized


def _no_op_hook(module: nn.Module, args: object, output: object) -> None:
    return None


def is_quantized(model: nn.Module) -> bool:
    return any(".quantized." in type(m).__module__ for m in model.modules())
