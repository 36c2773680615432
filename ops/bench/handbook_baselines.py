"""The book's baselines through Tollgate's assessment code: proof of the evaluation, and the
tree models the decision model must beat.

    python ops/bench/handbook_baselines.py [--families lr rf xgboost lightgbm] [--seeds 0 1 2]
        [--inputs book|network] [--transformer] [--json-out OUT.json]

On the handbook file (``engine.offline.shared_data.handbook_file``), with the book's 15 features
(``engine.offline.handbook_features``) and the book's protocol (7 training days, 7 delay days, 7
assessed days; ``engine.offline.backtest.run.assessed_mask`` removes known-compromised cards; metrics
from ``engine.offline.quality``), for each family:

1. every configuration of the family's grid (the book's ch. 5.3 grids for logistic
   regression, random forest and XGBoost; a small one for LightGBM) is trained on each
   validation fold (first training days 2018-06-20, 06-27, 07-04, 07-11, seed 0);
2. the configuration with the best mean validation average precision is kept;
3. it is trained with each ``--seeds`` on the test fold (2018-07-18: assesses
   2018-08-01..07) and reported as mean and spread, beside the book's published test
   figures for the family (``../shared/data/README.md``).

``--inputs network`` gives the trees, instead of the book's features, exactly what the
decision model's layers read: its encoded fields after its own derivations, from the
replay ``tollgate backtest`` caches (``network_inputs``). The grids run on them the same
way, so "the trees on the same features" are tuned on validation as the book's are.

``--transformer`` adds Tollgate's decision model (defaults, ``tollgate backtest``'s
replay through the stream's own enrich/encode and ``Inference``, reusing ``--cache-dir``)
on the same folds and seeds, scored by the same assessment code, so all of it is one run.
Nothing is chosen on the test fold.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np
import pandas as pd

from engine.offline.backtest.run import DAY_MS, Window, assessed_mask, read_handbook_frame
from engine.offline.handbook_features import (
    BOOK_FEATURES,
    RECENCY_CAP_DAYS,
    RECENCY_FEATURES,
    book_features,
    terminal_recency,
)
from engine.offline.quality import quality_report
from engine.offline.shared_data import handbook_file

VALIDATION = ("2018-06-20", "2018-06-27", "2018-07-04", "2018-07-11")
TEST = "2018-07-18"
# ../shared/data/README.md: the book's published test-set figures, best of each family
# (AUC ROC, AP, CP@100).
BOOK_TEST = {"lr": (0.868, 0.623, 0.297), "rf": (0.870, 0.678, 0.299), "xgboost": (0.869, 0.687, 0.303)}
GRIDS: dict[str, dict[str, list[Any]]] = {
    "lr": {"C": [0.1, 1, 10, 100]},
    "rf": {"max_depth": [5, 10, 20, 50], "n_estimators": [25, 50, 100]},
    "xgboost": {"max_depth": [3, 6, 9], "n_estimators": [25, 50, 100], "learning_rate": [0.1, 0.3]},
    "lightgbm": {"num_leaves": [15, 31, 63], "n_estimators": [100, 300], "learning_rate": [0.03, 0.1]},
}


def make_model(family: str, params: dict[str, Any], seed: int) -> Any:
    """The book's pipelines: standard scaling, then the classifier (random_state = seed)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if family == "lr":
        from sklearn.linear_model import LogisticRegression

        clf: Any = LogisticRegression(random_state=seed, max_iter=1000, **params)
    elif family == "rf":
        from sklearn.ensemble import RandomForestClassifier

        clf = RandomForestClassifier(random_state=seed, n_jobs=1, **params)
    elif family == "xgboost":
        import xgboost

        clf = xgboost.XGBClassifier(random_state=seed, n_jobs=1, verbosity=0, eval_metric="logloss", **params)
    elif family == "lightgbm":
        import lightgbm

        clf = lightgbm.LGBMClassifier(random_state=seed, n_jobs=1, verbose=-1, subsample=0.8, subsample_freq=1,
                                      colsample_bytree=0.8, **params)
    else:
        raise ValueError(f"unknown family {family!r}")
    return make_pipeline(StandardScaler(), clf)


class Fold:
    """One fold's training rows and assessed test rows, features and truth."""

    def __init__(self, frame: pd.DataFrame, features: np.ndarray, train_start: str) -> None:
        self.name = train_start
        self.window = Window.from_date(train_start, 7, 7, 7, 30)
        t = frame["event_time_ms"].to_numpy()
        self.train = np.flatnonzero((t >= self.window.train_start_ms) & (t < self.window.train_end_ms))
        self.test = np.flatnonzero(assessed_mask(frame, self.window))
        self.x_train, self.y_train = features[self.train], frame["tx_fraud"].to_numpy()[self.train]
        self.x_test = features[self.test]
        self.y_test = frame["tx_fraud"].to_numpy()[self.test]
        self.days = t[self.test] // DAY_MS
        self.cards = frame["customer_id"].to_numpy()[self.test]

    @classmethod
    def of_network_inputs(cls, frame: pd.DataFrame, train_start: str, cache_dir: str,
                          overrides: dict[str, Any] | None = None) -> Fold:
        """The same fold (training rows, assessed rows, their order and truth) with, as
        features, what the decision model's layers read: ``network_inputs``."""
        fold = cls(frame, np.empty((len(frame), 0), dtype=np.float32), train_start)
        event_ids = frame["event_id"].to_numpy()
        (train_ids, x_train), (test_ids, x_test) = network_inputs(frame, fold.window, cache_dir, overrides or {})

        def rows_of(ids: np.ndarray, table: np.ndarray, wanted: np.ndarray, what: str) -> np.ndarray:
            where = pd.Index(ids).get_indexer(wanted)
            if (where < 0).any():
                raise RuntimeError(f"fold {train_start}: the replay lacks {int((where < 0).sum())} {what} rows")
            return table[where]

        fold.x_train = rows_of(train_ids, x_train, event_ids[fold.train], "training")
        fold.x_test = rows_of(test_ids, x_test, event_ids[fold.test], "assessed")
        return fold

    def metrics(self, risk: np.ndarray) -> dict[str, float]:
        m = quality_report(self.y_test, risk, days=self.days, cards=self.cards)
        return {"auc": m["auc_roc"], "ap": m["average_precision"], "cp100": m["card_precision_at_100"],
                "n": m["n"], "n_bad": m["n_bad"]}


def network_inputs(frame: pd.DataFrame, window: Window, cache_dir: str, overrides: dict[str, Any]
                   ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(event ids, table) of a window's training rows and of its test days' rows: the
    numeric fields the decision model's layers read, after its own derivations
    (``engine.model.derived``; the model ``overrides`` configure), laid out as the
    backtest's trees read fields (``tree_features``). Read from the replay ``tollgate
    backtest`` caches in ``cache_dir``, so the rows and fields are the network's own."""
    from engine.model import DecisionModel, InputSpec, ModelConfig
    from engine.offline.backtest.families import schema_for
    from engine.offline.backtest.run import cached_encode_window
    from engine.offline.train.teacher import derived_tree_features
    from engine.stages.encode import EncodedBatch

    frame = window.rows(frame)
    schema = schema_for(overrides)
    encoded = cached_encode_window(frame, window, cache_dir, schema=schema)
    config = ModelConfig.default_for(InputSpec.from_schema(schema),
                                     **{k: v for k, v in overrides.items() if k in ModelConfig.model_fields})
    derive = DecisionModel(config).derive
    ids = frame["event_id"].to_numpy()
    return ((ids[encoded.train_rows], derived_tree_features(encoded.train, derive)),
            (ids[encoded.test_rows], derived_tree_features(EncodedBatch.concat(encoded.test_batches), derive)))


def fit_and_score(family: str, params: dict[str, Any], seed: int, fold: Fold) -> dict[str, Any]:
    t0 = time.perf_counter()
    model = make_model(family, params, seed).fit(fold.x_train, fold.y_train)
    risk = model.predict_proba(fold.x_test)[:, 1]
    return {"family": family, "params": params, "seed": seed, "fold": fold.name,
            "fit_s": time.perf_counter() - t0, **fold.metrics(risk)}


def transformer_scorer(frame: pd.DataFrame, cache_dir: str, overrides: dict[str, Any] | None = None
                       ) -> Callable[[str, int], dict[str, Any]]:
    """Tollgate's decision model (defaults, with ``overrides``) on a fold, through
    ``tollgate backtest``'s code."""
    from engine.offline.backtest.run import run_backtest

    def run(train_start: str, seed: int) -> dict[str, Any]:
        window = Window.from_date(train_start, 7, 7, 7, 30)
        t0 = time.perf_counter()
        result = run_backtest(frame, window, models=("transformer",), seed=seed, cache_dir=cache_dir,
                              model_overrides={"progress": False, **(overrides or {})})["transformer"]
        m = result.metrics
        return {"family": "transformer", "params": {}, "seed": seed, "fold": train_start,
                "fit_s": time.perf_counter() - t0, "auc": m["auc_roc"], "ap": m["average_precision"],
                "cp100": m["card_precision_at_100"], "n": m["n"], "n_bad": m["n_bad"]}

    return run


def summary(rows: list[dict[str, Any]], key: str) -> tuple[float, float]:
    values = [r[key] for r in rows]
    return statistics.fmean(values), (statistics.pstdev(values) if len(values) > 1 else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=None, help="the handbook file (default: ../shared/data/handbook)")
    ap.add_argument("--families", nargs="+", default=["lr", "rf", "xgboost", "lightgbm"], choices=sorted(GRIDS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--transformer", action="store_true", help="also the decision model (slow: trains per fold)")
    ap.add_argument("--transformer-folds", nargs="+", default=list(VALIDATION) + [TEST])
    ap.add_argument("--cache-dir", default=".tollgate/backtest-cache")
    ap.add_argument("--json-out", type=Path, default=None)
    ap.add_argument("--recency", action="store_true",
                    help="add the terminal's days since its latest known fraud / transaction to the 15 features "
                         "(what the reverted stream features terminal_hours_since_* carried; not the book's)")
    ap.add_argument("--inputs", choices=("book", "network"), default="book",
                    help="the trees' features: the book's 15, or what the decision model's layers read "
                         "(its encoded fields after its derivations; replays the folds into --cache-dir once)")
    ap.add_argument("--variant", default="{}",
                    help="the decision model's overrides, as JSON: its inputs (--inputs network) and --transformer")
    ap.add_argument("--params", action="append", default=[], metavar="FAMILY=JSON",
                    help="skip FAMILY's grid and use this configuration (one chosen by an earlier grid run)")
    ap.add_argument("--grid", action="append", default=[], metavar="FAMILY=JSON",
                    help="replace FAMILY's grid, e.g. rf='{\"max_depth\": [10, 20], \"n_estimators\": [100]}'")
    a = ap.parse_args()
    for item in a.grid:
        family, _, grid = item.partition("=")
        GRIDS[family] = json.loads(grid)
    for item in a.params:
        family, _, params = item.partition("=")
        GRIDS[family] = {k: [v] for k, v in json.loads(params).items()}
    path = a.data or handbook_file()
    if path is None:
        raise SystemExit("the handbook file is absent: give --data or put it in ../shared/data/handbook/")
    import torch

    torch.set_num_threads(1)
    frame = read_handbook_frame(path)
    overrides = json.loads(a.variant)
    t0 = time.perf_counter()
    if a.inputs == "network":
        if a.recency:
            raise SystemExit("--recency adds to the book's features; the network's inputs carry their own")
        folds = {name: Fold.of_network_inputs(frame, name, a.cache_dir, overrides) for name in VALIDATION + (TEST,)}
        width = folds[TEST].x_train.shape[1]
        print(f"the decision model's inputs (overrides {overrides or 'none'}): {width} fields, "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    else:
        table = book_features(frame)[BOOK_FEATURES]
        if a.recency:
            table = pd.concat([table, terminal_recency(frame)], axis=1)
        features = table.to_numpy()
        print(f"{table.shape[1]} features for {len(frame):,} rows in {time.perf_counter() - t0:.0f} s", flush=True)
        folds = {name: Fold(frame, features, name) for name in VALIDATION + (TEST,)}
    for f in folds.values():
        print(f"fold {f.name}: train {len(f.train):,} rows, assessed {len(f.y_test):,} / {int(f.y_test.sum())} frauds",
              flush=True)
        if a.recency and "tx_fraud_scenario" in frame:
            # How much of the terminal scenario any model could see: its frauds at a terminal
            # with no fraud known (>= 7 days old) in the 30 days before.
            days = table[RECENCY_FEATURES[0]].to_numpy()[f.test]
            terminal_frauds = frame["tx_fraud_scenario"].to_numpy()[f.test] == 2
            unseen = float(np.mean(days[terminal_frauds] >= RECENCY_CAP_DAYS))
            goods_near = float(np.mean(days[f.y_test == 0] <= 21))
            print(f"  compromised-terminal frauds with no known fraud at their terminal: {unseen:.3f} "
                  f"of {int(terminal_frauds.sum())}; good rows with a known fraud there in 21 days: {goods_near:.3f}",
                  flush=True)
    rows: list[dict[str, Any]] = []
    chosen: dict[str, dict[str, Any]] = {}
    for family in a.families:
        grid = GRIDS[family]
        best, best_ap = None, -1.0
        for values in itertools.product(*grid.values()):
            params = dict(zip(grid, values))
            runs = [fit_and_score(family, params, 0, folds[name]) for name in VALIDATION]
            rows += [{**r, "stage": "validation"} for r in runs]
            mean_ap = statistics.fmean(r["ap"] for r in runs)
            print(f"  {family:9s} {json.dumps(params):58s} validation AP {mean_ap:.3f} "
                  f"AUC {statistics.fmean(r['auc'] for r in runs):.3f} "
                  f"CP@100 {statistics.fmean(r['cp100'] for r in runs):.3f}", flush=True)
            if mean_ap > best_ap:
                best, best_ap = params, mean_ap
        chosen[family] = best or {}
        for seed in a.seeds:
            rows.append({**fit_and_score(family, chosen[family], seed, folds[TEST]), "stage": "test"})
            r = rows[-1]
            print(f"  {family:9s} test fold seed {seed}: AUC {r['auc']:.3f} AP {r['ap']:.3f} CP@100 {r['cp100']:.3f}",
                  flush=True)
            if seed != 0:  # seed 0 on the validation folds ran in the grid already
                rows += [{**fit_and_score(family, chosen[family], seed, folds[name]), "stage": "validation-seeds"}
                         for name in VALIDATION]
    if a.transformer:
        run = transformer_scorer(frame, a.cache_dir, overrides)
        for name in a.transformer_folds:
            for seed in a.seeds:
                r = run(name, seed)
                rows.append({**r, "stage": "test" if name == TEST else "validation-seeds"})
                print(f"  transformer fold {name} seed {seed}: AUC {r['auc']:.3f} AP {r['ap']:.3f} "
                      f"CP@100 {r['cp100']:.3f} ({r['fit_s']:.0f} s)", flush=True)
        chosen["transformer"] = {}
    print(f"\ninputs: {a.inputs}" + (f", decision model overrides {overrides}" if overrides else ""))
    print(f"{'family':11s} {'config (chosen on validation AP)':44s} | validation mean (4 folds x seeds) "
          f"| test fold {TEST}, mean (sd) over seeds {a.seeds} | book test")
    for family, params in chosen.items():
        val = [r for r in rows if r["family"] == family and r["params"] == params and r["stage"] != "test"]
        test = [r for r in rows if r["family"] == family and r["params"] == params and r["stage"] == "test"]
        v = {k: summary(val, k)[0] for k in ("auc", "ap", "cp100")} if val else None
        t = {k: summary(test, k) for k in ("auc", "ap", "cp100")} if test else None
        book = BOOK_TEST.get(family) if a.inputs == "book" else None  # published on the book's features
        print(f"{family:11s} {json.dumps(params):44s} | "
              + (f"{v['auc']:.3f} / {v['ap']:.3f} / {v['cp100']:.3f}" if v else "-") + " | "
              + (" / ".join(f"{t[k][0]:.3f} ({t[k][1]:.3f})" for k in ("auc", "ap", "cp100")) if t else "-")
              + " | " + (" / ".join(f"{x:.3f}" for x in book) if book else "-"))
    if a.json_out:
        a.json_out.write_text(json.dumps({"inputs": a.inputs, "overrides": overrides, "chosen": chosen, "rows": rows}, indent=2, default=float))


if __name__ == "__main__":
    main()
