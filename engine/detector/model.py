"""The detector's weights: a logistic regression over ``features.extract``.

Stored as ``detector.safetensors`` (tensors only, no pickle) next to
``detector.json`` (the model card: feature schema, threshold, training data summary,
measured rates). The shipped artifact lives in the package under
``engine/assets/detector/`` and is read with ``importlib.resources``: nothing is ever
fetched from a hub.

>>> import numpy as np
>>> from engine.detector.features import extract, DENSE_NAMES, HASH_BITS
>>> m = DetectorWeights(np.zeros(1 << HASH_BITS, np.float32), np.zeros(len(DENSE_NAMES), np.float32), 0.0)
>>> m.probability(extract("rent June"))
0.5
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from engine.detector.features import DENSE_NAMES, HASH_BITS, TextFeatures, feature_schema

WEIGHTS_FILE = "detector.safetensors"
CARD_FILE = "detector.json"


class DetectorArtifactError(RuntimeError):
    """The artifact is missing, unreadable, or was trained on other features."""


@dataclass(slots=True)
class DetectorWeights:
    hashed: np.ndarray  # float32 [2**HASH_BITS]
    dense: np.ndarray  # float32 [len(DENSE_NAMES)]
    bias: float
    threshold: float = 0.5
    card: dict[str, Any] = field(default_factory=dict)

    def logit(self, f: TextFeatures) -> float:
        z = self.bias + float(self.dense @ f.dense)
        if len(f.char_idx):
            z += f.char_weight * float(self.hashed[f.char_idx].sum())
        if len(f.word_idx):
            z += f.word_weight * float(self.hashed[f.word_idx].sum())
        return z

    def probability(self, f: TextFeatures) -> float:
        z = self.logit(f)
        # Numerically safe sigmoid; clamp keeps the score strictly a probability.
        if z >= 0:
            p = 1.0 / (1.0 + math.exp(-min(z, 60.0)))
        else:
            e = math.exp(max(z, -60.0))
            p = e / (1.0 + e)
        return min(max(p, 0.0), 1.0)

    def contributions(self, f: TextFeatures) -> dict[str, float]:
        """Logit contribution of each dense signal plus the n-gram block: for reports."""
        out = {name: float(w * x) for name, w, x in zip(DENSE_NAMES, self.dense, f.dense) if x}
        out["ngrams"] = self.logit(f) - self.bias - sum(out.values())
        return out

    def save(self, directory: Path) -> None:
        # local: safetensors loads only to read or write weights
        from safetensors.numpy import save_file

        directory.mkdir(parents=True, exist_ok=True)
        save_file({"hashed": self.hashed.astype(np.float32), "dense": self.dense.astype(np.float32),
                   "bias": np.array([self.bias], dtype=np.float32)}, str(directory / WEIGHTS_FILE))
        card = dict(self.card, feature_schema=feature_schema(), threshold=float(self.threshold),
                    dense_names=list(DENSE_NAMES), hash_bits=HASH_BITS)
        (directory / CARD_FILE).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")

    @classmethod
    def load(cls, directory: Path | None = None) -> DetectorWeights:
        """Load from ``directory``, or from the package's shipped artifact when ``None``."""
        # local: safetensors loads only to read or write weights
        from safetensors.numpy import load

        try:
            if directory is None:
                base = resources.files("engine") / "assets" / "detector"
                blob = (base / WEIGHTS_FILE).read_bytes()
                card = json.loads((base / CARD_FILE).read_text())
            else:
                blob = (Path(directory) / WEIGHTS_FILE).read_bytes()
                card = json.loads((Path(directory) / CARD_FILE).read_text())
        except (FileNotFoundError, json.JSONDecodeError) as exc:
            where = directory or "engine/assets/detector"
            raise DetectorArtifactError(f"no usable detector artifact in {where}: {exc}; "
                                        "run `tollgate detector train`") from exc
        if card.get("feature_schema") != feature_schema():
            raise DetectorArtifactError(
                f"detector artifact was trained on features {card.get('feature_schema')!r}, "
                f"this code extracts {feature_schema()!r}; retrain with `tollgate detector train`")
        tensors = load(blob)
        hashed, dense = tensors["hashed"], tensors["dense"]
        if hashed.shape != (1 << HASH_BITS,) or dense.shape != (len(DENSE_NAMES),):
            raise DetectorArtifactError(f"detector tensors have shapes {hashed.shape}, {dense.shape}")
        return cls(hashed=hashed, dense=dense, bias=float(tensors["bias"][0]),
                   threshold=float(card["threshold"]), card=card)
