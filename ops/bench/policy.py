"""Benchmark: the policy over a batch's columns against the policy row by row, by batch size.

    python ops/bench/policy.py [--batches 1 2 4 8 16 32 64 512] [--events 20000] [--repeats 3]

What the pipeline's decide stage does (``engine.stages.decide.decide_columns``), three
ways, interleaved batch by batch, in thread CPU µs per event:

* ``rows``     — ``decide`` per event, then each decision's ``model_view()`` (what the
  rules read), as the pipeline did before 2026-12-06 night;
* ``python``   — ``decide_columns`` ranking in Python (what it does below ``COLUMN_MIN_ROWS``);
* ``numpy``    — ``decide_columns`` ranking over the columns in NumPy (at and above it).

Inputs: calibrated probabilities drawn so a few percent of events look risky, float32
as the model returns them, and a detector result on one event in twenty (the share with
a memo in ``ops/bench/engine.py``'s events). The choice of ``COLUMN_MIN_ROWS`` rests on
where ``numpy`` overtakes ``python``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np

from engine.stages.decide import Policy, ScoreColumns, decide, decide_columns
from engine.stages.detect import DetectorResult


def batch_inputs(n: int, rng: np.random.Generator) -> tuple[ScoreColumns, list[DetectorResult | None]]:
    risky = rng.random(n) < 0.05
    p_reject = np.where(risky, rng.uniform(0.3, 0.99, n), rng.uniform(0.0, 0.1, n))
    p_review = rng.uniform(0.0, 1.0, n) * (1.0 - p_reject) * 0.5
    probs = np.stack([1.0 - p_reject - p_review, p_review, p_reject], axis=1).astype(np.float32)
    detections: list[DetectorResult | None] = [
        DetectorResult(float(s), bool(s > 0.9), 0.9, field="memo") if t else None
        for s, t in zip(rng.random(n), rng.random(n) < 0.05, strict=True)]
    return ScoreColumns.of(probs, p_reject.astype(np.float32), np.full(n, -1)), detections


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32, 64, 512])
    parser.add_argument("--events", type=int, default=20_000, help="events per batch size and way")
    parser.add_argument("--repeats", type=int, default=3, help="rounds; the median is printed")
    args = parser.parse_args()
    policy = Policy()
    rng = np.random.default_rng(7)
    ways = {
        "rows": lambda s, d: [x.model_view() for x in (decide(r, t, policy) for r, t in zip(s.rows(), d, strict=True))],
        "python": lambda s, d: decide_columns(s, d, policy, min_column_rows=10**9),
        "numpy": lambda s, d: decide_columns(s, d, policy, min_column_rows=0),
    }
    print("thread CPU µs per event, median of rounds; the ways interleaved batch by batch")
    print(f"{'batch':>6} " + " ".join(f"{w:>8}" for w in ways) + "   numpy/python  python/rows")
    gc.collect()
    gc.freeze()
    for size in args.batches:
        batches = [batch_inputs(size, rng) for _ in range(max(1, args.events // size))]
        for scores, dets in batches[:3]:  # every way once: the (score) rows check, and warm caches
            assert decide_columns(scores, dets, policy).decisions == [
                decide(r, t, policy) for r, t in zip(scores.rows(), dets, strict=True)]
        rounds: dict[str, list[float]] = {w: [] for w in ways}
        for _ in range(args.repeats):
            spent = dict.fromkeys(ways, 0.0)
            for k, (scores, dets) in enumerate(batches):
                order = list(ways) if k % 2 else list(reversed(ways))
                for w in order:
                    t = time.thread_time()
                    ways[w](scores, dets)
                    spent[w] += time.thread_time() - t
            for w in ways:
                rounds[w].append(spent[w] / (len(batches) * size) * 1e6)
        med = {w: statistics.median(v) for w, v in rounds.items()}
        print(f"{size:>6} " + " ".join(f"{med[w]:>8.2f}" for w in ways)
              + f"   {med['numpy'] / med['python']:>12.2f}  {med['python'] / med['rows']:>11.2f}")


if __name__ == "__main__":
    main()
