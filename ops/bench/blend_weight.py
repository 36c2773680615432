"""How the served blend's weight, and a second tree family inside it, would score: a what-if
on the validation folds, to choose ``TrainConfig.tree_blend`` (docs/decision-quality.md).

    python ops/bench/blend_weight.py --seeds 0 1 2 --jobs 2 [--folds 2018-06-20 ...] [--keep-scores DIR]

For each (fold, seed) the default model is trained exactly as ``tollgate backtest`` trains
it (``model_quality.run_one``'s fitter, the served blend included). Its test days are then
scored twice per row: the network alone, at its own calibrated log-odds ``a``
(``network_alone``, divided by the temperature the trees were installed with), and the
served trees' log-odds ``m``. The risk the model serves ranks rows as ``(1 - w) a + w m``
with ``w = tree_blend`` (offsets and the final temperature do not change a ranking), so
every weight's AUC, AP and CP@100 follow exactly without retraining.

It also fits LightGBM on the same table the trees read, with the configuration the LightGBM
grid chose on the network's inputs (``LGB_NET_IN``), on every labelled training row as the
served trees' refit is, and scores three-way blends: the what-if of adding that family.

Validation folds only by default; the test fold is for a configuration already chosen.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np
import pandas as pd

from ops.bench import model_quality  # noqa: E402

VALIDATION_FOLDS = ("2018-06-20", "2018-06-27", "2018-07-04", "2018-07-11")
WEIGHTS = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0)
#: docs/decision-quality.md: the LightGBM grid's choice on the network's inputs.
LGB_NET_IN = {"num_leaves": 63, "n_estimators": 600, "learning_rate": 0.01, "min_child_samples": 20}
#: Three-way blends (network, XGBoost, LightGBM) scored beside the weights.
TRIPLES = ((0.5, 0.25, 0.25), (0.4, 0.3, 0.3), (0.34, 0.33, 0.33), (0.4, 0.2, 0.4), (0.5, 0.0, 0.5))


def one(args: tuple[str, int, str, str | None]) -> dict[str, Any]:
    import torch

    from engine.model.card import load_model_dir
    from engine.model.trees import network_alone, tree_inputs
    from engine.offline.backtest.families import FITTERS
    from engine.offline.backtest.run import assessed_report

    fold, seed, cache_dir, keep = args
    torch.set_num_threads(1)
    train, enc, test = model_quality.load_fold(model_quality.DATA, fold, cache_dir)
    with tempfile.TemporaryDirectory() as models:
        FITTERS["transformer"](train, [enc.train], seed=seed, epochs=14, overrides={}, int8=False,
                               report_dir=None, models_dir=models, window=None)
        model = load_model_dir(next(Path(models).iterdir())).model
    trees = model.trees
    if trees is None:
        raise RuntimeError("the default model carries no trees")

    def table(batch: Any) -> np.ndarray:
        return tree_inputs(model._inputs(batch)).numpy()

    with torch.inference_mode():
        with network_alone(model):
            a = np.concatenate([(model(b)["risk"].float() / trees.t_risk).numpy() for b in enc.test_batches])
        m = np.concatenate([trees.margin(torch.from_numpy(table(b))).numpy() for b in enc.test_batches])
        x_train = table(enc.train)
    import lightgbm

    lgb = lightgbm.LGBMClassifier(random_state=seed, n_jobs=1, verbose=-1, subsample=0.8, subsample_freq=1,
                                  colsample_bytree=0.8, **LGB_NET_IN)
    lgb.fit(x_train, train["tx_fraud"].to_numpy().astype(int))
    g = np.concatenate([lgb.predict(table(b), raw_score=True) for b in enc.test_batches])
    rows = test["assessed"].to_numpy().astype(bool)
    assessed = test[rows]
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        np.savez(Path(keep) / f"{fold}_s{seed}.npz", net=a[rows], xgb=m[rows], lgb=g[rows],
                 fraud=assessed["tx_fraud"].to_numpy(), time_ms=assessed["event_time_ms"].to_numpy(),
                 card=assessed["customer_id"].to_numpy())

    def score(z: np.ndarray) -> tuple[float, float, float]:
        r = assessed_report(assessed, z[rows])
        return r["auc_roc"], r["average_precision"], r["card_precision_at_100"]

    out: dict[str, Any] = {"fold": fold, "seed": seed}
    for w in WEIGHTS:
        out[f"w={w}"] = score((1 - w) * a + w * m)
    out["lgb alone"] = score(g)
    for wn, wx, wl in TRIPLES:
        out[f"net {wn} xgb {wx} lgb {wl}"] = score(wn * a + wx * m + wl * g)
    # The mean of probabilities rather than log-odds: a confident "good" from one model no
    # longer outweighs the other's suspicion.
    out["p-mean net xgb"] = score(_expit(a) + _expit(m))
    out["p-mean net xgb lgb"] = score(_expit(a) + _expit(m) + _expit(g))
    out["kinds"] = _auc_by_kind(assessed, {"network": a[rows], "xgboost (served trees)": m[rows],
                                           "lightgbm": g[rows], "served blend": (a + m)[rows]})
    return out


#: The kinds of fraud ``_auc_by_kind`` splits, in print order.
KINDS = ("all", "amount", "card", "terminal visible", "terminal invisible", "all but invisible")


def _auc_by_kind(assessed: Any, scores: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """AUC ROC of each kind of fraud against every assessed good row (the kinds of
    ``auc_split.py``: an invisible fraud is at a terminal with no fraud known, at least 7
    days old, in the 30 days before), plus every fraud but the invisible ones."""
    from sklearn.metrics import roc_auc_score

    from ops.bench import handbook_baselines as hb

    frame = hb.read_handbook_frame(hb.handbook_file())
    recency = pd.Series(hb.terminal_recency(frame)[hb.RECENCY_FEATURES[0]].to_numpy(),
                        index=frame["event_id"].to_numpy())
    seen = recency.loc[assessed["event_id"].to_numpy()].to_numpy() < hb.RECENCY_CAP_DAYS
    scenario, bad = assessed["tx_fraud_scenario"].to_numpy(), assessed["tx_fraud"].to_numpy() == 1
    invisible = (scenario == 2) & ~seen
    masks = dict(zip(KINDS, (bad, scenario == 1, scenario == 3, (scenario == 2) & seen, invisible,
                             bad & ~invisible)))
    out: dict[str, dict[str, float]] = {}
    for kind, mask in masks.items():
        y = np.r_[np.ones(mask.sum()), np.zeros((~bad).sum())]
        out[kind] = {"n": float(mask.sum()), **{
            name: float(roc_auc_score(y, np.r_[z[mask], z[~bad]])) for name, z in scores.items()}}
    return out


def _expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", nargs="+", default=list(VALIDATION_FOLDS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--jobs", type=int, default=1, help="runs at a time (one core each)")
    ap.add_argument("--cache-dir", default=".tollgate/backtest-cache")
    ap.add_argument("--keep-scores", default=None, help="a directory: each run's per-row log-odds as .npz")
    a = ap.parse_args()
    # Replay each fold once before the pool (the runs would race to write one cache entry).
    for fold in a.folds:
        model_quality.load_fold(model_quality.DATA, fold, a.cache_dir)
    jobs = [(f, s, a.cache_dir, a.keep_scores) for s in a.seeds for f in a.folds]
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        rows = list(pool.map(one, jobs))
    print_report(rows, a.folds, a.seeds)


def print_report(rows: list[dict[str, Any]], folds: list[str], seeds: list[int]) -> None:
    names = [k for k in rows[0] if k not in ("fold", "seed", "kinds")]
    print(f"AUC ROC / AP / CP@100 on the assessed rows; folds {' '.join(folds)}; seeds {seeds}")
    for r in rows:
        print(f"{r['fold']} s{r['seed']}: " + "  ".join(f"{n} {'/'.join(f'{v:.4f}' for v in r[n])}" for n in names))
    print("\nmean over folds of the seed means (sd over seeds of the fold means)")
    for n in names:
        per_seed = [[statistics.fmean(r[n][k] for r in rows if r["seed"] == s) for s in seeds] for k in range(3)]
        print(f"{n:28s} " + " / ".join(
            f"{statistics.fmean(v):.4f} ({statistics.pstdev(v):.4f})" for v in per_seed))
    models = [m for m in rows[0]["kinds"]["all"] if m != "n"]
    print("\nAUC ROC of each kind of fraud against every assessed good row, mean of the runs (sd over runs)")
    print(f"{'kind':19s} {'frauds':>6s}  " + "  ".join(f"{m:>24s}" for m in models))
    for kind in KINDS:
        frauds = sum(int(r["kinds"][kind]["n"]) for r in rows if r["seed"] == seeds[0])
        print(f"{kind:19s} {frauds:6d}  " + "  ".join(
            f"{statistics.fmean(v):15.4f} ({statistics.pstdev(v):.3f})"
            for v in ([r["kinds"][kind][m] for r in rows] for m in models)))


if __name__ == "__main__":
    main()
