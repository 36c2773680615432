"""The two model families a backtest can train: the decision model and a LightGBM baseline.

Each ``fit_*`` takes the training window's rows (ground truth columns) and their encoded
batches, and returns a scorer: ``EncodedBatch -> (probs [n, 3], risk [n])`` as numpy.
Both read the same encoded features; the transformer scores through ``Inference``,
the infer stage the stream worker runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from engine.model import InputSpec, ModelConfig, save_model_dir
from engine.model.losses import VerdictCosts, verdict_costs
from engine.offline.train.fit import train_model
from engine.offline.train.sets import LabelledSet, TrainConfig
from engine.offline.train.teacher import tree_features
from engine.stages.encode import EncodedBatch, FeatureSchema
from engine.stages.infer import Inference

Scorer = Callable[[Any], tuple[np.ndarray, np.ndarray]]


#: Override keys that choose the features the model is trained on, not the network.
FEATURE_KEYS = frozenset({"history_order"})


def schema_for(overrides: dict[str, Any]) -> FeatureSchema:
    """The feature schema a backtest's overrides ask for (``history_order``; else the
    deployment's)."""
    return FeatureSchema.default(overrides.get("history_order"))


def _concat(batches: list[Any]) -> Any:
    return EncodedBatch.concat(batches)


def fit_transformer(rows: pd.DataFrame, batches: list[Any], *, seed: int, epochs: int,
                    overrides: dict[str, Any], int8: bool, report_dir: str | Path | None,
                    models_dir: str | Path | None, window: Any) -> dict[str, Scorer]:
    inputs = _concat(batches)
    data = LabelledSet(inputs, torch.tensor(rows["tx_fraud"].to_numpy(), dtype=torch.float32),
                       torch.tensor(rows["amount"].to_numpy(), dtype=torch.float32),
                       torch.tensor(rows["event_time_ms"].to_numpy(), dtype=torch.int64))
    train_keys = set(TrainConfig.model_fields)
    model_cfg = ModelConfig.default_for(InputSpec.from_schema(schema_for(overrides)),
                                        **{k: v for k, v in overrides.items() if k not in train_keys | FEATURE_KEYS})
    # --set epochs=N / seed=N override the command's own values like any other field.
    cfg = TrainConfig(**{"seed": seed, "epochs": epochs, "negative_keep": 0.25, "threads": torch.get_num_threads(),
                         **{k: v for k, v in overrides.items() if k in train_keys}})
    result = train_model(data, model_cfg, cfg, version=f"backtest-{seed}", report_dir=report_dir)
    if models_dir is not None:
        save_model_dir(result.model, result.card, Path(models_dir) / result.card.version)
    scorers = {"transformer": _inference_scorer(Inference(result.model, result.card))}
    if int8:
        scorers["transformer-int8"] = _inference_scorer(Inference(result.model, result.card, int8=True))
    return scorers


def _inference_scorer(infer: Any) -> Scorer:
    def score(encoded: Any) -> tuple[np.ndarray, np.ndarray]:
        out = infer(encoded)
        return out.probs.numpy(), out.risk.numpy()

    return score




def fit_lightgbm(rows: pd.DataFrame, batches: list[Any], *, seed: int, epochs: int,
                 overrides: dict[str, Any], int8: bool, report_dir: str | Path | None,
                 models_dir: str | Path | None, window: Any) -> dict[str, Scorer]:
    # local: LightGBM loads only for the baseline model
    import lightgbm as lgb

    x = tree_features(_concat(batches))
    y = rows["tx_fraud"].to_numpy()
    params = dict(n_estimators=300, learning_rate=0.05, num_leaves=31, min_child_samples=20,
                  subsample=0.8, subsample_freq=1, colsample_bytree=0.8, random_state=seed,
                  n_jobs=2, verbose=-1)
    params.update(overrides)
    clf = lgb.LGBMClassifier(**params).fit(x, y)
    costs = VerdictCosts()

    def score(encoded: Any) -> tuple[np.ndarray, np.ndarray]:
        risk = clf.predict_proba(tree_features(encoded))[:, 1]
        amount = torch.expm1(encoded.control_numeric[:, 0].double())
        verdict = verdict_costs(torch.as_tensor(risk), amount, costs).argmin(-1).numpy()
        # A baseline has no verdict head: its confidence is how sure it is of the label.
        conf = np.maximum(risk, 1 - risk)
        probs = np.tile(((1 - conf) / 2)[:, None], (1, 3))
        probs[np.arange(len(risk)), verdict] = conf
        return probs, risk

    return {"lightgbm": score}


FITTERS = {"transformer": fit_transformer, "lightgbm": fit_lightgbm}
