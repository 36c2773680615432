"""Fit the merchant descriptor's head (``engine.detector.descriptor_head``) onto a
trained detector network.

Data, all from the multilingual generator's *training* templates
(``multilingual.generate("train", statement_lines=True)``), so its held-out templates stay
an evaluation set:

- attacks: commands in statement lines (``descriptor``), and every other attack family's
  texts of up to ``SHORT_ATTACK_CHARS`` characters (what fits a descriptor field: a forged
  header, a role-play opener, an order to the model);
- benign: ordinary statement lines (``statement``: shops whose names use the attacks'
  words in their everyday sense, and the shops themselves) and payee names
  (``corpus.person_names``: a transfer's descriptor).

The head reads the descriptor without order references and store numbers
(``views.descriptor_head_text``). Every text is scored out of fold: four folds by concept
(a concept is one phrase in every language, ``multilingual.template_concept``; each name
is its own), so no fit sees a text's phrase in any language. On those scores: the screen's
bar keeps all but ``max_recall_loss`` of the attacks; the judge's regularisation is the one
of ``JUDGE_CS`` with the most recall at the false-positive budget; the threshold keeps the
false-positive rate on statement lines and names within ``max_fpr``. The head is then fitted
on everything. The generator's held-out templates are scored once, for the card; nothing is
chosen on them. No text of an outside set reaches training or validation.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np

from engine.detector.descriptor_head import DescriptorHead
from engine.detector.network import DetectorNetwork
from engine.detector.sentence import shared_encoder
from engine.detector.sentence_graph import EncoderRuntime
from engine.detector.views import descriptor_head_inputs, descriptor_head_text, max_by_owner
from engine.offline.detector_corpus.corpus import person_names
from engine.offline.detector_corpus.data import OUTSIDE_SETS, read_outside_set
from engine.offline.detector_corpus.multilingual import generate, template_concept
from engine.offline.detector_corpus.thresholds import pick_threshold

#: The longest attack of the other families taken as a descriptor-field attack: a
#: statement line prints about 22-40 characters, a display name or a transfer's
#: reference a little more.
SHORT_ATTACK_CHARS = 60
#: Folds by concept for the out-of-fold scores that choose the bar and the threshold.
FOLDS = 4
#: The judge's inverse regularisation strengths tried; the one with the most out-of-fold
#: recall at the false-positive budget is kept (the card records every one).
JUDGE_CS: tuple[float, ...] = (0.3, 1.0, 3.0, 10.0)
#: Runtimes whose embeddings differ from numpy's enough to need a threshold of their own.
CALIBRATED_RUNTIMES: tuple[EncoderRuntime, ...] = ("onnx-int8",)


@dataclass(slots=True)
class HeadTexts:
    texts: list[str]
    labels: list[int]
    kinds: list[str]  # "descriptor_command", "short_<family>", "statement_line", "payee_name"

    def subset(self, keep: Sequence[bool]) -> HeadTexts:
        idx = [i for i, k in enumerate(keep) if k]
        return HeadTexts([self.texts[i] for i in idx], [self.labels[i] for i in idx], [self.kinds[i] for i in idx])


def head_texts(split: str, seed: int, n_attacks: int = 144 * 60, n_benign: int = 30000,
               n_names: int = 800) -> tuple[HeadTexts, list[str]]:
    """The head's attacks and benign lines from ``split``'s templates, distinct, with each
    text's concept (its group for the validation split)."""
    items = generate(split, n_attacks, n_benign, seed=seed, statement_lines=True)
    texts: list[str] = []
    labels: list[int] = []
    kinds: list[str] = []
    groups: list[str] = []
    seen: set[str] = set()

    def add(text: str, label: int, kind: str, group: str) -> None:
        if text.casefold() not in seen:
            seen.add(text.casefold())
            texts.append(text)
            labels.append(label)
            kinds.append(kind)
            groups.append(group)

    for it in items:
        if it.family == "descriptor":
            add(it.text, 1, "descriptor_command", template_concept(it.template))
        elif it.label == 1 and it.family != "split" and len(it.text) <= SHORT_ATTACK_CHARS:
            add(it.text, 1, f"short_{it.family}", template_concept(it.template))
        elif it.family == "statement":
            add(it.text, 0, "statement_line", template_concept(it.template))
    for name in person_names(n_names, seed=seed + 9):
        add(name, 0, "payee_name", f"name:{name}")
    return HeadTexts(texts, labels, kinds), groups


def _reserved() -> set[str]:
    return {it.text.casefold() for which in OUTSIDE_SETS for it in read_outside_set(which)}


def _views(network: DetectorNetwork, texts: Sequence[str]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """Every view of every text, as serving reads it: screen inputs, view texts, and the
    text each came from."""
    views, dense, owner = descriptor_head_inputs([descriptor_head_text(t) for t in texts])
    return network.screen_inputs(views, dense), views, owner


def _rates(margins: np.ndarray, data: HeadTexts) -> dict[str, Any]:
    labels = np.asarray(data.labels)
    flagged = margins >= 0
    out: dict[str, Any] = {"tpr": round(float(flagged[labels == 1].mean()), 4) if (labels == 1).any() else None,
                           "fpr": round(float(flagged[labels == 0].mean()), 4) if (labels == 0).any() else None,
                           "attacks": int((labels == 1).sum()), "benign": int((labels == 0).sum())}
    out["by_kind"] = {kind: {"n": int(sum(k == kind for k in data.kinds)),
                             "flagged": round(float(np.mean([f for f, k in zip(flagged, data.kinds) if k == kind])), 4)}
                      for kind in sorted(set(data.kinds))}
    return out


def _fit(screen_in: np.ndarray, sentences: np.ndarray, labels: np.ndarray,
         judge_c: float) -> tuple[np.ndarray, float, np.ndarray, float]:
    """The screen (on standardised features, folded back into its weights) and the judge
    (inverse regularisation ``judge_c``)."""
    # local: scikit-learn is a training dependency, never imported by serving
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(screen_in)
    screen = LogisticRegression(C=0.1, max_iter=5000, class_weight="balanced").fit(scaler.transform(screen_in), labels)
    screen_w = (screen.coef_[0] / scaler.scale_).astype(np.float32)
    screen_b = float(screen.intercept_[0] - np.sum(screen.coef_[0] * scaler.mean_ / scaler.scale_))
    judge = LogisticRegression(C=judge_c, max_iter=8000, class_weight="balanced").fit(sentences, labels)
    return screen_w, screen_b, judge.coef_[0].astype(np.float32), float(judge.intercept_[0])


def fit_descriptor_head(network: DetectorNetwork, seed: int = 7, max_fpr: float = 0.003,
                        max_recall_loss: float = 0.002,
                        progress: Callable[[str], None] = print) -> DescriptorHead:
    """Fit the screen and the judge, choose the bar and the threshold on out-of-fold
    scores, score the held-out templates; returns the head with its card."""
    started = time.perf_counter()
    data, groups = head_texts("train", seed + 11)
    reserved = _reserved()
    clean = [t.casefold() not in reserved for t in data.texts]
    data, groups = data.subset(clean), [g for g, c in zip(groups, clean) if c]
    labels = np.asarray(data.labels)
    # Folds by concept: every text is scored by a fit that never saw its phrase in any language.
    fold = np.array([zlib.crc32(f"{seed}:{g}".encode()) % FOLDS for g in groups])
    progress(f"descriptor head: {len(data.texts)} texts, {len(set(groups))} concepts and names, {FOLDS} folds")

    screen_in, views, owner = _views(network, data.texts)
    view_labels, view_fold = labels[owner], fold[owner]
    embeddings = {runtime: shared_encoder(threads=2, runtime=runtime).encode(views)
                  for runtime in ("numpy", *CALIBRATED_RUNTIMES)}
    oof_screen = np.zeros(len(views))
    oof_judge = {(c, runtime): np.zeros(len(views)) for c in JUDGE_CS for runtime in embeddings}
    for k in range(FOLDS):
        fit, out = view_fold != k, view_fold == k
        for c in JUDGE_CS:
            screen_w, screen_b, judge_w, judge_b = _fit(screen_in[fit], embeddings["numpy"][fit], view_labels[fit], c)
            oof_screen[out] = screen_in[out] @ screen_w + screen_b  # the screen does not depend on c
            for runtime, e in embeddings.items():
                oof_judge[c, runtime][out] = e[out] @ judge_w + judge_b
    screen_text = max_by_owner(oof_screen, owner, len(data.texts))

    def threshold_for(c: float, runtime: str, bar: float) -> tuple[float, np.ndarray]:
        scores = max_by_owner(np.where(oof_screen >= bar, oof_judge[c, runtime], -1e9), owner, len(data.texts))
        chosen = pick_threshold(scores, labels, max_fpr)  # the network's rule, on the judge's logits
        return chosen, scores - chosen

    # The judge's regularisation with every view judged; then the highest screen bar that
    # loses at most max_recall_loss of that recall (as train.pick_screen_bar does for the network).
    sweep = {c: _rates(threshold_for(c, "numpy", -np.inf)[1], data) for c in JUDGE_CS}
    judge_c = max(JUDGE_CS, key=lambda c: (sweep[c]["tpr"], -c))  # the most recall at the budget; ties: simpler
    every_view = sweep[judge_c]["tpr"]
    readable = (labels == 1) & np.isfinite(screen_text)  # an attack of references only is the network's alone
    bar = -np.inf
    for candidate in np.unique(np.quantile(screen_text[readable], np.linspace(0.0, 0.5, 51), method="lower")):
        if _rates(threshold_for(judge_c, "numpy", candidate)[1], data)["tpr"] >= every_view - max_recall_loss:
            bar = float(candidate)
    threshold, margins = threshold_for(judge_c, "numpy", bar)
    sweep[judge_c] = _rates(margins, data)
    validation = sweep[judge_c]
    runtime_thresholds = {}
    for runtime in CALIBRATED_RUNTIMES:
        chosen, runtime_margins = threshold_for(judge_c, runtime, bar)
        runtime_thresholds[runtime] = {"threshold": chosen, "validation": _rates(runtime_margins, data)}
    screen_w, screen_b, judge_w, judge_b = _fit(screen_in, embeddings["numpy"], view_labels, judge_c)
    head = DescriptorHead(screen_w, screen_b, bar, judge_w, judge_b, threshold)
    progress(f"descriptor head: judge C {judge_c} ({ {c: r['tpr'] for c, r in sweep.items()} }), bar {bar:.3f} "
             f"(every view judged: TPR {every_view}), "
             f"threshold {threshold:.3f}, out-of-fold {validation}")
    encoder = shared_encoder(threads=2)

    heldout, _ = head_texts("heldout", seed + 2011)
    heldout = heldout.subset([t.casefold() not in reserved for t in heldout.texts])
    h_in, h_views, h_owner = _views(network, heldout.texts)
    h_margins = max_by_owner(head.margins(h_in, h_views, encoder.encode), h_owner, len(heldout.texts))
    evaluation = _rates(h_margins, heldout)
    progress(f"descriptor head: held-out templates {evaluation}")

    digest = hashlib.sha256(screen_w.tobytes() + judge_w.tobytes()).hexdigest()[:12]
    card = {
        "version": f"descriptor-head-{datetime.now(UTC):%Y%m%d}-{digest}",
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "network_version": network.card.get("version"),
        "model": ("screen: logistic regression on the network's pooled n-gram features of each view; judge: "
                  "logistic regression on the view's sentence embedding; flag at judge >= threshold where the "
                  "screen reaches its bar; max over the descriptor's views; applied to the merchant descriptor only"),
        "seed": seed, "max_fpr": max_fpr, "short_attack_chars": SHORT_ATTACK_CHARS,
        "data": {"train": {kind: data.kinds.count(kind) for kind in sorted(set(data.kinds))},
                 "folds": FOLDS, "outside_texts_dropped": int(len(clean) - sum(clean))},
        "bar_rule": (f"highest screen logit (of the attacks' 0-50th percentiles) whose recall is within "
                     f"{max_recall_loss:g} of judging every view, scored out of fold ({FOLDS} folds by concept)"),
        "threshold_rule": (f"lowest judge logit with FPR <= {max_fpr:g} on the statement lines and payee names, "
                           f"scored out of fold ({FOLDS} folds by concept)"),
        "judge_c": judge_c, "judge_c_sweep": {str(c): r["tpr"] for c, r in sweep.items()},
        "every_view_tpr": every_view,
        "out_of_fold": validation, "runtime_thresholds": runtime_thresholds,
        "heldout_templates": evaluation,
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    return DescriptorHead(screen_w, screen_b, bar, judge_w, judge_b, threshold, card)
