"""The tensors the model reads, as named in the ``EncodedBatch`` contract.

The encoder (``engine/stages/encode.py``) owns ``EncodedBatch``; the model only reads its seven
tensors by name, so anything carrying them works (a real batch, a slice of one, or the
``ModelInputs`` built here for tests, benchmarks and warm-up).

>>> from engine.model.config import InputSpec
>>> spec = InputSpec(n_numeric=3, n_categorical=2, categorical_buckets=16, history_len=4,
...     history_numeric=2, history_categorical=1, text_len=5, text_vocab=50, schema_hash="h")
>>> b = random_inputs(spec, batch_size=2, seed=0)
>>> tuple(b.history_numeric.shape), b.batch_size
((2, 4, 2), 2)
>>> take_rows(b, torch.tensor([1])).batch_size
1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from engine.model.config import InputSpec

#: Field names of the ``EncodedBatch`` contract, in a fixed order.
TENSOR_FIELDS: tuple[str, ...] = (
    "control_numeric", "control_categorical",
    "history_numeric", "history_categorical", "history_mask",
    "text_ids", "text_mask",
)


@dataclass(slots=True, frozen=True)
class ModelInputs:
    """Tensors only, no Python objects; the same names and shapes as ``EncodedBatch``."""

    control_numeric: Tensor  # [B, Fn] float32
    control_categorical: Tensor  # [B, Fc] int64 (hash bucket ids)
    history_numeric: Tensor  # [B, N, Hn] float32
    history_categorical: Tensor  # [B, N, Hc] int64
    history_mask: Tensor  # [B, N] bool, True where a past event exists
    text_ids: Tensor  # [B, T] int64 (untrusted segment)
    text_mask: Tensor  # [B, T] bool

    @property
    def batch_size(self) -> int:
        return int(self.control_numeric.shape[0])


def as_inputs(batch: Any) -> ModelInputs:
    """View any object with the contract's attributes as ``ModelInputs``: tensors as they
    are, NumPy arrays (``engine.stages.encode.ArrayBatch``) without a copy."""
    if isinstance(batch, ModelInputs):
        return batch
    try:
        values = {name: getattr(batch, name) for name in TENSOR_FIELDS}
    except AttributeError as exc:
        raise TypeError(f"{type(batch).__name__} lacks an EncodedBatch tensor: {exc}") from None
    return ModelInputs(**{name: torch.from_numpy(v) if isinstance(v, np.ndarray) else v
                          for name, v in values.items()})


def inputs_to(batch: Any, device: torch.device | str) -> ModelInputs:
    """Every tensor moved to ``device`` (non-blocking where the source is pinned)."""
    inputs = as_inputs(batch)
    return ModelInputs(**{name: getattr(inputs, name).to(device, non_blocking=True) for name in TENSOR_FIELDS})


def take_rows(batch: Any, rows: Tensor | slice) -> ModelInputs:
    """Select rows (an index or bool tensor, or a slice) of every tensor."""
    inputs = as_inputs(batch)
    return ModelInputs(**{name: getattr(inputs, name)[rows] for name in TENSOR_FIELDS})


def concat_inputs(batches: list[Any]) -> ModelInputs:
    """Stack several batches into one, row after row."""
    parts = [as_inputs(b) for b in batches]
    return ModelInputs(**{name: torch.cat([getattr(p, name) for p in parts]) for name in TENSOR_FIELDS})


def random_inputs(spec: InputSpec, batch_size: int, seed: int = 0, text_fill: float = 0.5) -> ModelInputs:
    """Plausible random inputs of the right shapes (benchmarks, warm-up, shape tests)."""
    g = torch.Generator().manual_seed(seed)
    B, N, T = batch_size, spec.history_len, spec.text_len
    hist_mask = torch.rand(B, N, generator=g) < 0.8
    text_mask = torch.rand(B, T, generator=g) < text_fill
    return ModelInputs(
        control_numeric=torch.randn(B, spec.n_numeric, generator=g),
        control_categorical=torch.randint(0, spec.categorical_buckets, (B, spec.n_categorical), generator=g),
        history_numeric=torch.randn(B, N, spec.history_numeric, generator=g) * hist_mask[..., None],
        history_categorical=torch.randint(0, spec.categorical_buckets, (B, N, spec.history_categorical), generator=g),
        history_mask=hist_mask,
        text_ids=torch.randint(1, spec.text_vocab, (B, T), generator=g) * text_mask,
        text_mask=text_mask,
    )
