"""Can user text lower a verdict or a risk score? The outside tester's experiment of #22.

    python ops/bench/user_text.py --model DIR --data FILE [--rules DIR]

Scores the same events (a ``tollgate simulate`` file) through the Python API, in-memory
context, once per variant of their user text: as simulated, without memo (descriptor
kept), without any user text, and with each of a few benign memos (descriptor kept).
Every variant is scored by a fresh pipeline in the same event order, so the context is
identical and only the text differs. Prints, for each memo, how many events got a lower
risk score or a less severe verdict than the same event without memo, and than the same
event without any user text, and the median risk of the frauds.

The guarantee (docs/field-isolation.md) says the "lower than" counts are zero; this is
how they were measured before the fix.
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import replace
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

from engine.interfaces.api import load_model  # noqa: E402
from engine.offline.simulate.frames import events_from_frame  # noqa: E402
from engine.records import SEVERITY, TransactionEvent  # noqa: E402

MEMOS = ("Monthly rent June, thanks!", "Invoice 4471 paid in full", "regular customer, verified, all good",
         "for the car, as agreed")
#: Risk differences below this are float noise between batches of different composition.
NOISE = 1e-6


def score(model_dir: Path, rules: Path | None, events: list[TransactionEvent]) -> list:
    model = load_model(model_dir, rules=rules, context="memory")
    return list(model.decide(events, batch_size=512))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--data", type=Path, required=True, help="a `tollgate simulate` Parquet file")
    ap.add_argument("--rules", type=Path, default=None)
    args = ap.parse_args()

    import pandas as pd

    frame = pd.read_parquet(args.data)
    events = events_from_frame(frame)
    frauds = [i for i, f in enumerate(frame["tx_fraud"].tolist()) if f] if "tx_fraud" in frame else []
    no_memo = score(args.model, args.rules, [replace(e, memo=None) for e in events])
    no_text = score(args.model, args.rules, [replace(e, memo=None, merchant_descriptor=None) for e in events])
    print(f"{len(events)} events, {len(frauds)} frauds; model {args.model}")
    print(f"{'memo':40s} {'risk<no memo':>13s} {'risk<no text':>13s} {'verdict<no memo':>16s} "
          f"{'verdict<no text':>16s} {'min ratio':>9s} {'fraud median risk':>18s} {'lowered reason':>14s}")
    fraud_base = statistics.median([no_memo[i].risk_score for i in frauds]) if frauds else float("nan")
    print(f"{'(none)':40s} {'':>13s} {'':>13s} {'':>16s} {'':>16s} {'':>9s} {fraud_base:18.3f}")
    for memo in MEMOS:
        got = score(args.model, args.rules, [replace(e, memo=memo) for e in events])
        lower_risk_m = sum(g.risk_score < b.risk_score - NOISE for g, b in zip(got, no_memo))
        lower_risk_t = sum(g.risk_score < b.risk_score - NOISE for g, b in zip(got, no_text))
        lower_v_m = sum(SEVERITY[g.verdict] < SEVERITY[b.verdict] for g, b in zip(got, no_memo))
        lower_v_t = sum(SEVERITY[g.verdict] < SEVERITY[b.verdict] for g, b in zip(got, no_text))
        ratio = min(g.risk_score / b.risk_score for g, b in zip(got, no_memo) if b.risk_score > 0)
        fraud_med = statistics.median([got[i].risk_score for i in frauds]) if frauds else float("nan")
        reasons = sum(any(r.code == "user_text_cannot_lower" for r in g.reasons) for g in got)
        print(f"{memo[:40]:40s} {lower_risk_m:13d} {lower_risk_t:13d} {lower_v_m:16d} {lower_v_t:16d} "
              f"{ratio:9.3f} {fraud_med:18.3f} {reasons:14d}")


if __name__ == "__main__":
    main()
