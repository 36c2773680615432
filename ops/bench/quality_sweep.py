"""Decision-model configurations over several backtest folds and seeds at once, on a many-core machine.

    python ops/bench/quality_sweep.py --jobs 15 --out runs/ \
        --variant default='{}' --variant focal0='{"focal_gamma": 0}' --seeds 0 --seeds-for default=0,1,2

``model_quality.py`` runs one fold; choosing a configuration needs the mean of the four
validation folds (first training days 2018-06-20, 06-27, 07-04, 07-11) over seeds, which
is 8+ runs of ~4.5 min per configuration on one core. This runs every (fold, variant,
seed) through ``model_quality.run_one`` (the same training and scoring, one torch thread
each) in a process pool, seed 0 of every configuration first, so that a sweep stopped
by ``--deadline-s`` still holds a complete first seed. Each finished run is written to
``OUT/<fold>_<variant>_s<seed>.json`` at once.

The summary gives, per configuration, the mean over folds of the per-fold seed means,
the per-fold figures, and, where a fold has two or more seeds of one configuration, what
their average (in logit space) would score: the what-if of serving a seed ensemble.
Only validation folds are the default: pass ``--folds 2018-07-18`` for the test fold
only once a configuration has been chosen.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import signal
import statistics
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

# model_quality imports _common by its bare name; spawned workers inherit this path
sys.path.append(str(Path(__file__).resolve().parent))
from ops.bench import model_quality  # noqa: E402

VALIDATION_FOLDS = ("2018-06-20", "2018-06-27", "2018-07-04", "2018-07-11")


def _announce(pids: Any) -> None:
    """Pool initializer: tell the parent this worker's pid, so runs still going at the
    deadline can be stopped (the executor has no public way to end a running task)."""
    pids.put(os.getpid())


def _replay(args: tuple[str, str, str, str]) -> str:
    data, fold, cache_dir, history_order = args
    model_quality.load_fold(data, fold, cache_dir, history_order=history_order)  # writes the replay to cache_dir
    return f"{fold} ({history_order} history)"


def summarize(rows: list[dict], folds: dict[str, object], variants: list[str]) -> str:
    """The mean over folds of each fold's seed mean (a fold with more seeds does not weigh
    more), per-fold figures, and the seed-ensemble what-if where a fold has >= 2 seeds."""
    from engine.offline.backtest.run import assessed_report

    lines = ["variant              folds runs   AUC    AP   CP@100   (mean over folds of the per-fold seed means)"]
    per_fold_lines, ensemble_lines = [], []
    for name in variants:
        fold_means = []
        for fold in folds:
            rs = [r for r in rows if r["variant"] == name and r["fold"] == fold]
            if not rs:
                continue
            m = {k: statistics.fmean(r[k] for r in rs) for k in ("auc", "ap", "cp100")}
            fold_means.append(m)
            seeds = ",".join(str(r["seed"]) for r in sorted(rs, key=lambda r: r["seed"]))
            per_fold_lines.append(f"{name:20s} {fold} seeds {seeds:7s} {m['auc']:.4f} {m['ap']:.4f} {m['cp100']:.4f}")
            if len(rs) >= 2 and all("risk" in r for r in rs):
                test = folds[fold][2]
                keep = test["assessed"].to_numpy().astype(bool)
                avg = sum(model_quality.logit(r["risk"])[keep] for r in rs) / len(rs)
                e = assessed_report(test[keep], avg)
                ensemble_lines.append(f"{name:20s} {fold} {len(rs)} seeds averaged: {e['auc_roc']:.4f} "
                                      f"{e['average_precision']:.4f} {e['card_precision_at_100']:.4f}")
        if fold_means:
            mean = {k: statistics.fmean(m[k] for m in fold_means) for k in ("auc", "ap", "cp100")}
            n = sum(1 for r in rows if r["variant"] == name)
            lines.append(f"{name:20s} {len(fold_means):5d} {n:4d} {mean['auc']:.4f} {mean['ap']:.4f} {mean['cp100']:.4f}")
    out = lines + ["-- per fold (seed mean)"] + per_fold_lines
    if ensemble_lines:
        out += ["-- what-if, not served: the fold's seeds averaged in logit space"] + ensemble_lines
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=model_quality.DATA)
    ap.add_argument("--folds", nargs="+", default=list(VALIDATION_FOLDS), help="first training days")
    ap.add_argument("--cache-dir", default=".tollgate/backtest-cache")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--seeds-for", action="append", default=[], metavar="NAME=S,S,...",
                    help="other seeds for one variant (e.g. three for the default, for the ensemble what-if)")
    ap.add_argument("--epochs", type=int, default=14)
    ap.add_argument("--jobs", type=int, default=max(1, multiprocessing.cpu_count() - 1))
    ap.add_argument("--deadline-s", type=float, default=None,
                    help="stop starting runs and summarise what finished after this many seconds")
    ap.add_argument("--device", default="cpu",
                    help="where each run trains (TrainConfig.device): cuda puts every run's passes on the GPU")
    ap.add_argument("--out", required=True, help="a folder: one JSON per finished run, and summary.txt")
    a = ap.parse_args()
    variants = [(v.partition("=")[0], json.loads(v.partition("=")[2] or "{}")) for v in a.variant] or [("default", {})]
    if a.device != "cpu":
        variants = [(name, {"device": a.device, **ov}) for name, ov in variants]
    seeds_for = {k: [int(s) for s in v.split(",")] for k, v in (x.split("=", 1) for x in a.seeds_for)}
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    ctx = multiprocessing.get_context("spawn")  # model_quality.py: a forked OpenMP process can deadlock
    with ProcessPoolExecutor(min(a.jobs, len(a.folds)), mp_context=ctx) as pool:
        orders = sorted({model_quality.history_order_of(ov) for _, ov in variants})
        for fold in pool.map(_replay, [(a.data, f, a.cache_dir, o) for f in a.folds for o in orders]):
            print(f"replayed fold {fold} ({time.monotonic() - start:.0f} s)", flush=True)
    folds = {f: model_quality.load_fold(a.data, f, a.cache_dir) for f in a.folds}

    jobs = [(seed, vi, fold, name, ov) for vi, (name, ov) in enumerate(variants)
            for seed in seeds_for.get(name, a.seeds) for fold in a.folds]
    jobs.sort(key=lambda j: (j[0], j[1]))  # every configuration's first seed before any second seed
    rows: list[dict] = []
    pids = ctx.SimpleQueue()
    # SIGTERM (``kill``, ``pkill``) ends the sweep through the ``finally`` below, which stops
    # the pool's workers; by default it would end this process alone and leave them training.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    pool = ProcessPoolExecutor(a.jobs, mp_context=ctx, initializer=_announce, initargs=(pids,))
    pending: dict[Future, tuple] = {}
    queue = list(jobs)
    try:
        while queue or pending:
            late = a.deadline_s is not None and time.monotonic() - start > a.deadline_s
            while queue and len(pending) < a.jobs and not late:
                seed, _, fold, name, ov = queue.pop(0)
                args = (a.data, fold, a.cache_dir, None, name, ov, seed, a.epochs, "transformer", False)
                pending[pool.submit(model_quality.run_one, args)] = (fold, name, seed)
            if late and not pending:
                break
            timeout = None if a.deadline_s is None else max(1.0, a.deadline_s - (time.monotonic() - start))
            done, _ = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
            if not done and late:
                print(f"deadline: {len(pending)} runs unfinished, {len(queue)} not started", flush=True)
                break
            for fut in done:
                fold, name, seed = pending.pop(fut)
                for r in fut.result():
                    r["fold"] = fold
                    rows.append(r)
                    record = {k: v for k, v in r.items() if k != "risk"}
                    (out / f"{fold}_{name}_s{seed}.json").write_text(json.dumps(record))
                    print(f"done {fold} {name} seed {seed}: AUC {r['auc']:.4f} AP {r['ap']:.4f} "
                          f"CP@100 {r['cp100']:.4f} fit {r['fit_s']:.0f} s ({time.monotonic() - start:.0f} s)",
                          flush=True)
    finally:
        while not pids.empty():  # unfinished runs: stop, not wait
            with contextlib.suppress(ProcessLookupError):
                os.kill(pids.get(), signal.SIGTERM)
        pool.shutdown(wait=False, cancel_futures=True)
    text = summarize(rows, folds, [n for n, _ in variants])
    (out / "summary.txt").write_text(text + "\n")
    print(text, flush=True)


if __name__ == "__main__":
    main()
