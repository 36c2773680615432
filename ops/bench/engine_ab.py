"""The Kafka worker of two source trees, interleaved in one run: saturation and p99 at a fixed rate.

    python ops/bench/engine_ab.py --before /tmp/before [--rounds 2] [--rate 250] [--duration 15]
                                  [--saturation-events 10000]

Each round runs, for each tree, a fixed-rate run (``--rate`` events/s for ``--duration``
s: p50/p99 end-to-end latency) and a saturation run (``--saturation-events`` pre-filled:
events/s), with the same load generator, reader and measurements as
``ops/bench/engine.py`` (``Bench.run``). The worker is ``tollgate run`` of the tree (its CLI, ``PYTHONPATH`` and working
directory: ``engine.tree_cli``), serving ``ops.bench.engine:model_pipeline`` of that tree
(both layouts have it). Which tree goes first alternates by round, so a noisy neighbour
hits both alike; medians per tree, then after / before.

Before each measured run, the month of history (``--history-events``) is written by that
run's tree, in its own layout of the state (``ops/bench/engine_history.py``).

Both trees serve one model: a fresh model of the serving architecture saved by the
before tree (a newer tree reads an older model card; an older tree refuses fields it
does not know), so the model's cost is the same on both sides; or ``--model-dir``'s.
Get a before tree without touching git's worktree list: ``git archive REF | tar -x -C DIR``.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:
    from ops.bench import _common
REPO = _common.REPO

import argparse
import os
import statistics
import subprocess

from ops.bench.engine import Bench, add_event_arguments
from ops.bench.engine_report import RunResult, print_table

_SAVE_MODEL = r"""
import importlib, sys
from pathlib import Path
try:
    support = importlib.import_module("tests.support.worker_support")
except ImportError:  # the layout before tests/ had sub-packages
    support = importlib.import_module(".".join(("tests", "integration", "worker_support")))
print(support.save_fresh_model(Path(sys.argv[1]), "bench-ab"))
"""


def _model(tree: Path, models_dir: Path) -> Path:
    """A fresh model saved by ``tree``'s own code (the older card format both trees read)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _SAVE_MODEL, str(models_dir)], env=env, cwd=str(tree),
                         check=True, capture_output=True, text=True, timeout=600)
    return Path(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", type=Path, required=True, help="the tree of the code before (any layout)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--rate", type=float, default=250.0, help="events/s of the fixed-rate run")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of the fixed-rate run")
    ap.add_argument("--saturation-events", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=6)
    add_event_arguments(ap)
    ap.add_argument("--warmup", type=float, default=15.0, help="seconds at 1,000 events/s first, discarded")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--workdir", default=str(REPO / ".tollgate" / "bench-ab"))
    ap.add_argument("--model-dir", default=None,
                    help="serve this model directory in both trees (one both can read), e.g. one from "
                         "`tollgate model bootstrap`, which reads no user text; default: a fresh model of the "
                         "serving architecture saved by the before tree (it reads text)")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made
    trees = {"before": args.before.resolve(), "after": REPO}
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.model_dir is None:
        args.model_dir = str(_model(trees["before"], workdir / "models"))
    args.model_source = "fresh"
    bench = Bench(args)
    pipeline = "ops.bench.engine:model_pipeline"
    batch = _batch()
    print(f"B={batch[0]} W={batch[1]:g}; before={trees['before']} after={trees['after']}", flush=True)
    if args.warmup:
        bench.run("broker warm-up", pipeline, batch, 1000.0, env={"PYTHONPATH": str(trees["after"])},
                  tree=trees["after"], duration=args.warmup, history=False)
    results: dict[tuple[str, float | None], list[RunResult]] = {}
    for rnd in range(args.rounds):
        order = list(trees) if rnd % 2 == 0 else list(reversed(trees))
        for name in order:
            for rate in (args.rate, None):
                r = bench.run(name, pipeline, batch, rate, env={"PYTHONPATH": str(trees[name])}, tree=trees[name])
                results.setdefault((name, rate), []).append(r)
                print(f"round {rnd + 1}:", end=" ")
                print_table([r])
    sat = {n: statistics.median(r.throughput for r in results[(n, None)]) for n in trees}
    p99 = {n: statistics.median(r.pct(99) for r in results[(n, args.rate)]) for n in trees}
    p50 = {n: statistics.median(r.pct(50) for r in results[(n, args.rate)]) for n in trees}
    cpu = {n: statistics.median(r.cpu_us_per_event for r in results[(n, None)]) for n in trees}
    print(f"\nmedians of {args.rounds} rounds per tree (each round: {args.rate:g} events/s for {args.duration:g} s, "
          f"then {args.saturation_events} events pre-filled)")
    for n in trees:
        print(f"  {n:6s}  saturation {sat[n]:8.0f} events/s  CPU/event {cpu[n]:7.0f} us  "
              f"at {args.rate:g} ev/s: p50 {p50[n]:7.1f} ms  p99 {p99[n]:7.1f} ms")
    print(f"  after / before: saturation {sat['after'] / sat['before']:.2f}x, CPU/event "
          f"{cpu['after'] / cpu['before']:.2f}x, p50 {p50['after'] / p50['before']:.2f}x, "
          f"p99 {p99['after'] / p99['before']:.2f}x")
    for key in ("before", "after"):  # the spread: is the ratio outside the noise of one tree's rounds?
        print(f"  {key:6s} rounds: saturation " + ", ".join(f"{r.throughput:.0f}" for r in results[(key, None)])
              + "; p99 " + ", ".join(f"{r.pct(99):.1f}" for r in results[(key, args.rate)]))
    return 0


def _batch() -> tuple[int, float]:
    from engine.settings import Settings

    s = Settings()
    return s.batch.max_events, s.batch.max_wait_ms


if __name__ == "__main__":
    sys.exit(main())
