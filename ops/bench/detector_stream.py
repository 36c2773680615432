"""Detector rates on a simulated payment stream (realistic memos and descriptors, a few
with injection attempts labelled by the simulator).

    python ops/bench/detector_stream.py [--days 14] [--customers 1000] [--seed 3] [--model DIR]

Prints the true-positive rate on injected events and the false-positive rate on the
others — the share of good customers the detector alone would send to review.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from engine.offline.simulate.frames import events_from_frame  # noqa: E402
from engine.offline.simulate.simulator import SimConfig, Simulator  # noqa: E402
from engine.stages.detect import InjectionDetector  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=14)
    ap.add_argument("--customers", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--model", type=Path, default=None, help="detector artifact directory (default: the shipped one)")
    args = ap.parse_args()
    frame = pd.concat([d.events for d in Simulator(SimConfig(
        customers=args.customers, terminals=2 * args.customers, days=args.days, seed=args.seed)).days()
        if len(d.events)], ignore_index=True)
    detector = InjectionDetector.from_path(args.model) if args.model else InjectionDetector.default()
    print(f"detector {detector.version}, threshold {detector.threshold:.4f}")
    results = detector.screen_events(events_from_frame(frame))
    flagged = np.array([r is not None and bool(r.flagged) for r in results])
    injected = np.zeros(len(frame), dtype=bool)
    for column in ("memo_injection", "descriptor_injection"):  # the attack's kind, or null
        if column in frame:
            injected |= frame[column].notna().to_numpy()
    benign = ~injected
    print(f"events {len(frame)}: {int(injected.sum())} with an injection attempt, {int(benign.sum())} without")
    print(f"true-positive rate  {flagged[injected].mean():.3f}  ({int(flagged[injected].sum())} of {int(injected.sum())})")
    print(f"false-positive rate {flagged[benign].mean():.4f}  ({int(flagged[benign].sum())} good events flagged)")
    worst = frame[flagged & benign][["memo", "merchant_descriptor"]].head(8)
    if len(worst):
        print("examples of good events flagged:")
        print(worst.to_string(index=False))


if __name__ == "__main__":
    main()
