"""Train, threshold and evaluate the detector.

Steps (``train_detector``):

1. Featurise the training set with ``features.featurize`` — the serving path.
2. Pick the L2 strength ``C`` by grouped 5-fold cross-validation on the training set
   (average precision of the out-of-fold scores).
3. Pick the flag threshold on the same out-of-fold scores: the highest TPR whose
   benign FPR stays within ``max_fpr`` (default 1 %). No held-out text is touched.
   The whole e-mails of the training split are scored out-of-fold too (by the fold
   model that never saw their group) and reported as ``out_of_fold_emails``: the
   validation figure for e-mail false positives.
4. Refit on the whole training set, then measure on every held-out set
   (``evaluate``) and write ``detector.safetensors`` + ``detector.json``.

>>> rates([0.9, 0.2, 0.7], [1, 0, 0], 0.5)
{'n': 3, 'positives': 1, 'negatives': 2, 'tpr': 1.0, 'fpr': 0.5}
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from engine.detector.features import DENSE_NAMES, HASH_BITS, TextFeatures, design_matrix, featurize, featurize_views
from engine.detector.model import DetectorWeights
from engine.detector.signals import ALL_SIGNALS
from engine.offline.detector_corpus.data import DetectorData, LabelledTexts, assemble

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


def bucket_idf(X) -> np.ndarray:
    """Smooth inverse document frequency of every hashed bucket over the rows of ``X``:
    ``log((1 + N) / (1 + df)) + 1`` (scikit-learn's definition)."""
    hashed = X[:, :1 << HASH_BITS].tocsc()
    df = np.diff(hashed.indptr)  # rows with a non-zero in each column
    return (np.log((1 + X.shape[0]) / (1 + df)) + 1).astype(np.float64)


#: The named signals enter the fit multiplied by this (and their weights are divided by it
#: again, so served features are unchanged): the L2 penalty on them is that many times
#: lighter squared. Without it the model memorises n-gram surface forms of the training
#: attacks and leaves the signals small, so an unseen forged marker ("country: BE",
#: "[PAD]") that fires ``forged_marker`` still scores low. Chosen on grouped out-of-fold
#: scores (``docs/detector.md``).
SIGNAL_SCALE = 4.0
_N_SIGNALS = len(ALL_SIGNALS)


def _fit(X, y: np.ndarray, C: float, weights: np.ndarray | None = None) -> DetectorWeights:
    """Logistic regression on IDF-scaled n-grams, with the IDF folded back into the weights.

    Why IDF: the attacks are English sentences and most benign rows are not, so without
    it the model gives "the", " th", "ion" positive weight and flags any English text
    ("the usual 😂", "prescription"). Scaling a bucket by its IDF makes the L2 penalty
    bite harder on frequent n-grams (a weight ``w`` on the scaled feature is ``w·idf``
    on the raw one), so only distinctive n-grams carry weight. Folded into the stored
    weights, it costs nothing at serving time: the served features are unchanged.
    """
    # local: scipy loads only where sparse features are built
    from scipy import sparse

    # local: scikit-learn loads only for training and evaluation
    from sklearn.linear_model import LogisticRegression

    idf = bucket_idf(X)
    dense_scale = np.ones(X.shape[1] - len(idf))
    dense_scale[:_N_SIGNALS] = SIGNAL_SCALE
    scale = sparse.diags(np.concatenate([idf, dense_scale]))
    model = LogisticRegression(C=C, class_weight="balanced", solver="liblinear", max_iter=2000)
    model.fit(X @ scale, y, sample_weight=weights)
    folded = _weights_of(model)
    folded.hashed = (folded.hashed * idf).astype(np.float32)
    folded.dense = (folded.dense * dense_scale).astype(np.float32)
    return folded


def out_of_fold_scores(X, y: np.ndarray, groups: Sequence[str], views: list[list[TextFeatures]],
                       C: float, seed: int, folds: int = 5, weights: np.ndarray | None = None,
                       extra: tuple[Sequence[str], list[list[TextFeatures]]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each training text scored, exactly as served (max over views), by a model that
    never saw its group; and each ``extra`` text (its group, its views) by the fold
    model that held out that group (NaN when no fold did)."""
    # local: scikit-learn loads only for training and evaluation
    from sklearn.model_selection import StratifiedGroupKFold

    oof = np.zeros(len(y))
    extra_groups, extra_views = extra if extra is not None else ((), [])
    extra_scores = np.full(len(extra_groups), np.nan)
    for train_idx, val_idx in StratifiedGroupKFold(folds, shuffle=True, random_state=seed).split(X, y, groups):
        w = None if weights is None else weights[train_idx]
        fold_weights = _fit(X[train_idx], y[train_idx], C, w)
        oof[val_idx] = [max_view_score(fold_weights, views[i]) for i in val_idx]
        held = {groups[i] for i in val_idx}
        for j, g in enumerate(extra_groups):
            if g in held:
                extra_scores[j] = max_view_score(fold_weights, extra_views[j])
    return oof, extra_scores


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
    # local: scikit-learn loads only for training and evaluation
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
    report["injection_test_false_positives"] = [inj.texts[i][:80] for i in range(len(s))
                                                if not inj.labels[i] and s[i] >= threshold]
    sb = score(data.heldout_benign)
    report["heldout_benign"] = rates(sb, [0] * len(sb), threshold)
    report["heldout_benign_false_positives"] = [t for t, x in zip(data.heldout_benign, sb) if x >= threshold]
    sa = score(data.heldout_attacks)
    report["heldout_attacks"] = rates(sa, [1] * len(sa), threshold)
    report["heldout_attacks_missed"] = [t for t, x in zip(data.heldout_attacks, sa) if x < threshold]
    gen = data.generated_test
    report["generated_test"] = rates(score(gen.texts), gen.labels, threshold)
    if data.generated_business_test:
        sg = score(data.generated_business_test)
        report["generated_business_test"] = rates(sg, [0] * len(sg), threshold)
    return report


def train_detector(out_dir: Path, data: DetectorData | None = None, seed: int = 7, max_fpr: float = 0.01,
                   c_grid: Sequence[float] = C_GRID, progress: Callable[[str], None] = print) -> tuple[DetectorWeights, dict]:
    """Fit, threshold, evaluate and save. Returns the weights and the evaluation report."""
    # local: scikit-learn loads only for training and evaluation
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
    emails = data.validation_emails
    extra = (emails.groups, featurize_all(emails.texts)) if emails is not None and len(emails) else None
    cv: dict[str, float] = {}
    best_c, best_ap, best_oof, best_emails = c_grid[0], -1.0, None, None
    for C in c_grid:
        oof, email_scores = out_of_fold_scores(X, y, train.groups, views, C, seed, weights=row_weights, extra=extra)
        ap = float(average_precision_score(y, oof))
        cv[str(C)] = round(ap, 4)
        progress(f"C={C:g}: out-of-fold average precision {ap:.4f}")
        if ap > best_ap:
            best_c, best_ap, best_oof, best_emails = C, ap, oof, email_scores
    threshold = pick_threshold(best_oof, y, max_fpr)
    oof_rates = rates(best_oof, y, threshold)
    # Validation errors by name and kind: what the threshold is trading off (training side only).
    oof_rates["by_kind"] = {k: rates(best_oof[idx], y[idx], threshold) for k in sorted(set(train.kinds))
                            for idx in [np.array([i for i, kk in enumerate(train.kinds) if kk == k])]}
    oof_rates["false_positives"] = [train.texts[i][:100] for i in np.argsort(-best_oof)
                                    if y[i] == 0 and best_oof[i] >= threshold][:40]
    oof_rates["missed"] = [train.texts[i][:100] for i in np.argsort(best_oof) if y[i] == 1 and best_oof[i] < threshold][:40]
    progress(f"threshold {threshold:.4f} (out-of-fold TPR {oof_rates['tpr']}, FPR {oof_rates['fpr']})")
    oof_emails = None
    if extra is not None:
        seen = ~np.isnan(best_emails)
        oof_emails = rates(best_emails[seen], np.asarray(emails.labels)[seen], threshold)
        progress(f"whole training e-mails out-of-fold: {oof_emails}")
    weights = _fit(X, y, best_c, row_weights)
    weights.threshold = threshold
    coef = np.concatenate([weights.hashed, weights.dense])

    def score(texts: Sequence[str]) -> list[float]:
        return [max_view_score(weights, v) for v in featurize_all(texts)]

    report = evaluate(score, data, threshold)
    digest = hashlib.sha256(coef.tobytes()).hexdigest()[:12]
    weights.card = {
        "version": f"detector-{datetime.now(UTC):%Y%m%d}-{digest}",
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": "logistic regression (liblinear, L2, class_weight=balanced) on IDF-scaled hashed char/word n-grams "
                 "(IDF folded into the weights) + named signals",
        "C": best_c, "cv_average_precision": cv,
        "threshold_rule": f"highest out-of-fold TPR with benign FPR <= {max_fpr:g} (grouped 5-fold CV on the training set)",
        "out_of_fold": oof_rates, "out_of_fold_emails": oof_emails, "data": data.summary, "evaluation": report,
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    weights.save(out_dir)
    progress(f"saved {out_dir} ({weights.card['version']}) in {weights.card['train_seconds']} s")
    return weights, report
