"""Batch CLI memory: does it stay flat as the file grows? Two modes.

    python ops/bench/score_memory.py [--rows 5000,20000,80000] [--format parquet]
    python ops/bench/score_memory.py --no-model [--customers 4000 --days 64 --churn-days 16]

**Default (the whole CLI, model included).** Simulates one file per size (event-time
order, as the simulator writes them), runs ``tollgate score FILE -o OUT`` in a
subprocess for each, and prints rows, wall time, events/s and the child's peak RSS side
by side. Without a trained model (``--model`` or the registry's) a freshly initialised
one of the serving architecture is used: memory and speed do not depend on the weights.

**--no-model (millions of rows over 60+ simulated days).** The model is what makes the
CLI slow (a few thousand events/s on two cores), not what holds memory, so this mode
drops it and runs the rest of the path: read the file in chunks (``engine.interfaces.file_scoring``) →
validate → enrich (the CLI's in-memory store) → encode → write (event id and context
features, Parquet, per chunk). It simulates ``--days`` days of ``--customers``
customers into one file, then replays it in two child processes at once, one with the
store ``tollgate score`` uses (forgets customers and terminals idle for 31 days) and one
that never forgets, sampling each child's current RSS (``/proc/self/statm``) after
every chunk and printing it at checkpoints. ``--churn-days K`` renames every customer
and terminal each K simulated days (a new population replaces the old one, as accounts
come and go over a long export): without forgetting, the old populations' state stays;
with it, RSS stops growing once the first population has been idle for 31 days.
"""

from __future__ import annotations

import argparse
import json
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

    from engine.offline.simulate.frames import events_from_frame, frame_from_events
    from engine.offline.simulate.simulator import SimConfig, Simulator

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


# -- --no-model: read -> enrich -> encode -> write over a long churning file ------------------

def simulate_churning(path: Path, customers: int, days: int, churn_days: int, seed: int = 5) -> tuple[int, int]:
    """Write ``days`` simulated days to one Parquet file, a day at a time (the simulator's
    world never holds more than a day). With ``churn_days``, ids get a generation suffix
    that changes every ``churn_days`` days. Returns (rows, first event time)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.offline.simulate.frames import TRUTH_COLUMNS
    from engine.offline.simulate.simulator import SimConfig, Simulator

    writer, schema, rows, first_ms = None, None, 0, 0
    config = SimConfig(customers=customers, terminals=customers, days=days, seed=seed, drain_outcomes=False)
    for day in Simulator(config).days():
        frame = day.events.drop(columns=[c for c in TRUTH_COLUMNS if c in day.events.columns])
        if churn_days:
            suffix = f"-g{day.day // churn_days}"
            for column in ("customer_id", "account_id", "terminal_id", "device_id"):
                frame[column] = frame[column].where(frame[column].isna(), frame[column].astype(str) + suffix)
        if schema is None:
            first_ms = int(frame["event_time_ms"].iloc[0])
            schema = pa.schema([pa.field(c, pa.string() if frame[c].dtype == object else
                                         pa.Schema.from_pandas(frame[[c]], preserve_index=False).field(c).type)
                                for c in frame.columns])
            writer = pq.ParquetWriter(path, schema)
        writer.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False))
        rows += len(frame)
        if (day.day + 1) % 8 == 0 or day.day + 1 == days:
            print(f"  simulated day {day.day + 1}/{days}: {rows:,} rows", file=sys.stderr, flush=True)
    writer.close()
    return rows, first_ms


def rss_mb() -> float:
    """This process's resident set now (not its peak): what a reader wants to see flatten."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def replay_child(src: Path, out: Path, forget: bool, first_ms: int, checkpoints: int, total: int) -> None:
    """One replay (run as ``--child``): prints a JSON line per checkpoint, then a summary."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.features.memory import MemoryFeatureStore
    from engine.features.spec import CONTEXT_FEATURES, DAY_MS, IDLE_STATE_TTL_MS
    from engine.interfaces.file_scoring import read_events
    from engine.stages.encode import FieldIsolatedEncoder

    # The store `tollgate score` builds (engine/interfaces/commands/serve.py), or one that never forgets.
    store = MemoryFeatureStore(snapshot_retention_ms=DAY_MS,
                               forget_idle_after_ms=IDLE_STATE_TTL_MS if forget else None)
    encoder = FieldIsolatedEncoder()
    schema = pa.schema([("event_id", pa.string())] + [(name, pa.float64()) for name in CONTEXT_FEATURES])
    writer = pq.ParquetWriter(out, schema)
    every = max(1, total // checkpoints)
    rows, next_mark, peak, t0 = 0, every, 0.0, time.perf_counter()
    for events in read_events(src, 4096):
        columns: dict[str, list] = {"event_id": [e.event_id for e in events]}
        values = []
        for start in range(0, len(events), 512):
            batch = events[start:start + 512]
            snaps = store.enrich(batch)
            encoder.encode(batch, snaps)
            values.extend(s.values for s in snaps)
        for k, name in enumerate(CONTEXT_FEATURES):
            columns[name] = [v[k] for v in values]
        writer.write_table(pa.Table.from_pydict(columns, schema=schema))
        rows += len(events)
        now = rss_mb()
        peak = max(peak, now)
        if rows >= next_mark or rows == total:
            next_mark += every
            print(json.dumps({"rows": rows, "day": (events[-1].event_time_ms - first_ms) / DAY_MS, "rss_mb": now,
                              "customers": len(store.customers), "terminals": len(store.terminals),
                              "snapshots": len(store.snapshots), "s": time.perf_counter() - t0}), flush=True)
    writer.close()
    print(json.dumps({"done": rows, "peak_sampled_mb": peak, "s": time.perf_counter() - t0,
                      "forgotten": store.forgotten}), flush=True)


def no_model_main(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="tollgate-bench-score-nomodel-"))
    src = work / "events.parquet"
    t0 = time.perf_counter()
    rows, first_ms = simulate_churning(src, args.customers, args.days, args.churn_days)
    print(f"  {rows:,} rows over {args.days} simulated days in {time.perf_counter() - t0:.0f} s "
          f"({src.stat().st_size / 2**20:.0f} MB Parquet)", file=sys.stderr)
    modes = {"forget idle (tollgate score)": True, "never forget": False}
    procs = {}
    for name, forget in modes.items():  # both at once: memory, not speed, is measured
        cmd = [sys.executable, __file__, "--child", str(src), str(work / f"out-{int(forget)}.parquet"),
               str(int(forget)), str(first_ms), str(args.checkpoints), str(rows)]
        procs[name] = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=str(REPO),
                                       env=dict(os.environ, OMP_NUM_THREADS="1"))
    lines = {name: [json.loads(x) for x in p.communicate()[0].splitlines() if x.strip()] for name, p in procs.items()}
    for name, p in procs.items():
        if p.returncode != 0:
            raise SystemExit(f"{name}: child failed ({p.returncode})")
    marks = {name: [x for x in got if "rows" in x] for name, got in lines.items()}
    done = {name: got[-1] for name, got in lines.items()}
    a, b = (marks[name] for name in modes)
    churn = f", a new population every {args.churn_days} days" if args.churn_days else ""
    print(f"\nread -> enrich -> encode -> write, no model: {rows:,} rows, {args.days} simulated days, "
          f"{args.customers:,} customers at a time{churn}")
    print(f"{'rows':>10} {'day':>5} | {'RSS MB':>7} {'customers':>9} {'terminals':>9} | "
          f"{'RSS MB':>7} {'customers':>9} {'terminals':>9}")
    print(f"{'':>16} | {'forget idle (tollgate score)':^27} | {'never forget':^27}")
    for x, y in zip(a, b):
        print(f"{x['rows']:>10,} {x['day']:5.1f} | {x['rss_mb']:7.0f} {x['customers']:9,} {x['terminals']:9,} | "
              f"{y['rss_mb']:7.0f} {y['customers']:9,} {y['terminals']:9,}")
    for name in modes:
        d = done[name]
        print(f"{name}: {d['done']:,} rows in {d['s']:.0f} s ({d['done'] / d['s']:,.0f} rows/s, both children "
              f"sharing the cores), highest sampled RSS {d['peak_sampled_mb']:.0f} MB, "
              f"forgot {d['forgotten'][0]:,} customers and {d['forgotten'][1]:,} terminals")
    # From when the first population has been idle for 31 days (+ a day between sweeps):
    # from then on forgetting keeps pace with new keys. Without churn: the second half.
    settled = args.churn_days + 32 if args.churn_days else args.days / 2
    half = [i for i, x in enumerate(a) if x["day"] >= settled]
    if half:
        i = half[0]
        print(f"from day {a[i]['day']:.0f} to the end, RSS moved {a[-1]['rss_mb'] - a[i]['rss_mb']:+.0f} MB when "
              f"forgetting idle keys and {b[-1]['rss_mb'] - b[i]['rss_mb']:+.0f} MB when never forgetting")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        src, out, forget, first_ms, checkpoints, total = sys.argv[2:8]
        replay_child(Path(src), Path(out), forget == "1", int(first_ms), int(checkpoints), int(total))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="5000,20000,80000")
    ap.add_argument("--format", default="parquet", choices=("parquet", "jsonl"))
    ap.add_argument("--model", default=None)
    ap.add_argument("--no-model", action="store_true", help="read -> enrich -> encode -> write, no model (see above)")
    ap.add_argument("--customers", type=int, default=4000, help="--no-model: customers (and terminals) at a time")
    ap.add_argument("--days", type=int, default=64, help="--no-model: simulated days")
    ap.add_argument("--churn-days", type=int, default=16, help="--no-model: new ids every K days (0: never)")
    ap.add_argument("--checkpoints", type=int, default=16, help="--no-model: RSS lines printed per run")
    args = ap.parse_args()
    if args.no_model:
        no_model_main(args)
        return
    work = Path(tempfile.mkdtemp(prefix="tollgate-bench-score-"))
    model = args.model
    if model is None:
        from engine.model.locate import ModelNotFound, find_model_dir
        from engine.settings import Settings

        try:
            model = str(find_model_dir(Settings()))
        except ModelNotFound:
            from engine.model import InputSpec, fresh_model, save_model_dir
            from engine.stages.encode import FieldIsolatedEncoder

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
