"""The replayed, encoded window of a backtest, and an on-disk cache of it.

Replaying ~500,000 handbook events through the feature store and the encoder takes
minutes on one core and is deterministic: the same file, window and feature schema give
the same tensors. ``tollgate backtest --cache-dir DIR`` keeps them, so comparing model
configurations on a fold costs only the training. The cache is keyed by the window, the
replay's micro-batch size, the feature-schema hash and a fingerprint of the events (ids,
times, customers, terminals, amounts, labels), so a changed file or feature definition
never reuses stale tensors. Scoring from the cache still goes through ``Inference``, on
the very micro-batches the replay produced.

>>> import tempfile
>>> from engine.stages.encode import EncodedBatch, FeatureSchema
>>> schema = FeatureSchema.default()
>>> w = EncodedWindow(np.arange(3), EncodedBatch.empty(schema, 3), np.arange(3, 5),
...                   [EncodedBatch.empty(schema, 1), EncodedBatch.empty(schema, 1)])
>>> d = tempfile.mkdtemp()
>>> _ = w.save(f"{d}/w.safetensors")
>>> back = EncodedWindow.load(f"{d}/w.safetensors")
>>> back.train_rows.tolist(), len(back.train), [len(b) for b in back.test_batches]
([0, 1, 2], 3, [1, 1])
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from engine.stages.encode import EncodedBatch

_TENSORS = ("control_numeric", "control_categorical", "history_numeric", "history_categorical",
            "history_mask", "text_ids", "text_mask")
_FINGERPRINT_COLUMNS = ("event_id", "event_time_ms", "customer_id", "terminal_id", "amount", "tx_fraud")


@dataclass(slots=True)
class EncodedWindow:
    """The training window's encoded events and the test window's micro-batches.

    ``train_rows`` / ``test_rows`` index the (window-filtered) frame; ``test_batches``
    are the replay's micro-batches restricted to test events, in order.
    """

    train_rows: np.ndarray
    train: Any  # EncodedBatch
    test_rows: np.ndarray
    test_batches: list[Any]  # list[EncodedBatch]

    def save(self, path: str | Path) -> Path:
        """One safetensors file (no pickle); written to a temporary name, then renamed."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        test = EncodedBatch.concat(self.test_batches)
        tensors = {"train_rows": torch.from_numpy(np.asarray(self.train_rows, dtype=np.int64)),
                   "test_rows": torch.from_numpy(np.asarray(self.test_rows, dtype=np.int64)),
                   "test_sizes": torch.tensor([len(b) for b in self.test_batches], dtype=torch.int64)}
        for prefix, batch in (("train.", self.train), ("test.", test)):
            for name in _TENSORS:
                tensors[prefix + name] = getattr(batch, name).contiguous()
        tmp = out.with_name(out.name + ".tmp")
        save_file(tensors, str(tmp))
        tmp.replace(out)
        return out

    @classmethod
    def load(cls, path: str | Path) -> EncodedWindow:
        t = load_file(str(path))
        train = EncodedBatch(*(t["train." + n] for n in _TENSORS))
        test = EncodedBatch(*(t["test." + n] for n in _TENSORS))
        sizes = t["test_sizes"].tolist()
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        batches = [test[int(a):int(b)] for a, b in zip(starts[:-1], starts[1:])]
        return cls(t["train_rows"].numpy(), train, t["test_rows"].numpy(), batches)


def cache_key(frame: pd.DataFrame, window: Any, batch_size: int, schema_hash: str) -> str:
    """Hex digest naming one replay: window, micro-batch size, feature schema and events."""
    h = hashlib.sha256()
    h.update(json.dumps({"window": [window.train_start_ms, window.train_days, window.delay_days,
                                    window.test_days, window.history_days],
                         "batch_size": batch_size, "schema": schema_hash, "rows": len(frame)}).encode())
    cols = [c for c in _FINGERPRINT_COLUMNS if c in frame.columns]
    h.update(pd.util.hash_pandas_object(frame[cols], index=False).to_numpy().tobytes())
    return h.hexdigest()[:20]
