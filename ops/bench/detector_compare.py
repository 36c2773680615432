"""Detector artifacts side by side on one validation set, and on the canonical forgeries.

Choosing between detector artifacts is done on validation only (docs/detector.md). Two
artifacts trained on different corpora each report validation figures on their own
validation set; this scores them on one: the 20 % of concepts ``train.validation_groups``
holds back from the corpus ``assemble`` builds (``--statement-lines`` for the corpus with
merchant-descriptor families, ``--everyday-keywords`` with the memos of ``everyday_keywords``).
Concept names, and so the draw, are the same in every corpus, so no artifact trained on
these texts. Each artifact's threshold is recomputed at the same false-positive budget,
then recall is broken down by kind. Last, the 1,260
canonical forgeries the field-isolation suite requires to be flagged (at most 0.5 %
missed): an artifact must pass that gate as well as win on validation. The highest threshold
the gate allows, and the false positives there, show how far the two pull apart.

    python ops/bench/detector_compare.py engine/assets/detector /tmp/det-candidate --statement-lines
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np  # noqa: E402
from sklearn.metrics import average_precision_score  # noqa: E402

from engine.detector.network import DetectorArtifactError, DetectorNetwork  # noqa: E402
from engine.detector.sentence_graph import ENCODER_RUNTIMES  # noqa: E402
from engine.offline.detector_corpus.data import HAND_VALIDATION, assemble, read_outside_set  # noqa: E402
from engine.offline.detector_corpus.forged import canonical_forgeries  # noqa: E402
from engine.offline.detector_corpus.thresholds import pick_held_threshold, pick_threshold, rates  # noqa: E402
from engine.offline.detector_corpus.train import validation_mask  # noqa: E402
from engine.stages.detect import InjectionDetector  # noqa: E402

#: Kinds with fewer validation texts than this are pooled, not listed.
MIN_KIND = 50
#: The field-isolation suite's bound on missed canonical forgeries.
CANONICAL_MISS_RATE = 0.005


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("artifacts", nargs="+", type=Path, help="Detector artifact directories.")
    ap.add_argument("--seed", type=int, default=7, help="Corpus seed (the artifacts' own).")
    ap.add_argument("--statement-lines", action="store_true", help="Validate on the statement-line corpus.")
    ap.add_argument("--everyday-keywords", action="store_true",
                    help="Validate on the corpus with the everyday-sense keyword memos.")
    ap.add_argument("--encoder-runtimes", nargs="+", default=["numpy"], choices=ENCODER_RUNTIMES,
                    help="Score each artifact with each encoder runtime (its own threshold is recomputed below).")
    ap.add_argument("--max-fpr", type=float, default=0.003, help="False-positive budget that sets each threshold.")
    ap.add_argument("--hand-validation", action="store_true",
                    help="Also hold each threshold to --hand-max-fpr on the hand-written validation memos (set V) "
                         "and pool V's attacks into the recall (docs/detector.md, \"A threshold held on memos people "
                         "wrote\").")
    ap.add_argument("--hand-max-fpr", type=float, default=0.005, help="The budget on set V's benign memos.")
    args = ap.parse_args()

    data = assemble(seed=args.seed, statement_lines=args.statement_lines, everyday_keywords=args.everyday_keywords)
    train = data.train
    held = np.flatnonzero(validation_mask(train, args.seed))
    texts = [train.texts[i] for i in held]
    labels = np.array([train.labels[i] for i in held])
    kinds = np.array([train.kinds[i] for i in held])
    print(f"validation: {len(held)} texts ({int((labels == 0).sum())} benign), statement lines {args.statement_lines}, "
          f"everyday keywords {args.everyday_keywords}")
    hand = read_outside_set(HAND_VALIDATION) if args.hand_validation else []
    hand_texts, hand_labels = [it.text for it in hand], np.array([it.label for it in hand], dtype=int)
    forgeries = canonical_forgeries()
    allowed = int(CANONICAL_MISS_RATE * len(forgeries))  # the most the gate lets through
    for path, runtime in [(p, r) for p in args.artifacts for r in args.encoder_runtimes]:
        network = DetectorNetwork.load(path)
        try:
            network = network.with_encoder_runtime(runtime)  # at the threshold its card chose for it
        except DetectorArtifactError:  # none chosen yet: the numpy one stands in ("own threshold")
            network = replace(network, encoder_runtime=runtime, card=dict(network.card, encoder_runtime=runtime))
        det = InjectionDetector(network, cache_size=0)
        scores = np.array([r.score for r in det.score_texts(texts)])
        at_budget = pick_threshold(scores, labels, args.max_fpr)
        # One budget's recall is set by its few highest benign scores; the curve around it shows how firmly.
        curve = {b: rates(scores, labels, pick_threshold(scores, labels, b))["tpr"] for b in (0.001, 0.005, 0.01, 0.02)}
        # Scored once: the gate is read at its own threshold here and at the held one below.
        forged = np.array([r.score for r in det.score_texts(forgeries, "memo")])
        missed = int((forged < det.threshold).sum())
        gate = "pass" if missed <= allowed else "FAIL"
        print(f"\n{det.version} ({path}), encoder runtime {runtime}")
        for name, threshold in (("own threshold", det.threshold), (f"threshold at {args.max_fpr:.1%} here", at_budget)):
            r = rates(scores, labels, threshold)
            print(f"  {name:24} {threshold:.4f}: TPR {r['tpr']:.4f}  FPR {r['fpr']:.4f}")
        print(f"  average precision {average_precision_score(labels, scores):.4f}; TPR at other budgets {curve}")
        for kind in sorted(set(kinds)):
            mask = kinds == kind
            if mask.sum() >= MIN_KIND:
                print(f"    {kind:22} n={int(mask.sum()):5}  flagged at the budget {np.mean(scores[mask] >= at_budget):.3f}")
        print(f"  canonical forgeries missed at its own threshold: {missed} of {len(forgeries)} ({gate})")
        # The other side of the gate: the highest threshold it allows, and what that costs in false positives.
        gate_threshold = float(np.sort(forged)[allowed])
        at_gate = rates(scores, labels, gate_threshold)
        print(f"  highest threshold passing the gate {gate_threshold:.4f}: TPR {at_gate['tpr']:.4f}  FPR {at_gate['fpr']:.4f}")
        if hand:
            written = np.array([r.score for r in det.score_texts(hand_texts, "memo")])
            both = pick_held_threshold((scores, labels, args.max_fpr), (written, hand_labels, args.hand_max_fpr))
            pooled = rates(np.concatenate([scores, written]), np.concatenate([labels, hand_labels]), both)
            v = rates(written, hand_labels, both)
            missed_held = int((forged < both).sum())
            print(f"  held to {args.hand_max_fpr:.1%} on V as well: threshold {both:.4f}; generated + V attacks TPR "
                  f"{pooled['tpr']:.4f}; V TPR {v['tpr']:.4f} FPR {v['fpr']:.4f}; generated FPR "
                  f"{rates(scores, labels, both)['fpr']:.4f}; forgeries missed {missed_held} "
                  f"({'pass' if missed_held <= allowed else 'FAIL'})")
            v_gate = rates(written, hand_labels, gate_threshold)
            print(f"  V at the gate's threshold: TPR {v_gate['tpr']:.4f} FPR {v_gate['fpr']:.4f}")


if __name__ == "__main__":
    main()
