"""Where the decision model's AUC differs from the trees': per fraud kind, one fold at a time.

    python ops/bench/auc_split.py --folds 2018-06-20 2018-06-27 2018-07-04 2018-07-11 [--seed 0]
        [--variant '{"derived_terminal": false}'] [--jobs 2]

For each fold (the book's protocol, validation folds by default) five models are trained
and score the same assessed rows:

* Tollgate's decision model (``net``: ``tollgate backtest``'s replay and training, with
  ``--variant``'s overrides);
* LightGBM on the same encoded fields (``lgb_enc``, the backtest's ``lightgbm`` family);
* LightGBM on exactly what the decision model's layers read (``lgb_net_in``: the encoded
  fields after the model's own derivations, ``engine.model.derived``, with the book
  grid's configuration), which tells "the inputs lack it" from "the network does not
  use it";
* LightGBM on the book's 15 features with the configuration its validation grid chose
  (``lgb_book``, as ``handbook_baselines.py`` fits it);
* XGBoost on the network's inputs with the configuration its validation grid on those
  inputs chose (``xgb_net_in``: ``handbook_baselines.py --inputs network``), and what a
  blend would score (``blend``: the mean of its log-odds and the network's, weights fixed
  at one half beforehand). The blend is a what-if: the stream serves one model.

Each model's AUC ROC is then computed for each kind of fraud against every assessed good
row:

* amount (the handbook's scenario 1) and compromised card (scenario 3);
* compromised terminal (scenario 2), split in two: **visible**, at a terminal with a fraud
  known (at least 7 days old, as the book's delayed labels) in the 30 days before, and
  **invisible**, at a terminal with none. Nothing in an invisible fraud differs from a good
  payment, so every model can only rank it by chance there (near 0.5, give or take the
  noise of the few such frauds a fold holds; docs/decision-quality.md has the counts).

It also prints how high each model ranks the good rows at a terminal with a known fraud
in the last 21 days (mean rank percentile among all assessed rows). Validation folds
only by default: a diagnosis, never a choice made on the test fold.
"""

from __future__ import annotations

import argparse
import json
import statistics
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from engine.offline.train.trees import TREE_PARAMS  # noqa: E402
from ops.bench import handbook_baselines as hb  # noqa: E402
from ops.bench.model_quality import logit  # noqa: E402

#: What its validation grid chose for LightGBM on the book's features (docs/decision-quality.md).
LGB_BOOK = {"num_leaves": 15, "n_estimators": 300, "learning_rate": 0.03}
#: What the validation grid on the network's inputs chose for XGBoost
#: (``handbook_baselines.py --inputs network``, docs/decision-quality.md).
XGB_NET_IN = TREE_PARAMS  # the configuration the served blend's trees are fitted with
MODELS = ("net", "lgb_enc", "lgb_net_in", "lgb_book", "xgb_net_in", "blend")
KINDS = ("amount", "card", "terminal visible", "terminal invisible")
#: Good rows this close (days) to a known fraud at their terminal count as "near".
NEAR_DAYS = 21


def fold_scores(fold_name: str, seed: int, overrides: dict[str, Any], cache_dir: str) -> pd.DataFrame:
    """One row per assessed transaction: the three models' risks, truth, kind, recency."""
    import torch

    from engine.offline.backtest.run import Window, run_backtest

    torch.set_num_threads(1)
    frame = hb.read_handbook_frame(hb.handbook_file())
    table = hb.book_features(frame)[hb.BOOK_FEATURES]
    fold = hb.Fold(frame, table.to_numpy(), fold_name)
    lgb = hb.make_model("lightgbm", LGB_BOOK, seed).fit(fold.x_train, fold.y_train)
    out = pd.DataFrame({"lgb_book": lgb.predict_proba(fold.x_test)[:, 1]},
                       index=frame["event_id"].to_numpy()[fold.test])
    results = run_backtest(frame, Window.from_date(fold_name, 7, 7, 7, 30), models=("transformer", "lightgbm"),
                           seed=seed, cache_dir=cache_dir, model_overrides={"progress": False, **overrides})
    for column, family in (("net", "transformer"), ("lgb_enc", "lightgbm")):
        scores = results[family].scores
        assessed = scores[scores["assessed"]]
        out[column] = pd.Series(assessed["risk_score"].to_numpy(), index=assessed["transaction_id"].to_numpy())
    by_id = frame.set_index("event_id")
    out["fraud"] = by_id.loc[out.index, "tx_fraud"].to_numpy()
    out["scenario"] = by_id.loc[out.index, "tx_fraud_scenario"].to_numpy()
    days = hb.terminal_recency(frame)[hb.RECENCY_FEATURES[0]].to_numpy()
    out["days_since_known_fraud"] = pd.Series(days, index=frame["event_id"].to_numpy()).loc[out.index].to_numpy()
    trees = _trees_on_network_inputs(frame, fold_name, seed, overrides, cache_dir)
    for column in ("lgb_net_in", "xgb_net_in"):
        out[column] = trees[column].loc[out.index]
    out["blend"] = _expit((logit(out["net"].to_numpy()) + logit(out["xgb_net_in"].to_numpy())) / 2)
    if out.isna().any().any():
        raise RuntimeError(f"fold {fold_name}: the models scored different assessed rows")
    # The rows are the fold's assessed rows in its own order, so the book's metrics apply
    # as handbook_baselines.py computes them (AUC, AP, card precision@100).
    out.attrs["metrics"] = {model: fold.metrics(out[model].to_numpy()) for model in MODELS}
    out["card"] = fold.cards
    return out


def _trees_on_network_inputs(frame: pd.DataFrame, fold_name: str, seed: int, overrides: dict[str, Any],
                             cache_dir: str) -> pd.DataFrame:
    """LightGBM (the book grid's choice) and XGBoost (its grid's choice on these inputs) on
    what the decision model's layers read (``handbook_baselines.network_inputs``), scoring
    the test days. Indexed by event id."""
    from engine.offline.backtest.run import Window

    window = Window.from_date(fold_name, 7, 7, 7, 30)
    y = frame.set_index("event_id")["tx_fraud"]
    (train_ids, x_train), (test_ids, x_test) = hb.network_inputs(frame, window, cache_dir, overrides)
    y_train = y.loc[train_ids].to_numpy()
    out = pd.DataFrame(index=test_ids)
    for column, family, params in (("lgb_net_in", "lightgbm", LGB_BOOK), ("xgb_net_in", "xgboost", XGB_NET_IN)):
        out[column] = hb.make_model(family, params, seed).fit(x_train, y_train).predict_proba(x_test)[:, 1]
    return out


def _expit(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def split_report(df: pd.DataFrame) -> dict[str, Any]:
    """AUC per model and kind of fraud (against every assessed good row), plus ranks."""
    goods = df[df["fraud"] == 0]
    bad = df["fraud"] == 1
    seen = df["days_since_known_fraud"] < hb.RECENCY_CAP_DAYS
    kinds = {"all": bad, "amount": bad & (df["scenario"] == 1), "card": bad & (df["scenario"] == 3),
             "terminal visible": bad & (df["scenario"] == 2) & seen,
             "terminal invisible": bad & (df["scenario"] == 2) & ~seen}
    report: dict[str, Any] = {"n": {k: int(m.sum()) for k, m in kinds.items()}, "metrics": df.attrs["metrics"],
                              "bootstrap": paired_bootstrap(df)}
    for model in MODELS:
        aucs = {}
        for kind, mask in kinds.items():
            frauds = df.loc[mask, model].to_numpy()
            y = np.r_[np.ones(len(frauds)), np.zeros(len(goods))]
            aucs[kind] = float(roc_auc_score(y, np.r_[frauds, goods[model].to_numpy()]))
        rank = df[model].rank(pct=True)
        near = goods.index[goods["days_since_known_fraud"] <= NEAR_DAYS]
        report[model] = {"auc": aucs, "rank_goods_near_fraud": float(rank.loc[near].mean())}
    return report


_METRICS = ("auc", "ap", "cp100")
#: Resamples of the paired bootstrap (``paired_bootstrap``).
BOOTSTRAP = 400


def paired_bootstrap(df: pd.DataFrame, n: int = BOOTSTRAP, seed: int = 0) -> dict[str, dict[str, list[float]]]:
    """How sure a difference from the network is: the assessed rows resampled by card
    (a card's rows stay together, as its frauds do), every model scored on the same
    resample, and per model the 2.5 %, 50 % and 97.5 % points of (model − network) for AUC
    ROC and AP. CP@100 is left out: a card drawn twice is not a card the book counts."""
    from engine.offline.quality import auc_roc, average_precision

    codes, cards = pd.factorize(df["card"])
    order = np.argsort(codes, kind="stable")
    rows_of = np.split(order, np.cumsum(np.bincount(codes, minlength=len(cards)))[:-1])
    rng = np.random.default_rng(seed)
    y = df["fraud"].to_numpy()
    scores = {m: df[m].to_numpy() for m in MODELS}
    diffs: dict[str, dict[str, list[float]]] = {m: {"auc": [], "ap": []} for m in MODELS if m != "net"}
    for _ in range(n):
        idx = np.concatenate([rows_of[c] for c in rng.integers(0, len(cards), len(cards))])
        base = {"auc": auc_roc(y[idx], scores["net"][idx]), "ap": average_precision(y[idx], scores["net"][idx])}
        for m in diffs:
            diffs[m]["auc"].append(auc_roc(y[idx], scores[m][idx]) - base["auc"])
            diffs[m]["ap"].append(average_precision(y[idx], scores[m][idx]) - base["ap"])
    return {m: {k: np.percentile(v, [2.5, 50, 97.5]).tolist() for k, v in d.items()} for m, d in diffs.items()}


def _fmt(metrics: dict[str, float]) -> str:
    return " / ".join(f"{metrics[k]:.4f}" for k in _METRICS)


def _one(args: tuple[str, int, dict[str, Any], str]) -> tuple[str, dict[str, Any]]:
    return args[0], split_report(fold_scores(*args))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--folds", nargs="+", default=list(hb.VALIDATION))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--variant", default="{}", help="the decision model's overrides, as JSON")
    ap.add_argument("--jobs", type=int, default=1, help="folds at a time (one core each)")
    ap.add_argument("--cache-dir", default=".tollgate/backtest-cache")
    a = ap.parse_args()
    if hb.handbook_file() is None:
        raise SystemExit("the handbook file is absent: put it in ../shared/data/handbook/")
    overrides = json.loads(a.variant)
    jobs = [(f, a.seed, overrides, a.cache_dir) for f in a.folds]
    with ProcessPoolExecutor(max_workers=a.jobs) as pool:
        reports = dict(pool.map(_one, jobs))
    print(f"AUC ROC of each kind of fraud against every assessed good row; seed {a.seed}, decision model "
          f"overrides {overrides or 'none'}")
    header = f"{'fold':11s} {'kind':19s} {'frauds':>6s} " + " ".join(f"{m:>8s}" for m in MODELS)
    print(header)
    for fold, rep in reports.items():
        for kind in ("all", *KINDS):
            print(f"{fold:11s} {kind:19s} {rep['n'][kind]:6d} "
                  + " ".join(f"{rep[m]['auc'][kind]:8.4f}" for m in MODELS))
        print(f"{fold:11s} {'good rows near a known fraud, mean rank percentile':45s} "
              + " ".join(f"{rep[m]['rank_goods_near_fraud']:6.3f}" for m in MODELS))
    print("\nThe book's metrics over the assessed rows, AUC ROC / AP / CP@100")
    for fold, rep in reports.items():
        print(f"{fold:11s} " + "  ".join(f"{m} {_fmt(rep['metrics'][m])}" for m in MODELS))
    print(f"\nModel minus network, paired bootstrap by card ({BOOTSTRAP} resamples of the assessed rows): "
          "median [2.5 %, 97.5 %]")
    for fold, rep in reports.items():
        for m, d in rep["bootstrap"].items():
            print(f"{fold:11s} {m:10s} " + "  ".join(
                f"{k.upper()} {d[k][1]:+.4f} [{d[k][0]:+.4f}, {d[k][2]:+.4f}]" for k in ("auc", "ap")))
    if len(reports) > 1:
        print(f"{'mean':11s} " + "  ".join(
            f"{m} {_fmt({k: statistics.fmean(r['metrics'][m][k] for r in reports.values()) for k in _METRICS})}"
            for m in MODELS))
        for kind in ("all", *KINDS):
            print(f"{'mean':11s} {kind:19s} {sum(r['n'][kind] for r in reports.values()):6d} "
                  + " ".join(f"{statistics.fmean(r[m]['auc'][kind] for r in reports.values()):8.4f}"
                             for m in MODELS))


if __name__ == "__main__":
    main()
