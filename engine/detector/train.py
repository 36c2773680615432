"""Train, threshold and evaluate the detector.

Steps (``train_detector``):

1. Featurise the training set with ``features.featurize`` — the serving path.
2. Pick the L2 strength ``C`` by grouped 5-fold cross-validation on the training set
   (average precision of the out-of-fold scores).
3. Pick the flag threshold on the same out-of-fold scores: the highest TPR whose
   benign FPR stays within ``max_fpr`` (default 1 %). No held-out text is touched.
4. Refit on the whole training set, then measure on every held-out set
   (``evaluate``) and write ``detector.safetensors`` + ``detector.json``.

>>> rates([0.9, 0.2, 0.7], [1, 0, 0], 0.5)
{'n': 3, 'positives': 1, 'negatives': 2, 'tpr': 1.0, 'fpr': 0.5}
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from engine.detector.data import DetectorData, LabelledTexts, assemble
from engine.detector.features import DENSE_NAMES, HASH_BITS, TextFeatures, design_matrix, featurize, featurize_views
from engine.detector.model import DetectorWeights

C_GRID: tuple[float, ...] = (1.0, 4.0, 16.0)


def featurize_all(texts: Sequence[str], progress: Callable[[str], None] | None = None) -> list[list[TextFeatures]]:
    """Every view of every text (``features.featurize_views``): the serving path."""
    out = []
    for i, t in enumerate(texts):
        out.append(featurize_views(t)[1] or [_EMPTY])
        if progress and (i + 1) % 1000 == 0:
            progress(f"featurised {i + 1}/{len(texts)}")
    return out


def _weights_of(model) -> DetectorWeights:
    coef = model.coef_[0].astype(np.float32)
    dim = 1 << HASH_BITS
    return DetectorWeights(hashed=coef[:dim].copy(), dense=coef[dim:].copy(), bias=float(model.intercept_[0]))


def max_view_score(weights: DetectorWeights, views: list[TextFeatures]) -> float:
    return max(weights.probability(v) for v in views)


_EMPTY = TextFeatures(np.zeros(0, np.int64), 0.0, np.zeros(0, np.int64), 0.0,
                      np.zeros(len(DENSE_NAMES), np.float32), {})


#: Real long benign English (e-mail lines) is scarce next to ~1,500 generated memos, yet
#: it is what BIPIA-style attack sentences look most like; these rows count extra.
KIND_WEIGHTS: dict[str, float] = {"email_segment": 3.0, "email_context_clean": 3.0}


def sample_weights(kinds: Sequence[str]) -> np.ndarray:
    return np.array([KIND_WEIGHTS.get(k, 1.0) for k in kinds])


def _fit(X, y: np.ndarray, C: float, weights: np.ndarray | None = None):
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=C, class_weight="balanced", solver="liblinear", max_iter=2000)
    model.fit(X, y, sample_weight=weights)
    return model


def out_of_fold_scores(X, y: np.ndarray, groups: Sequence[str], views: list[list[TextFeatures]],
                       C: float, seed: int, folds: int = 5, weights: np.ndarray | None = None) -> np.ndarray:
    """Each training text scored, exactly as served (max over views), by a model that
    never saw its group."""
    from sklearn.model_selection import StratifiedGroupKFold

    oof = np.zeros(len(y))
    for train_idx, val_idx in StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(X, y, groups):
        w = None if weights is None else weights[train_idx]
        fold_weights = _weights_of(_fit(X[train_idx], y[train_idx], C, w))
        oof[val_idx] = [max_view_score(fold_weights, views[i]) for i in val_idx]
    return oof


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
    lowest_pos_above = above.min() if len(above) else 1.0
    # Midway between the last negative we refuse to flag and the next score up.
    return float(round((bar + lowest_pos_above) / 2, 4)) if np.isfinite(bar) else float(lowest_pos_above)


def rates(scores: Sequence[float], labels: Sequence[int], threshold: float) -> dict:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=int)
    flagged = s >= threshold
    pos, neg = int((y == 1).sum()), int((y == 0).sum())
    out = {"n": int(len(y)), "positives": pos, "negatives": neg}
    out["tpr"] = round(float(flagged[y == 1].mean()), 4) if pos else None
    out["fpr"] = round(float(flagged[y == 0].mean()), 4) if neg else None
    return out


def evaluate(score: Callable[[Sequence[str]], list[float]], data: DetectorData, threshold: float) -> dict:
    """Rates on every held-out set, plus the false positives and misses by name."""
    from sklearn.metrics import roc_auc_score

    report: dict = {}
    inj = data.test_injection
    s = score(inj.texts)
    report["injection_test"] = rates(s, inj.labels, threshold)
    if 0 < sum(inj.labels) < len(inj.labels):
        report["injection_test"]["auc"] = round(float(roc_auc_score(inj.labels, s)), 4)
    by_kind: dict[str, dict] = {}
    for kind in sorted(set(inj.kinds)):
        idx = [i for i, k in enumerate(inj.kinds) if k == kind]
        by_kind[kind] = rates([s[i] for i in idx], [inj.labels[i] for i in idx], threshold)
    report["injection_test_by_kind"] = by_kind
    report["injection_test_missed"] = [inj.texts[i][:80] for i in range(len(s)) if inj.labels[i] and s[i] < threshold]
    sb = score(data.heldout_benign)
    report["heldout_benign"] = rates(sb, [0] * len(sb), threshold)
    report["heldout_benign_false_positives"] = [t for t, x in zip(data.heldout_benign, sb) if x >= threshold]
    sa = score(data.heldout_attacks)
    report["heldout_attacks"] = rates(sa, [1] * len(sa), threshold)
    report["heldout_attacks_missed"] = [t for t, x in zip(data.heldout_attacks, sa) if x < threshold]
    gen = data.generated_test
    report["generated_test"] = rates(score(gen.texts), gen.labels, threshold)
    return report


def train_detector(out_dir: Path, data: DetectorData | None = None, seed: int = 7, max_fpr: float = 0.01,
                   c_grid: Sequence[float] = C_GRID, progress: Callable[[str], None] = print) -> tuple[DetectorWeights, dict]:
    """Fit, threshold, evaluate and save. Returns the weights and the evaluation report."""
    from sklearn.metrics import average_precision_score

    started = time.perf_counter()
    data = data or assemble(seed=seed)
    progress(f"data: {data.summary}")
    train: LabelledTexts = data.train
    views = featurize_all(train.texts, progress)
    # Fitted on whole texts; scored (out-of-fold and in service) as the max over views.
    X = design_matrix([featurize(t)[1] or _EMPTY for t in train.texts])
    y = np.asarray(train.labels)
    row_weights = sample_weights(train.kinds)
    cv: dict[str, float] = {}
    best_c, best_ap, best_oof = c_grid[0], -1.0, None
    for C in c_grid:
        oof = out_of_fold_scores(X, y, train.groups, views, C, seed, weights=row_weights)
        ap = float(average_precision_score(y, oof))
        cv[str(C)] = round(ap, 4)
        progress(f"C={C:g}: out-of-fold average precision {ap:.4f}")
        if ap > best_ap:
            best_c, best_ap, best_oof = C, ap, oof
    threshold = pick_threshold(best_oof, y, max_fpr)
    oof_rates = rates(best_oof, y, threshold)
    progress(f"threshold {threshold:.4f} (out-of-fold TPR {oof_rates['tpr']}, FPR {oof_rates['fpr']})")
    weights = _weights_of(_fit(X, y, best_c, row_weights))
    weights.threshold = threshold
    coef = np.concatenate([weights.hashed, weights.dense])

    def score(texts: Sequence[str]) -> list[float]:
        return [max_view_score(weights, v) for v in featurize_all(texts)]

    report = evaluate(score, data, threshold)
    digest = hashlib.sha256(coef.tobytes()).hexdigest()[:12]
    weights.card = {
        "version": f"detector-{datetime.now(timezone.utc):%Y%m%d}-{digest}",
        "trained_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": "logistic regression (liblinear, L2, class_weight=balanced) on hashed char/word n-grams + named signals",
        "C": best_c, "cv_average_precision": cv,
        "threshold_rule": f"highest out-of-fold TPR with benign FPR <= {max_fpr:g} (grouped 5-fold CV on the training set)",
        "out_of_fold": oof_rates, "data": data.summary, "evaluation": report,
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    weights.save(out_dir)
    progress(f"saved {out_dir} ({weights.card['version']}) in {weights.card['train_seconds']} s")
    return weights, report
