"""Where does the label-shift alarm end? Clean cycles and flipped ones, side by side.

    OMP_NUM_THREADS=1 python ops/bench/label_shift.py [--seed 3] [--flips 0.1,0.2,0.3]

The labels of a simulated stream (the world of ``ops/bench/feedback_loop.py``: 1,200
cards, 16 days, fraud outcomes ~3 days late, ``--confirm-rate`` of good payments
confirmed), without a model: only who reported what, and when it arrived. A cycle
every four hours from ``--first-day``; each checks a new window of ``--window-hours``
(the labels since the last promotion) against the recent past, exactly as
``FineTuneScheduler`` does (``feedback.trust.label_shift`` / ``recent_past``), with the
held-out rows removed (trusted ``review_queue``, or the hash share with
``--untrusted``). Printed: the share of clean cycles that would halt (false alarms) and,
per flip share, the share of poisoned cycles that halt (the drill flips the new window
only: the poisoning starts now). Bounds are chosen on the development world
(``--seed 3``), on training outcomes only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

DAY = 86_400_000
HOUR = 3_600_000


def labels(seed: int, confirm_rate: float, days: int, serve_from_day: int):
    import pandas as pd

    from engine.offline.simulate.simulator import SimConfig, Simulator
    from engine.records import OutcomeKind

    sim = Simulator(SimConfig(customers=1200, terminals=2000, days=days, seed=seed, legit_confirm_rate=confirm_rate,
                              outcome_delay_mean_days=3.0, outcome_delay_min_days=1.0, drain_outcomes=False))
    served: set[str] = set()
    parts = []
    start = sim.config.start_ms
    for day in sim.days():
        if len(day.events):
            late = day.events[day.events["event_time_ms"] >= start + serve_from_day * DAY]
            served.update(late["event_id"].astype(str))
        if len(day.outcomes):
            parts.append(day.outcomes)
    out = pd.concat(parts, ignore_index=True)
    out = out[out["event_id"].astype(str).isin(served)]
    bad = {k.value: int(k.is_bad) for k in OutcomeKind}
    return pd.DataFrame({"event_id": out["event_id"].astype(str), "customer_id": out["customer_id"].astype(str),
                         "outcome_source": out["source"].astype(str), "is_bad": out["kind"].map(bad).astype(int),
                         "arrived_ms": out["outcome_time_ms"].astype("int64")}), start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--confirm-rate", type=float, default=0.1)
    ap.add_argument("--days", type=int, default=16)
    ap.add_argument("--serve-from-day", type=int, default=5)
    ap.add_argument("--first-day", type=float, default=8.0)
    ap.add_argument("--window-hours", default="4,24,48,168")
    ap.add_argument("--flips", default="0.05,0.1,0.2,0.3")
    ap.add_argument("--untrusted", action="store_true", help="hash share held out instead of review_queue")
    ap.add_argument("--set", default="{}", help="TrustSettings overrides as JSON")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args(argv)


    from engine.settings import TrustSettings
    from feedback.learn.dataset import held_out
    from feedback.trust import flip_labels, label_shift, recent_past

    rows, start = labels(args.seed, args.confirm_rate, args.days, args.serve_from_day)
    trusted = () if args.untrusted else ("review_queue",)
    held = (held_out(list(rows["event_id"]), 0.2) if args.untrusted
            else rows["outcome_source"].isin(trusted).to_numpy())
    rows = rows[~held]
    cfg = TrustSettings(**json.loads(args.set))
    print(f"seed {args.seed}: {len(rows)} trainable labels, bad rate {rows['is_bad'].mean():.3f}; "
          f"by source {rows.groupby('outcome_source')['is_bad'].agg(['size', 'mean']).round(3).to_dict('index')}")
    flips = [float(f) for f in args.flips.split(",") if f]
    result = {}
    for hours in (int(h) for h in args.window_hours.split(",")):
        counts = {"clean": [0, 0]} | {f: [0, 0] for f in flips}
        worst = 0.0
        unchecked = 0
        t = start + int(args.first_day * DAY)
        while t <= start + args.days * DAY:
            since = t - hours * HOUR
            new = rows[(rows["arrived_ms"] >= since) & (rows["arrived_ms"] < t)]
            past = recent_past(lambda lo, hi: rows[(rows["arrived_ms"] >= lo) & (rows["arrived_ms"] < hi)],
                               since, cfg)
            if len(new) >= 50:
                if len(past) < cfg.shift_min_examples:
                    unchecked += 1
                alarms = label_shift(new, past, cfg)
                counts["clean"][0] += bool(alarms)
                counts["clean"][1] += 1
                worst = max([worst] + [abs(a.new_rate - a.past_rate) for a in alarms])
                for f in flips:
                    poisoned = flip_labels(f, trusted, salt=f"bench{t}")(new)
                    counts[f][0] += bool(label_shift(poisoned, past, cfg))
                    counts[f][1] += 1
            t += 4 * HOUR
        line = "  ".join(f"{k}: {a}/{n}" for k, (a, n) in counts.items())
        print(f"new window {hours:>4} h: halted  {line}   (past too small: {unchecked})", flush=True)
        result[hours] = {str(k): v for k, v in counts.items()}
    if args.json_out:
        args.json_out.write_text(json.dumps({"args": vars(args) | {"json_out": str(args.json_out)},
                                             "halted": result}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
