"""Batch CLI: peak memory and throughput of ``tollgate score`` at growing file sizes.

    python ops/bench/score_memory.py [--rows 5000,20000,80000] [--format parquet]

Simulates one file per size (event-time order, as the simulator writes them), runs
``tollgate score FILE -o OUT`` in a subprocess for each, and prints rows, wall time,
events/s and the child's peak RSS side by side. Flat peak RSS across sizes is the
claim under test: the CLI reads, scores and writes in chunks, and the replayed
in-memory context keeps per-event snapshots for one day of event time only.

Without a trained model (``--model`` or the registry's) a freshly initialised one of
the serving architecture is used: memory and speed do not depend on the weights.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
from _common import REPO  # noqa: E402

TOLLGATE = str(Path(sys.executable).parent / "tollgate")


def simulate(rows: int, path: Path, seed: int = 5) -> int:
    import pandas as pd

    from engine.simulate import SimConfig, Simulator
    from engine.simulate_frames import events_from_frame, frame_from_events

    customers = 2000
    days = max(1, rows // (customers * 2) + 2)
    frames, n = [], 0
    for day in Simulator(SimConfig(customers=customers, terminals=4000, days=days, seed=seed,
                                   drain_outcomes=False)).days():
        frames.append(frame_from_events(events_from_frame(day.events)))
        n += len(day.events)
        if n >= rows:
            break
    frame = pd.concat(frames, ignore_index=True).head(rows)
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_json(path, orient="records", lines=True)
    return len(frame)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="5000,20000,80000")
    ap.add_argument("--format", default="parquet", choices=("parquet", "jsonl"))
    ap.add_argument("--model", default=None)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tollgate-bench-score-"))
    model = args.model
    if model is None:
        from engine.assemble import ModelNotFound, find_model_dir
        from engine.settings import Settings

        try:
            model = str(find_model_dir(Settings()))
        except ModelNotFound:
            from engine.encode import FieldIsolatedEncoder
            from engine.model import InputSpec, fresh_model, save_model_dir

            m, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="bench-untrained")
            model = str(save_model_dir(m, card, work / "bench-untrained"))
    results = []
    for rows in [int(x) for x in args.rows.split(",")]:
        src = work / f"events-{rows}.{args.format}"
        n = simulate(rows, src)
        out = work / f"verdicts-{rows}.parquet"
        t0 = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        proc = subprocess.run([TOLLGATE, "score", str(src), "-o", str(out), "--model", model, "--quiet"],
                              env=dict(os.environ, OMP_NUM_THREADS="2"), cwd=str(REPO),
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if proc.returncode != 0:
            raise SystemExit(proc.stderr[-2000:])
        # ru_maxrss of children is the max over all children so far: only a rise is visible.
        results.append((n, wall, n / wall, peak_mb, peak_mb > before / 1024))
        print(f"  {n} rows: {wall:.1f} s, peak RSS so far {peak_mb:.0f} MB", file=sys.stderr)
    print(f"\ntollgate score ({args.format} in, parquet out), model {Path(model).name}")
    print(f"{'rows':>9} {'wall s':>8} {'events/s':>9} {'peak RSS MB':>12}")
    for n, wall, rate, peak, rose in results:
        print(f"{n:>9} {wall:8.1f} {rate:9.0f} {peak:12.0f}{'' if rose else '  (no rise)'}")


if __name__ == "__main__":
    main()
