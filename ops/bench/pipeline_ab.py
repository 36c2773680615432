"""A/B of the decision pipeline between two source trees, interleaved in one run.

    python ops/bench/pipeline_ab.py --base /tmp/base-tree [--rounds 6] [--events 2048] [--batch 64]

Each round runs this tree (B) and the base tree (A) in fresh child processes, one after
the other, alternating which goes first, so a noisy neighbour hits both alike. A child
builds the pipeline every entry point uses (``engine.assemble.build_pipeline``: a fresh
model of the serving architecture, the shipped rules and detector, in-memory context) on
its tree, decides the same seeded events in batches, and reports the CPU time of this
process per event (``time.process_time``: what the pipeline itself costs, less sensitive
to other load than wall time) and events/s of wall time. Medians per side, and B / A.

The Kafka worker adds I/O around the same pipeline; ``ops/bench/engine.py`` measures that.
Get a base tree without touching git's worktree list: ``git archive REF | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import json, os, sys, tempfile, time
from pathlib import Path
import torch
torch.set_num_threads(1)
import importlib
try:
    support = importlib.import_module("tests.support.worker_support")
except ImportError:  # the layout before engine/ and tests/ had sub-packages (spelled apart: moves.tsv)
    support = importlib.import_module(".".join(("tests", "integration", "worker_support")))
make_events, save_fresh_model = support.make_events, support.save_fresh_model
from engine.assemble import build_pipeline
from engine.settings import PathSettings, Settings

n, batch, rules = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
models = Path(tempfile.mkdtemp(prefix="tollgate-ab-"))
model_dir = save_fresh_model(models, "ab", seed=0)
settings = Settings(paths=PathSettings(models_dir=models, rules_dir=Path(rules)))
pipeline = build_pipeline(settings, model=model_dir, context="memory")
events = make_events("ab", n)
warm = events[: 4 * batch]
for i in range(0, len(warm), batch):
    pipeline.decide_batch(warm[i:i + batch])
rest = events[len(warm):]
cpu0, wall0 = time.process_time(), time.perf_counter()
verdicts = 0
for i in range(0, len(rest), batch):
    verdicts += len(pipeline.decide_batch(rest[i:i + batch]))
cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
print(json.dumps({"events": verdicts, "cpu_us_per_event": cpu / verdicts * 1e6, "events_per_s": verdicts / wall}))
"""


def run_child(tree: Path, events: int, batch: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(events), str(batch), str(REPO / "rules")],
                         cwd=tempfile.gettempdir(), env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"child on {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the A tree (e.g. the code before a change)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--events", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=64)
    args = ap.parse_args()
    sides: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    trees = {"A": args.base.resolve(), "B": REPO}
    for r in range(args.rounds):
        order = ("A", "B") if r % 2 == 0 else ("B", "A")
        for side in order:
            result = run_child(trees[side], args.events, args.batch)
            sides[side].append(result)
            print(f"round {r + 1} {side}: {result['cpu_us_per_event']:8.1f} µs CPU/event  "
                  f"{result['events_per_s']:8.0f} events/s", flush=True)
    med = {s: {k: statistics.median(x[k] for x in v) for k in ("cpu_us_per_event", "events_per_s")}
           for s, v in sides.items()}
    print(f"A {trees['A']}\nB {trees['B']}")
    for key in ("cpu_us_per_event", "events_per_s"):
        # the ratio within each round's pair is what the interleaving protects from drift
        paired = statistics.median(b[key] / a[key] for a, b in zip(sides["A"], sides["B"], strict=True))
        print(f"{key:18s} A {med['A'][key]:9.1f}  B {med['B'][key]:9.1f}  B/A of medians "
              f"{med['B'][key] / med['A'][key]:.3f}  median of paired B/A {paired:.3f}")


if __name__ == "__main__":
    main()
