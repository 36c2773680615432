"""Choosing a flag threshold on validation scores, and reading rates at one.

One rule for every learned part of the detector: the network's threshold and its screen
threshold (``train``), each encoder runtime's (``train.calibrate_runtime``) and the
descriptor head's (``descriptor_head``), so a budget means the same thing for all of them.

>>> rates([0.9, 0.2, 0.7], [1, 0, 0], 0.5)
{'n': 3, 'positives': 1, 'negatives': 2, 'tpr': 1.0, 'fpr': 0.5}
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pick_threshold(scores: np.ndarray, labels: np.ndarray, max_fpr: float) -> float:
    """Lowest threshold (highest TPR) whose FPR on the negatives is at most ``max_fpr``.

    >>> pick_threshold(np.array([0.1, 0.2, 0.3, 0.8, 0.9]), np.array([0, 0, 0, 1, 1]), 0.0)
    0.55
    """
    neg = np.sort(scores[labels == 0])[::-1]
    allowed = int(np.floor(max_fpr * len(neg)))  # negatives we may flag
    # Threshold just above the (allowed+1)-th highest negative score.
    bar = neg[allowed] if allowed < len(neg) else -np.inf
    above = scores[(scores > bar)]
    # Nothing above it: a point past it on either scale (a probability's 1, a logit's bar + 1).
    next_up = above.min() if len(above) else max(1.0, bar + 1.0)
    # Midway between the last negative we refuse to flag and the next score up.
    return float(round((bar + next_up) / 2, 4)) if np.isfinite(bar) else float(next_up)


def pick_held_threshold(*budgets: tuple[np.ndarray, np.ndarray, float]) -> float:
    """Lowest threshold that holds every ``(scores, labels, max_fpr)`` budget at once: the
    largest of their ``pick_threshold`` (docs/detector.md, "A threshold held on memos people wrote").

    >>> pick_held_threshold((np.array([0.1, 0.9]), np.array([0, 1]), 0.0), (np.array([0.6, 0.9]), np.array([0, 1]), 0.0))
    0.75
    """
    return max(pick_threshold(scores, labels, max_fpr) for scores, labels, max_fpr in budgets)


def rates(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=int)
    flagged = s >= threshold
    pos, neg = int((y == 1).sum()), int((y == 0).sum())
    out = {"n": int(len(y)), "positives": pos, "negatives": neg}
    out["tpr"] = round(float(flagged[y == 1].mean()), 4) if pos else None
    out["fpr"] = round(float(flagged[y == 0].mean()), 4) if neg else None
    return out


def rates_by(scores: np.ndarray, labels: np.ndarray, keys: Sequence[str], threshold: float) -> dict[str, dict]:
    out = {}
    for key in sorted(set(keys)):
        idx = np.array([i for i, k in enumerate(keys) if k == key])
        out[key] = rates(scores[idx], labels[idx], threshold)
    return out
