"""Quality metrics with the handbook's definitions, and the pictures that go with them.

* AUC ROC and average precision: scikit-learn's (the handbook uses the same calls).
* Card precision@k (handbook ch. 4.2): per day, take each card's highest score, rank the
  cards, and count the share of the top k that really were compromised that day; cards
  detected in the top k on an earlier day are removed from later days; the daily values
  are averaged. ``k`` is the daily number of cards investigators can check.
* Expected calibration error: equal-width bins over the top-class probability.

>>> import numpy as np
>>> y = np.array([0, 0, 1, 1]); s = np.array([0.1, 0.4, 0.35, 0.8])
>>> round(auc_roc(y, s), 3), round(average_precision(y, s), 3)
(0.75, 0.833)
>>> card_precision_at_k(days=[0, 0, 0, 1, 1], cards=["a", "b", "c", "a", "d"],
...                     labels=[1, 0, 0, 1, 1], scores=[0.9, 0.8, 0.1, 0.9, 0.2], k=2)
0.5
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score, confusion_matrix, precision_recall_curve, roc_auc_score


def auc_roc(labels: Sequence[int], scores: Sequence[float]) -> float:
    y = np.asarray(labels)
    return float(roc_auc_score(y, np.asarray(scores))) if len(np.unique(y)) == 2 else float("nan")


def average_precision(labels: Sequence[int], scores: Sequence[float]) -> float:
    y = np.asarray(labels)
    return float(average_precision_score(y, np.asarray(scores))) if y.sum() > 0 else float("nan")


def card_precision_at_k_per_day(days: Sequence, cards: Sequence, labels: Sequence[int],
                                scores: Sequence[float], k: int = 100) -> list[float]:
    """Daily card precision@k, removing cards already detected on earlier days (the book's
    ``card_precision_top_k`` with ``remove_detected_compromised_cards=True``)."""
    df = pd.DataFrame({"day": np.asarray(days), "card": np.asarray(cards),
                       "label": np.asarray(labels, dtype=int), "score": np.asarray(scores, dtype=float)})
    detected: set = set()
    out: list[float] = []
    for _, day in sorted(df.groupby("day"), key=lambda kv: kv[0]):
        day = day[~day["card"].isin(detected)]
        # A card counts once per day, with its highest score; it is compromised if any of
        # its transactions that day is bad (groupby().max() in the book).
        per_card = day.groupby("card").agg(score=("score", "max"), label=("label", "max"))
        top = per_card.sort_values("score", ascending=False, kind="mergesort").head(k)
        hits = top.index[top["label"] == 1]
        out.append(len(hits) / k)
        detected.update(hits)
    return out


def card_precision_at_k(days: Sequence, cards: Sequence, labels: Sequence[int],
                        scores: Sequence[float], k: int = 100) -> float:
    daily = card_precision_at_k_per_day(days, cards, labels, scores, k)
    return float(np.mean(daily)) if daily else float("nan")


def expected_calibration_error(probs: np.ndarray, labels: Sequence[int], n_bins: int = 15) -> float:
    """ECE of the top class (multi-class ``probs`` [N, C]) or of the positive class ([N]).

    >>> round(expected_calibration_error(np.array([0.9, 0.9, 0.1, 0.1]), [1, 1, 0, 0]), 3)
    0.1
    """
    probs, y = np.asarray(probs, dtype=float), np.asarray(labels)
    if probs.ndim == 1:
        conf = np.where(probs >= 0.5, probs, 1 - probs)
        correct = (probs >= 0.5).astype(int) == y
    else:
        conf = probs.max(axis=1)
        correct = probs.argmax(axis=1) == y
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        sel = bins == b
        if sel.any():
            ece += sel.mean() * abs(correct[sel].mean() - conf[sel].mean())
    return float(ece)


def reliability_curve(probs: np.ndarray, labels: Sequence[int], n_bins: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Binary reliability: (mean predicted, observed frequency, count) per equal-width bin."""
    p, y = np.asarray(probs, dtype=float), np.asarray(labels, dtype=float)
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    pred, obs, cnt = [], [], []
    for b in range(n_bins):
        sel = bins == b
        if sel.any():
            pred.append(p[sel].mean())
            obs.append(y[sel].mean())
            cnt.append(int(sel.sum()))
    return np.array(pred), np.array(obs), np.array(cnt)


def quality_report(labels: Sequence[int], risk: Sequence[float], days: Sequence | None = None,
                   cards: Sequence | None = None, k: int = 100) -> dict[str, float]:
    """The headline figures for one scored test set."""
    out = {"auc_roc": auc_roc(labels, risk), "average_precision": average_precision(labels, risk),
           "n": int(len(labels)), "n_bad": int(np.sum(labels)),
           "ece_risk": expected_calibration_error(np.asarray(risk), labels)}
    if days is not None and cards is not None:
        out[f"card_precision_at_{k}"] = card_precision_at_k(days, cards, labels, risk, k)
    return out


# ---- pictures ---------------------------------------------------------------------------

def _figure():
    # local: matplotlib loads only when a picture is drawn
    import matplotlib

    matplotlib.use("Agg")  # headless: reports are written on servers
    # local: matplotlib loads only when a picture is drawn
    import matplotlib.pyplot as plt

    return plt


def plot_reliability(probs: Sequence[float], labels: Sequence[int], path: str | Path,
                     title: str = "Reliability (risk score)") -> Path:
    plt = _figure()
    pred, obs, cnt = reliability_curve(np.asarray(probs), labels)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfectly calibrated")
    ax.plot(pred, obs, "o-", label="model")
    for x, y_, n in zip(pred, obs, cnt):
        ax.annotate(str(n), (x, y_), fontsize=7, textcoords="offset points", xytext=(3, -9))
    ax.set(xlabel="predicted probability", ylabel="observed frequency", title=title, xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_confusion(true: Sequence[int], pred: Sequence[int], names: Sequence[str], path: str | Path,
                   title: str = "Confusion matrix", true_names: Sequence[str] | None = None) -> Path:
    plt = _figure()
    true_names = list(true_names or names)
    cm = confusion_matrix(true, pred, labels=list(range(max(len(names), len(true_names)))))
    cm = cm[: len(true_names), : len(names)]
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.imshow(cm, cmap="Blues")
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            ax.text(j, i, str(cm[i, j]), ha="center", va="center",
                    color="white" if cm[i, j] > cm.max() / 2 else "black")
    ax.set_xticks(range(len(names)), names)
    ax.set_yticks(range(len(true_names)), true_names)
    ax.set(xlabel="predicted", ylabel="true", title=title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def plot_pr_curve(labels: Sequence[int], scores: Sequence[float], path: str | Path,
                  title: str = "Precision-recall (risk score)") -> Path:
    plt = _figure()
    precision, recall, _ = precision_recall_curve(np.asarray(labels), np.asarray(scores))
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot(recall, precision)
    ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02),
           title=f"{title}\nAP = {average_precision(labels, scores):.3f}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
