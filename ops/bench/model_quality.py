"""Decision-model quality on one backtest fold, for several configurations side by side.

    python ops/bench/model_quality.py --train-start 2018-07-11 \
        --variant base='{}' --variant wd='{"weight_decay": 0.05}' --seeds 0 1 2 [--lightgbm]

The fold is the handbook protocol of ``tollgate backtest`` (7 training days, 7 delay
days, 7 assessed days, known-compromised cards removed). The replay is encoded once and
kept in ``--cache-dir`` (``engine.offline.backtest.cache``); each variant then costs only its
training and the scoring of the test micro-batches through ``Inference``. A variant is
a JSON object of ``ModelConfig``/``TrainConfig`` fields, exactly what ``tollgate backtest
--set`` takes. Prints AUC ROC, average precision and card precision@100 per seed and
their mean, so a choice is made on a mean over seeds, not on one lucky run; then each run's
AUC per handbook fraud scenario (amount, compromised terminal, compromised card) and,
with ``--lightgbm``, what a logit blend with LightGBM would score (not served anywhere).

Tune on the validation fold (train start 2018-07-11) only; the test week (2018-07-18)
is for the headline figure (docs/decision-model.md). ``--export FOLD.npz`` writes the
fold's tensors and label columns to one compressed file (~37 MB for the validation fold)
and ``--fold FOLD.npz`` reads it back, for a machine without the handbook file.
``MODEL_QUALITY_KEEP_SCORES=1`` adds each run's test scores to ``--json-out`` (what-ifs
such as averaging seeds).
"""

from __future__ import annotations

import argparse
import base64
import json
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

from engine.offline.shared_data import handbook_file  # noqa: E402

DATA = str(handbook_file() or "../shared/data/handbook/transactions_2018-04-01_to_2018-08-07.parquet")


def load_fold(data: str, train_start: str, cache_dir: str, fold_file: str | None = None,
              history_order: str | None = None):
    """(training rows, EncodedWindow, test rows with an ``assessed`` column) of one fold:
    from a compact fold file (``--export``) if given, else replayed (or cached) from DATA
    with the history windows in ``history_order`` (a variant's ``"history_order"``)."""
    from engine.offline.backtest.run import Window, assessed_mask, cached_encode_window, read_handbook_frame
    from engine.stages.encode import FeatureSchema

    if fold_file:
        return _read_fold_file(fold_file)
    window = Window.from_date(train_start, 7, 7, 7, 30)
    frame = read_handbook_frame(data, window.history_start_ms, window.test_end_ms)
    frame = window.rows(frame)
    enc = cached_encode_window(frame, window, cache_dir, schema=FeatureSchema.default(history_order))
    test = frame.iloc[enc.test_rows].reset_index(drop=True)
    test["assessed"] = assessed_mask(frame, window)[enc.test_rows]
    cols = ["event_id", "event_time_ms", "customer_id", "amount", "tx_fraud"]
    extra = ["tx_fraud_scenario"] if "tx_fraud_scenario" in test else []  # the handbook's own fraud kinds
    return frame.iloc[enc.train_rows][cols].reset_index(drop=True), enc, test[cols + ["assessed"] + extra]


_COLS = ("event_time_ms", "amount", "tx_fraud")


def export_fold(path: str, train, enc, test) -> None:
    """Everything a fold needs in one compressed .npz (no pickle): tensors (text trimmed
    to the positions any row uses) and the label/time/card columns. Lets the fold travel
    to a machine without the handbook file."""
    import numpy as np
    import torch

    from engine.stages.encode import EncodedBatch

    arrays = {"test_sizes": np.array([len(b) for b in enc.test_batches])}
    for part, batch, rows in (("train", enc.train, train), ("test", EncodedBatch.concat(enc.test_batches), test)):
        used = int(batch.text_mask.any(0).nonzero().max()) + 1 if batch.text_mask.any() else 0
        for name, t in batch.tensors().items():
            t = t[:, :used] if name.startswith("text") else t
            # category ids < 2**15 (engine.stages.encode's id space is ~10k): int16 halves the file
            arrays[f"{part}.{name}"] = t.numpy().astype(np.int16) if t.dtype == torch.int64 else t.numpy()
        for c in _COLS + ("customer_id",) + (("assessed",) if part == "test" else ()):
            arrays[f"{part}.col.{c}"] = rows[c].to_numpy().astype(str) if c == "customer_id" else rows[c].to_numpy()
    np.savez_compressed(path, **arrays)


def _read_fold_file(path: str):
    import numpy as np
    import pandas as pd
    import torch

    from engine.offline.backtest.cache import EncodedWindow
    from engine.stages.encode import EncodedBatch, FeatureSchema

    z = np.load(path)
    T = FeatureSchema.default().text_len
    parts = {}
    for part in ("train", "test"):
        t = {}
        for name in ("control_numeric", "control_categorical", "history_numeric", "history_categorical",
                     "history_mask", "text_ids", "text_mask"):
            a = torch.from_numpy(z[f"{part}.{name}"])
            a = a.long() if a.dtype == torch.int16 else a
            if name.startswith("text") and a.shape[1] < T:
                a = torch.cat([a, a.new_zeros(a.shape[0], T - a.shape[1])], dim=1)
            t[name] = a
        cols = {c: z[f"{part}.col.{c}"] for c in _COLS + ("customer_id",) + (("assessed",) if part == "test" else ())}
        parts[part] = (EncodedBatch(**t), pd.DataFrame(cols))
    sizes = np.concatenate([[0], np.cumsum(z["test_sizes"])])
    test_all = parts["test"][0]
    enc = EncodedWindow(np.arange(len(parts["train"][1])), parts["train"][0], np.arange(len(parts["test"][1])),
                        [test_all[int(a):int(b)] for a, b in zip(sizes[:-1], sizes[1:])])
    return parts["train"][1], enc, parts["test"][1]


def history_order_of(overrides: dict) -> str:
    """The history order a variant's replay needs (its ``"history_order"``, else the
    deployment's ``settings.features.history_order``)."""
    from engine.features.history import resolve_history_order

    return resolve_history_order(overrides.get("history_order"))


def run_one(args: tuple) -> dict:
    """Train one (variant, seed) on the fold and score its test window."""
    import numpy as np
    import torch

    from engine.offline.backtest.families import FITTERS
    from engine.offline.backtest.run import assessed_report

    data, train_start, cache_dir, fold_file, name, overrides, seed, epochs, family, int8 = args
    torch.set_num_threads(1)
    train, enc, test = load_fold(data, train_start, cache_dir, fold_file, history_order_of(overrides))
    t0 = time.perf_counter()
    scorers = FITTERS[family](train, [enc.train], seed=seed, epochs=epochs, overrides=overrides, int8=int8,
                              report_dir=None, models_dir=None, window=None)
    fit_s = time.perf_counter() - t0
    keep = test["assessed"].to_numpy().astype(bool)
    a = test[keep]
    rows = []
    # --int8: the same trained model scored again through the int8 path (suffix "+int8").
    for scorer_name, scorer in scorers.items():
        t1 = time.perf_counter()
        risk = np.concatenate([scorer(b)[1] for b in enc.test_batches])
        score_s = time.perf_counter() - t1
        m = assessed_report(a, risk[keep])
        suffix = "+int8" if scorer_name.endswith("-int8") else ""
        out = {"variant": name + suffix, "seed": seed, "auc": m["auc_roc"], "ap": m["average_precision"],
               "cp100": m["card_precision_at_100"], "fit_s": fit_s, "score_s": score_s,
               "auc_by_scenario": _auc_by_scenario(a, risk[keep]), "risk": risk}
        if os.environ.get("MODEL_QUALITY_KEEP_SCORES"):  # for seed-ensemble what-ifs
            out["risk_b64"] = base64.b64encode(risk.astype(np.float32).tobytes()).decode()
        rows.append(out)
    return rows


def _auc_by_scenario(assessed, risk) -> dict[str, float]:
    """AUC ROC of each handbook fraud scenario's frauds against every good assessed row
    (1 amount over 220, 2 compromised terminal, 3 compromised card): where a model's
    ranking loses. Empty without the scenario column (a ``--fold`` file)."""
    from sklearn.metrics import roc_auc_score

    if "tx_fraud_scenario" not in assessed:
        return {}
    scenario, good = assessed["tx_fraud_scenario"].to_numpy(), assessed["tx_fraud"].to_numpy() == 0
    out = {}
    for s in sorted(set(scenario[~good].tolist())):
        rows = good | (scenario == s)
        out[str(s)] = float(roc_auc_score(~good[rows], risk[rows]))
    return out


def logit(p):
    """log(p / (1 - p)) of risk scores, clipped away from 0 and 1: the space in which
    what-if blends and seed averages are taken."""
    import numpy as np

    p = np.clip(np.asarray(p, dtype=np.float64), 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def _blends(rows: list[dict], fold) -> list[tuple[str, float, dict]]:
    """What-if: each transformer run's risk averaged in logit space with the LightGBM
    baseline's (seed 0), at a few weights; nothing here is served."""

    from engine.offline.backtest.run import assessed_report

    base = next((r for r in rows if r["variant"] == "lightgbm"), None)
    if base is None:
        return []
    test = fold[2]
    keep = test["assessed"].to_numpy().astype(bool)
    a = test[keep]

    out = []
    for r in rows:
        if r["variant"] == "lightgbm" or r["variant"].endswith("+int8"):
            continue
        for w in (0.5, 0.7, 0.8):
            risk = w * logit(r["risk"]) + (1 - w) * logit(base["risk"])
            m = assessed_report(a, risk[keep])
            out.append((f"{r['variant']} s{r['seed']}", w, m))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--train-start", default="2018-07-11", help="2018-07-11 = the validation fold")
    ap.add_argument("--cache-dir", default=".tollgate/backtest-cache")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--epochs", type=int, default=14, help="14 = the headline backtest's (docs/decision-model.md)")
    ap.add_argument("--lightgbm", action="store_true",
                    help="also LightGBM on the same encoded features (seed 0), and logit blends with it (what-if)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (one torch thread each)")
    ap.add_argument("--int8", action="store_true", help="also score each trained model through the int8 path")
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--fold", default=None, help="read the fold from a file written by --export")
    ap.add_argument("--export", default=None, help="write the fold to this .npz and exit")
    a = ap.parse_args()
    variants = [(v.partition("=")[0], json.loads(v.partition("=")[2] or "{}")) for v in a.variant] or [("default", {})]
    fold = load_fold(a.data, a.train_start, a.cache_dir, a.fold)  # encode once, before any worker starts
    for order in {history_order_of(ov) for _, ov in variants} - {history_order_of({})}:
        load_fold(a.data, a.train_start, a.cache_dir, a.fold, order)
    if a.export:
        export_fold(a.export, *fold)
        return
    jobs = [(a.data, a.train_start, a.cache_dir, a.fold, name, ov, s, a.epochs, "transformer", a.int8)
            for name, ov in variants for s in a.seeds]
    if a.lightgbm:
        jobs.append((a.data, a.train_start, a.cache_dir, a.fold, "lightgbm", {}, 0, a.epochs, "lightgbm", False))
    rows: list[dict] = []

    def done(result: list[dict]) -> None:
        # Each run's rows are printed (and --json-out rewritten) as soon as it finishes, so a
        # long sweep stopped early still leaves every finished run's figures.
        rows.extend(result)
        for r in result:
            print(f"done: {r['variant']} seed {r['seed']}: AUC {r['auc']:.3f} AP {r['ap']:.3f} "
                  f"CP@100 {r['cp100']:.3f} (fit {r['fit_s']:.0f} s)", flush=True)
        if a.json_out:
            _write_json(a.json_out, variants, rows)

    if a.jobs > 1:
        # spawn, not fork: a forked child of a process that ran OpenMP (PyTorch's replay)
        # deadlocks in LightGBM's first parallel region. A spawned child re-imports this
        # script with the parent's sys.path, where _common put the repository first.
        sys.path.append(str(Path(__file__).resolve().parent))
        with ProcessPoolExecutor(a.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            for future in as_completed([pool.submit(run_one, j) for j in jobs]):
                done(future.result())
    else:
        for j in jobs:
            done(run_one(j))
    print(f"\nfold train-start {a.train_start}, {a.epochs} epochs")
    print(f"{'variant':28s} {'seed':>4s} {'AUC':>6s} {'AP':>6s} {'CP@100':>7s} {'fit s':>6s} {'score s':>7s}")
    for r in rows:
        print(f"{r['variant']:28s} {r['seed']:4d} {r['auc']:6.3f} {r['ap']:6.3f} {r['cp100']:7.3f} {r['fit_s']:6.0f}"
              f" {r['score_s']:7.1f}")
    print("-- mean over seeds")
    for name in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == name]
        mean = {k: statistics.fmean(r[k] for r in rs) for k in ("auc", "ap", "cp100")}
        sd = statistics.pstdev([r["ap"] for r in rs]) if len(rs) > 1 else 0.0
        print(f"{name:28s} n={len(rs):2d} {mean['auc']:6.3f} {mean['ap']:6.3f} (sd {sd:.3f}) {mean['cp100']:7.3f}")
    if any(r["auc_by_scenario"] for r in rows):
        print("-- AUC ROC per handbook fraud scenario (its frauds against all good rows; 1 amount, 2 terminal, 3 card)")
        for r in rows:
            print(f"{r['variant']:28s} {r['seed']:4d} " + "  ".join(f"{k}: {v:.3f}" for k, v in r["auc_by_scenario"].items()))
    blends = _blends(rows, fold)
    if blends:
        print("-- what-if, not served: logit blend w * transformer + (1 - w) * lightgbm")
        for name, w, m in blends:
            print(f"{name:28s} w={w:.1f} {m['auc_roc']:6.3f} {m['average_precision']:6.3f} {m['card_precision_at_100']:7.3f}")
    if a.json_out:
        _write_json(a.json_out, variants, rows)


def _write_json(path: str, variants: list, rows: list[dict]) -> None:
    # risk arrays stay out of the file unless MODEL_QUALITY_KEEP_SCORES asked for them (risk_b64)
    Path(path).write_text(json.dumps({"variants": dict(variants), "rows": [
        {k: v for k, v in r.items() if k != "risk"} for r in rows]}, indent=2))


if __name__ == "__main__":
    main()
