"""Train, threshold and evaluate the detector network (``engine.detector.network``).

Steps (``train_detector``):

1. Every training text goes through ``views.field_input`` — the serving path — so the
   network is fitted on exactly the views and inputs it will score.
2. The training set is split by *group* (the template or e-mail a text came from):
   ``VALIDATION_SHARE`` of the groups are held back for validation, so validation
   scores phrasings the fit never saw.
3. Every distinct view is embedded once by the frozen sentence encoder
   (``engine.detector.sentence``); the fit reads the table (``EmbeddingTable``).
4. The network (PyTorch, sparse embedding) is fitted with a class-balanced logistic
   loss on the max over each text's views — the score it is served with — for both
   heads (screen: n-grams only; judge: n-grams and the sentence embedding). The epoch
   with the best validation average precision of the judge is kept.
5. The flag threshold is the lowest whose benign false-positive rate on validation is
   at most ``max_fpr``, every view judged. Then the screen bar: the highest whose
   validation true-positive rate stays within ``max_recall_loss`` of that
   (``pick_screen_bar``); it can only lower the false-positive rate. No held-out text is
   touched.
6. The kept network is measured on every held-out set (``evaluate``,
   ``evaluate_multilingual``) and written as ``detector.safetensors`` + ``detector.json``.
"""

from __future__ import annotations

import hashlib
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from engine.detector.network import (
    CHANNELS,
    EMBED_DIM,
    HIDDEN,
    JUDGE_INPUTS,
    N_BUCKETS,
    NGRAM_ORDERS,
    PAD_BUCKET,
    SCREEN_INPUTS,
    WEIGHTS_FILE,
    DetectorNetwork,
    architecture,
    position_ngrams,
    sigmoid,
)
from engine.detector.sentence import SENTENCE_DIM, SentenceEncoder
from engine.detector.sentence_graph import EncoderRuntime
from engine.detector.views import FieldInput, field_input, view_probabilities
from engine.offline.detector_corpus.data import DetectorData, LabelledTexts, OutsideText, assemble
from engine.offline.detector_corpus.descriptor_head import fit_descriptor_head
from engine.offline.detector_corpus.thresholds import pick_threshold, rates, rates_by

#: Share of training groups held back to choose the epoch and the threshold.
VALIDATION_SHARE = 0.2
#: Real long benign English (e-mail lines) is scarce next to the generated memos, yet it
#: is what BIPIA-style attack sentences look most like; these rows count extra, as do
#: the hard negatives (benign text that reads like an instruction).
#: The everyday-sense keyword memos (``everyday_keywords``) count less than the imperatives:
#: at their weight they cost recall on paraphrases and forged fields. 1, not 0.5: held to set V
#: (the threshold rule since, docs/detector.md, "A threshold held on memos people wrote"), 1
#: had the better recall of the two; 0.5 had had the better AP at the generated rows' threshold.
#: The hand-written training memos (``data.HAND_TRAINING``) count twice: at 2 the detector
#: trained on them had the better pooled recall on validation and set V of 1 and 2, both with
#: the keyword memos at 1 (docs/detector.md, "Memos people wrote, for training").
KIND_WEIGHTS: dict[str, float] = {"email_segment": 3.0, "email_context_clean": 3.0,
                                  "ml_imperative": 2.0, "ml_url": 1.5, "ml_keyword": 1.0, "hand_memo": 2.0}
BATCH_TEXTS = 64


@dataclass(frozen=True, slots=True)
class FitSettings:
    """How the network is fitted; chosen on the validation groups (``docs/detector.md``)."""

    #: Validation AP peaked at epoch 1 or 2 in every fit with the sentence encoder
    #: (docs/detector.md, "Choices"); later epochs fit the training templates.
    epochs: int = 4
    lr_embedding: float = 0.003
    lr_dense: float = 0.003
    #: Share of a training text's n-gram ids blanked at random each step: the network
    #: cannot lean on one template's exact n-grams and must spread over many cues.
    ngram_dropout: float = 0.4
    #: Targets pulled this far from 0 and 1: scores stay graded instead of saturating,
    #: so the threshold has room between the benign and attack tails.
    label_smoothing: float = 0.05
    head_dropout: float = 0.1
    #: Added to the data seed for the network's initialisation and batch order: the fit
    #: varies with it as much as with the settings, so candidates are compared on
    #: validation across it.
    init_seed: int = 0
    #: Initialisations fitted (``init_seed``, ``init_seed + 1``, ...); the one with the best
    #: validation average precision is kept. With the sentence encoder the initialisation
    #: moved validation TPR more than any setting tried (docs/detector.md, "Choices").
    restarts: int = 3



def sample_weights(kinds: Sequence[str]) -> np.ndarray:
    return np.array([KIND_WEIGHTS.get(k, 1.0) for k in kinds], dtype=np.float32)


def prepare(texts: Sequence[str], progress: Callable[[str], None] | None = None) -> list[FieldInput]:
    """Every text's views and dense inputs, exactly as served."""
    out = []
    for i, t in enumerate(texts):
        out.append(field_input(t))
        if progress and (i + 1) % 5000 == 0:
            progress(f"prepared {i + 1}/{len(texts)}")
    return out


def validation_mask(train: LabelledTexts, seed: int) -> np.ndarray:
    """Boolean mask: the training rows held back for validation (a row without a group
    is its own group)."""
    return validation_groups(train.groups or [f"row{i}" for i in range(len(train))], seed)


def validation_groups(groups: Sequence[str], seed: int, share: float = VALIDATION_SHARE) -> np.ndarray:
    """Boolean mask: the rows whose group is held back for validation (stable by name)."""
    cut = int(share * 1000)
    return np.array([zlib.crc32(f"{seed}:{g}".encode()) % 1000 < cut for g in groups])


# -- the network in PyTorch, for fitting ---------------------------------------------------


def _torch_net(seed: int, head_dropout: float = 0.1) -> Any:
    # local: PyTorch loads only to train
    import torch
    from torch import nn

    torch.manual_seed(seed)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(N_BUCKETS + 1, EMBED_DIM, padding_idx=PAD_BUCKET, sparse=True)
            nn.init.normal_(self.emb.weight, 0.0, 0.05)
            with torch.no_grad():
                self.emb.weight[PAD_BUCKET].zero_()
            self.b1 = nn.Parameter(torch.zeros(EMBED_DIM))
            self.l2 = nn.Linear(EMBED_DIM, CHANNELS)
            self.l3 = nn.Linear(JUDGE_INPUTS, HIDDEN)
            self.l4 = nn.Linear(HIDDEN, 1)
            self.s3 = nn.Linear(SCREEN_INPUTS, HIDDEN)
            self.s4 = nn.Linear(HIDDEN, 1)
            self.drop = nn.Dropout(head_dropout)

        def forward(self, ids, view_of_position, lengths, dense, text_of_view, n_texts, sentences):
            """(judge, screen) logits per text: each the max over the text's views."""
            z = torch.relu(self.l2(torch.relu(self.emb(ids).sum(1) + self.b1)))
            n_views = lengths.shape[0]
            where = view_of_position[:, None].expand(-1, CHANNELS)
            # z >= 0 after the ReLU, so a zero start is the identity of the max.
            pooled_max = torch.zeros(n_views, CHANNELS).scatter_reduce(0, where, z, "amax")
            pooled_mean = torch.zeros(n_views, CHANNELS).index_add(0, view_of_position, z) / lengths[:, None]
            screen_in = self.drop(torch.cat([pooled_max, pooled_mean, dense], dim=1))
            judge_in = torch.cat([screen_in, self.drop(sentences)], dim=1)

            def per_text(view_logit):
                return torch.full((n_texts,), -1e4).scatter_reduce(0, text_of_view, view_logit, "amax",
                                                                    include_self=False)

            judge = self.l4(torch.relu(self.l3(judge_in))).squeeze(1)
            screen = self.s4(torch.relu(self.s3(screen_in))).squeeze(1)
            return per_text(judge), per_text(screen)

    return Net()


class EmbeddingTable:
    """Sentence embeddings of every view text seen in training, computed once; a text
    not in the table is embedded by the encoder (and kept)."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        self.encoder = encoder
        self.rows: dict[str, int] = {}
        self.matrix = np.zeros((0, SENTENCE_DIM), dtype=np.float32)

    def add(self, texts: Sequence[str], progress: Callable[[str], None] | None = None, batch: int = 2048) -> None:
        new = list(dict.fromkeys(t for t in texts if t not in self.rows))
        if not new:
            return  # the usual case in a fit: no copy of the table
        parts = [self.matrix]
        for start in range(0, len(new), batch):
            parts.append(self.encoder.encode(new[start:start + batch]))
            if progress:
                progress(f"sentence embeddings {min(start + batch, len(new))}/{len(new)}")
        for t in new:
            self.rows[t] = len(self.rows)
        self.matrix = np.concatenate(parts)

    def encode(self, texts: list[str]) -> np.ndarray:
        self.add(texts)
        return self.matrix[[self.rows[t] for t in texts]]


def _batch(inputs: Sequence[FieldInput], table: EmbeddingTable) -> tuple:
    # local: PyTorch loads only to train
    import torch

    texts = [t for f in inputs for t in f.texts]
    lengths = np.array([len(t) + 2 for t in texts], dtype=np.int64)
    ids = position_ngrams(texts)
    view_of_position = np.repeat(np.arange(len(texts)), lengths)
    text_of_view = np.repeat(np.arange(len(inputs)), [len(f.texts) for f in inputs])
    dense = np.concatenate([f.dense for f in inputs])
    return (torch.from_numpy(ids), torch.from_numpy(view_of_position), torch.from_numpy(lengths).float(),
            torch.from_numpy(dense), torch.from_numpy(text_of_view), len(inputs),
            torch.from_numpy(table.encode(texts)))


def _to_numpy(net: Any, threshold: float = 0.5, encoder: Any = None) -> DetectorNetwork:
    def arr(t: Any) -> np.ndarray:
        return t.detach().numpy().astype(np.float32).copy()

    emb = arr(net.emb.weight)
    emb[PAD_BUCKET] = 0.0
    return DetectorNetwork(embedding=emb, b1=arr(net.b1), w2=arr(net.l2.weight).T.copy(), b2=arr(net.l2.bias),
                           w3=arr(net.l3.weight).T.copy(), b3=arr(net.l3.bias), w4=arr(net.l4.weight)[0].copy(),
                           b4=float(net.l4.bias.item()), s3=arr(net.s3.weight).T.copy(), sb3=arr(net.s3.bias),
                           s4=arr(net.s4.weight)[0].copy(), sb4=float(net.s4.bias.item()),
                           threshold=threshold, encoder=encoder)


def network_scores(network: DetectorNetwork, inputs: Sequence[FieldInput]) -> np.ndarray:
    """Max-over-views probability of each prepared text (0 for an empty one), as served."""
    return np.array([float(p.max()) if len(p) else 0.0 for p in view_probabilities(network, list(inputs))])


def fit_network(inputs: Sequence[FieldInput], labels: np.ndarray, weights: np.ndarray,
                val_inputs: Sequence[FieldInput], val_labels: np.ndarray, seed: int, table: EmbeddingTable,
                settings: FitSettings = FitSettings(),
                progress: Callable[[str], None] = print) -> tuple[DetectorNetwork, dict]:
    """Fit on ``inputs``; keep the epoch with the best validation average precision
    (judge head, every view judged)."""
    # local: PyTorch and scikit-learn load only to train
    import torch
    from sklearn.metrics import average_precision_score

    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    seed = seed + settings.init_seed
    net = _torch_net(seed, settings.head_dropout)
    dense_params = [p for n, p in net.named_parameters() if not n.startswith("emb.")]
    opt_sparse = torch.optim.SparseAdam(list(net.emb.parameters()), lr=settings.lr_embedding)
    opt_dense = torch.optim.AdamW(dense_params, lr=settings.lr_dense, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    epochs = settings.epochs
    keep = [i for i, f in enumerate(inputs) if f.texts]
    pos = float(labels[keep].sum())
    pos_weight = torch.tensor((len(keep) - pos) / max(pos, 1.0))
    rng = np.random.default_rng(seed)
    history: list[dict] = []
    best: tuple[float, DetectorNetwork | None, int] = (-1.0, None, -1)
    for epoch in range(epochs):
        net.train()
        order = rng.permutation(keep)
        total = 0.0
        for start in range(0, len(order), BATCH_TEXTS):
            idx = order[start:start + BATCH_TEXTS]
            ids, *rest = _batch([inputs[i] for i in idx], table)
            if settings.ngram_dropout > 0:
                blank = torch.rand(ids.shape, generator=generator) < settings.ngram_dropout
                ids = ids.masked_fill(blank, PAD_BUCKET)
            y = torch.from_numpy(labels[idx].astype(np.float32))
            y = y * (1 - settings.label_smoothing) + 0.5 * settings.label_smoothing
            w = torch.from_numpy(weights[idx])
            loss = sum((torch.nn.functional.binary_cross_entropy_with_logits(
                logits, y, pos_weight=pos_weight, reduction="none") * w).sum() / w.sum()
                for logits in net(ids, *rest))
            opt_sparse.zero_grad()
            opt_dense.zero_grad()
            loss.backward()
            opt_sparse.step()
            opt_dense.step()
            total += loss.item() * len(idx)
        net.eval()
        candidate = _to_numpy(net, encoder=table)
        val = network_scores(candidate, val_inputs)
        ap = float(average_precision_score(val_labels, val)) if 0 < val_labels.sum() < len(val_labels) else 0.0
        history.append({"epoch": epoch + 1, "train_loss": round(total / max(len(order), 1), 4),
                        "validation_ap": round(ap, 4)})
        progress(f"epoch {epoch + 1}: loss {total / max(len(order), 1):.4f}, validation AP {ap:.4f}")
        if ap > best[0]:
            best = (ap, candidate, epoch + 1)
    assert best[1] is not None
    return best[1], {"history": history, "best_epoch": best[2], "validation_ap": round(best[0], 4)}


#: Screen bars tried, as probabilities; each must also be at most the flag threshold.
SCREEN_BARS: tuple[float, ...] = (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9)


def pick_screen_bar(network: DetectorNetwork, inputs: Sequence[FieldInput], labels: np.ndarray,
                    max_recall_loss: float) -> tuple[float, list[dict]]:
    """The highest screen bar (``SCREEN_BARS``, at most ``network.threshold``) whose
    true-positive rate on ``inputs`` stays within ``max_recall_loss`` of judging every
    view, and the rates and judged share of every bar tried. A view under the bar keeps
    its screen score, which is under the threshold, so a bar never adds a flag."""
    texts = [t for f in inputs for t in f.texts]
    dense = np.concatenate([f.dense for f in inputs]) if texts else np.zeros((0, 0), np.float32)
    judge = sigmoid(replace(network, screen_bar=0.0).logits(texts, dense))
    screen = sigmoid(network.screen_logits(texts, dense))
    bounds = np.cumsum([0] + [len(f.texts) for f in inputs])
    owner = np.repeat(np.arange(len(inputs)), np.diff(bounds))
    tried, best = [], 0.0
    for bar in SCREEN_BARS:  # the first, 0, judges every view: the recall to keep
        if bar > network.threshold:
            break
        view = np.where(screen >= bar, judge, screen)
        per_text = np.zeros(len(inputs))
        np.maximum.at(per_text, owner, view)
        r = rates(per_text, labels, network.threshold)
        r["bar"] = bar
        r["judged_share_of_benign_views"] = round(float((screen[labels[owner] == 0] >= bar).mean()), 4)
        tried.append(r)
        full_tpr = tried[0]["tpr"]
        if full_tpr is not None and r["tpr"] is not None and r["tpr"] >= full_tpr - max_recall_loss:
            best = bar
    return best, tried


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
    report["injection_test_by_kind"] = rates_by(np.asarray(s), np.asarray(inj.labels), inj.kinds, threshold)
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


def evaluate_multilingual(screen: Callable[[list[tuple[str | None, str | None]]], list[float]], items: Sequence[Any],
                          threshold: float, rows: Sequence[tuple[str | None, str | None]] | None = None,
                          fields: Sequence[str] | None = None, sample: int | None = 30) -> dict:
    """Rates on the held-out generated families (``multilingual.generate("heldout")``),
    scored as the stream scores them (memo, descriptor and the two joined): overall, per
    language, per family and per obfuscation, with a sample of the errors (``sample``
    of each; None: all). ``rows`` are the ``(memo, descriptor)`` rows to screen (default
    ``(it.text, it.descriptor)``); ``fields`` adds rates by the field each text came from."""
    if not items:
        return {}
    scores = np.asarray(screen(list(rows) if rows is not None else [(it.text, it.descriptor) for it in items]),
                        dtype=float)
    labels = np.array([it.label for it in items])
    attacks, benign = labels == 1, labels == 0
    langs = [it.language for it in items]
    report: dict = {"overall": rates(scores, labels, threshold)}
    by_language = rates_by(scores, labels, langs, threshold)
    report["by_language"] = by_language
    report["attacks_by_family"] = rates_by(scores[attacks], labels[attacks],
                                            [items[i].family for i in np.flatnonzero(attacks)], threshold)
    report["attacks_by_obfuscation"] = rates_by(
        scores[attacks], labels[attacks], [items[i].obfuscation or "none" for i in np.flatnonzero(attacks)], threshold)
    report["benign_by_family"] = rates_by(scores[benign], labels[benign],
                                           [items[i].family for i in np.flatnonzero(benign)], threshold)
    if fields is not None:
        report["by_field"] = rates_by(scores, labels, fields, threshold)
    tpr = [r["tpr"] for r in by_language.values() if r["tpr"] is not None]
    fpr = [r["fpr"] for r in by_language.values() if r["fpr"] is not None]
    report["worst_language_tpr"] = min(tpr) if tpr else None
    report["worst_language_fpr"] = max(fpr) if fpr else None
    report["missed_sample"] = [f"{items[i].language}/{items[i].family}/{items[i].obfuscation or '-'}: "
                               f"{items[i].text[:70]!r}" for i in np.flatnonzero(attacks & (scores < threshold))[:sample]]
    report["false_positive_sample"] = [f"{items[i].language}/{items[i].family}: {items[i].text[:70]!r}"
                                       for i in np.flatnonzero(benign & (scores >= threshold))[:sample]]
    return report


def evaluate_all(det: Any, data: DetectorData, outside: bool = True) -> dict:
    """Every held-out figure for one detector, through its serving methods; with
    ``outside``, the outside sets too (``data.OUTSIDE_SETS``, each under its own key:
    scored as the stream screens events, every error listed). Training leaves them out,
    so no training report carries them and nothing can be chosen on them."""
    report = evaluate(lambda texts: [r.score for r in det.score_texts(texts)], data, det.threshold)
    report["multilingual_heldout"] = evaluate_multilingual(
        lambda rows: [r.score for r in det.screen_fields(rows)], data.multilingual_heldout, det.threshold)
    for name, texts in (data.outside.items() if outside else ()):
        report[name] = evaluate_multilingual(
            lambda rows: [r.score for r in det.screen_fields(rows)], texts, det.threshold,
            rows=[it.row for it in texts], fields=[it.field for it in texts], sample=None)
    if data.official_test is not None:
        official = data.official_test
        s = [r.score for r in det.score_texts(official.texts)]
        report["injection_official_test"] = rates(s, official.labels, det.threshold)
        report["injection_official_test_by_kind"] = rates_by(
            np.asarray(s), np.asarray(official.labels), official.kinds, det.threshold)
    return report


#: Encoder runtimes whose embeddings differ from the numpy ones by more than float
#: rounding: each gets a threshold of its own, chosen on the same validation rows.
CALIBRATED_RUNTIMES: tuple[EncoderRuntime, ...] = ("onnx-int8",)


def calibrate_runtime(network: DetectorNetwork, train: LabelledTexts, seed: int, runtime: EncoderRuntime,
                      max_fpr: float) -> dict[str, Any]:
    """The flag threshold for serving ``network`` with the sentence encoder run by
    ``runtime``: chosen as the artifact's own was, on its validation rows (``seed``'s
    groups of ``train``) at the same false-positive budget, through the serving stage.
    The screen head and its bar do not read the encoder, so they stand."""
    # local: the stage is the serving path the figures must come from
    from engine.stages.detect import InjectionDetector

    held = np.flatnonzero(validation_mask(train, seed))
    served = replace(network, encoder_runtime=runtime, encoder=None)
    scores = np.array([r.score for r in InjectionDetector(served, cache_size=0)
                       .score_texts([train.texts[i] for i in held])])
    labels = np.asarray(train.labels)[held]
    threshold = pick_threshold(scores, labels, max_fpr)
    return {"threshold": threshold, "validation": rates(scores, labels, threshold),
            "rule": f"lowest threshold with benign FPR <= {max_fpr:g} on the validation groups, "
                    f"scored with the encoder run by {runtime}"}


def place_thresholds(network: DetectorNetwork, train: LabelledTexts, seed: int, hand: Sequence[OutsideText],
                     max_fpr: float, hand_max_fpr: float) -> dict[str, dict[str, Any]]:
    """The flag threshold of every serving mode (every view judged, the screen alone, the
    int8 encoder) that holds two budgets at once: benign FPR <= ``max_fpr`` on the generated
    validation rows (``seed``'s groups of ``train``), as training chose it, and <= ``hand_max_fpr``
    on the hand-written validation memos ``hand`` (``data.HAND_VALIDATION``). The generated rows
    are easier than what people write, so the second budget is the one that usually binds.
    Scored through the serving stage, as ``calibrate_runtime`` does."""
    # local: the stage is the serving path the figures must come from
    from engine.stages.detect import InjectionDetector

    held = np.flatnonzero(validation_mask(train, seed))
    texts = [train.texts[i] for i in held]
    labels = np.asarray(train.labels)[held]
    hand_texts = [it.text for it in hand]
    hand_labels = np.array([it.label for it in hand])
    modes: dict[str, DetectorNetwork] = {
        "numpy": network, "screen-only": network.screen_only(),
        **{runtime: replace(network, encoder_runtime=runtime, encoder=None) for runtime in CALIBRATED_RUNTIMES}}
    out: dict[str, dict[str, Any]] = {}
    for mode, served in modes.items():
        detector = InjectionDetector(served, cache_size=0)
        generated = np.array([r.score for r in detector.score_texts(texts)])
        written = np.array([r.score for r in detector.score_texts(hand_texts, "memo")])
        by_generated = pick_threshold(generated, labels, max_fpr)
        by_hand = pick_threshold(written, hand_labels, hand_max_fpr)
        threshold = max(by_generated, by_hand)
        out[mode] = {"threshold": threshold, "set_by": "hand-written" if by_hand > by_generated else "generated",
                     "generated_validation": rates(generated, labels, threshold),
                     "hand_validation": rates(written, hand_labels, threshold),
                     "before": {"threshold": by_generated, "hand_validation": rates(written, hand_labels, by_generated)}}
    return out


def train_detector(out_dir: Path, data: DetectorData | None = None, seed: int = 7, max_fpr: float = 0.003,
                   epochs: int | None = None, settings: FitSettings = FitSettings(), max_recall_loss: float = 0.002,
                   progress: Callable[[str], None] = print) -> tuple[DetectorNetwork, dict]:
    """Fit, threshold, evaluate and save. Returns the network and the evaluation report."""
    # local: the stage is the serving path the figures must come from
    from engine.stages.detect import InjectionDetector

    started = time.perf_counter()
    data = data or assemble(seed=seed)
    progress(f"data: {data.summary}")
    train: LabelledTexts = data.train
    inputs = prepare(train.texts, progress)
    table = EmbeddingTable(SentenceEncoder(threads=2))
    table.add([t for f in inputs for t in f.texts], progress)
    labels = np.asarray(train.labels)
    weights = sample_weights(train.kinds)
    held = validation_mask(train, seed)
    fit_idx, val_idx = np.flatnonzero(~held), np.flatnonzero(held)
    progress(f"fit on {len(fit_idx)} texts, validate on {len(val_idx)} ({len(set(np.asarray(train.groups)[val_idx]))} groups)")
    if epochs is not None:
        settings = replace(settings, epochs=epochs)
    fits = []
    for restart in range(settings.restarts):
        one = replace(settings, init_seed=settings.init_seed + restart)
        progress(f"initialisation {one.init_seed}")
        fits.append(fit_network([inputs[i] for i in fit_idx], labels[fit_idx], weights[fit_idx],
                                [inputs[i] for i in val_idx], labels[val_idx], seed, table, one, progress))
    best = max(range(len(fits)), key=lambda k: fits[k][1]["validation_ap"])
    network, fit_report = fits[best]
    fit_report["restarts"] = [{"init_seed": settings.init_seed + k, "validation_ap": f["validation_ap"],
                               "best_epoch": f["best_epoch"]} for k, (_, f) in enumerate(fits)]
    fit_report["settings"] = asdict(replace(settings, init_seed=settings.init_seed + best))
    # The rows' weights by kind, as fitted: a card alone then says how to refit it.
    fit_report["kind_weights"] = {k: KIND_WEIGHTS[k] for k in sorted(set(train.kinds)) if k in KIND_WEIGHTS}
    val_scores = network_scores(network, [inputs[i] for i in val_idx])
    val_labels = labels[val_idx]
    threshold = pick_threshold(val_scores, val_labels, max_fpr)
    network.threshold = threshold
    val_rates = rates(val_scores, val_labels, threshold)
    val_kinds = [train.kinds[i] for i in val_idx]
    val_rates["by_kind"] = rates_by(val_scores, val_labels, val_kinds, threshold)
    val_rates["false_positives"] = [train.texts[val_idx[i]][:100] for i in np.argsort(-val_scores)
                                    if val_labels[i] == 0 and val_scores[i] >= threshold][:40]
    val_rates["missed"] = [train.texts[val_idx[i]][:100] for i in np.argsort(val_scores)
                           if val_labels[i] == 1 and val_scores[i] < threshold][:40]
    progress(f"threshold {threshold:.4f} (validation TPR {val_rates['tpr']}, FPR {val_rates['fpr']})")
    network.screen_bar, bars = pick_screen_bar(network, [inputs[i] for i in val_idx], val_labels, max_recall_loss)
    val_rates["screen_bars"] = bars
    progress(f"screen bar {network.screen_bar} ({bars})")
    screen_scores = network_scores(network.screen_only(), [inputs[i] for i in val_idx])
    network.screen_threshold = pick_threshold(screen_scores, val_labels, max_fpr)
    val_rates["screen_only"] = rates(screen_scores, val_labels, network.screen_threshold)
    progress(f"screen-only threshold {network.screen_threshold:.4f} ({val_rates['screen_only']})")
    runtime_thresholds = {runtime: calibrate_runtime(network, train, seed, runtime, max_fpr)
                          for runtime in CALIBRATED_RUNTIMES}
    progress(f"thresholds for other encoder runtimes: {runtime_thresholds}")
    report = evaluate_all(InjectionDetector(network, cache_size=0), data, outside=False)
    screen_report = evaluate_all(InjectionDetector(network.screen_only(), cache_size=0), data, outside=False)
    report["screen_only"] = {key: screen_report[key] for key in ("multilingual_heldout", "heldout_benign",
                                                                  "heldout_attacks", "generated_test")}
    digest = hashlib.sha256(network.embedding.tobytes() + network.w3.tobytes()).hexdigest()[:12]
    network.card = {
        "version": f"detector-{datetime.now(UTC):%Y%m%d}-{digest}",
        "trained_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": (f"hashed character n-gram network: orders {NGRAM_ORDERS} hashed to {N_BUCKETS} buckets, "
                  f"embedding {EMBED_DIM}, position-wise layer {CHANNELS}, max+mean pooling; screen head {HIDDEN} "
                  f"on it; judge head {HIDDEN} on it and the frozen multilingual sentence embedding "
                  f"(USE multilingual v3, {SENTENCE_DIM}); max over views; no hand-written pattern is an input"),
        "architecture": architecture(),
        "fit": fit_report, "seed": seed,
        "threshold_rule": (f"lowest threshold with benign FPR <= {max_fpr:g} on the validation groups "
                           f"({VALIDATION_SHARE:.0%} of training templates, never fitted on)"),
        "screen_bar_rule": (f"highest bar in {list(SCREEN_BARS)} (and <= the threshold) whose validation TPR "
                            f"is within {max_recall_loss:g} of judging every view"),
        "validation": val_rates, "data": data.summary, "evaluation": report,
        "max_fpr": max_fpr, "runtime_thresholds": runtime_thresholds,
        "train_seconds": round(time.perf_counter() - started, 1),
    }
    network.save(out_dir)
    # The descriptor head reads the network's features as saved (float16 embedding table).
    saved = DetectorNetwork.load(out_dir)
    head = fit_descriptor_head(saved, seed=seed, max_fpr=max_fpr, progress=progress)
    head.save(out_dir, (out_dir / WEIGHTS_FILE).read_bytes())
    network.descriptor_head = head
    progress(f"saved {out_dir} ({network.card['version']}, {head.card['version']}) in "
             f"{network.card['train_seconds']} s")
    return network, report
