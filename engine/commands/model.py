"""``tollgate train`` and ``tollgate backtest``: the decision model's command line."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import typer

from engine.settings import get_settings

FORMATS = ("simulated", "handbook")


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train(
        data: Path = typer.Option(..., "--data", exists=True, help="Events: a `tollgate simulate` "
                                  "Parquet/CSV file, or the handbook's Parquet (--format handbook)."),
        outcomes: Path | None = typer.Option(None, help="Outcomes file (default: DATA's "
                                             "FILE.outcomes.parquet next to it, for --format simulated)."),
        fmt: str = typer.Option("simulated", "--format", help="simulated | handbook"),
        delay_days: float = typer.Option(7.0, help="handbook format: labels arrive this long after events."),
        version: str | None = typer.Option(None, help="Model version (default: a timestamp)."),
        models_dir: Path | None = typer.Option(None, help="Where model directories go (default from settings)."),
        report_dir: Path | None = typer.Option(None, help="Report directory (default <reports>/<version>)."),
        epochs: int = typer.Option(6, min=1), seed: int = typer.Option(0),
        negative_keep: float = typer.Option(0.25, help="Share of good events kept per epoch (re-sampling)."),
        threads: int = typer.Option(1, min=1, help="torch threads (1: see TrainConfig.threads)."),
    ) -> None:
        """Train the decision model on events + outcomes; write the model directory and a report."""
        import numpy as np
        import torch

        from engine.backtest import (
            Replay, delayed_truth_arrivals, outcome_arrivals, read_handbook, read_simulated,
        )
        from engine.encode import EncodedBatch, FeatureSchema, FieldIsolatedEncoder
        from engine.model import InputSpec, ModelConfig, save_model_dir
        from engine.train import LabelledSet, TrainConfig, train_model

        settings = get_settings()
        if fmt not in FORMATS:
            raise typer.BadParameter(f"--format must be one of {FORMATS}")
        version = version or datetime.utcnow().strftime("m%Y%m%dT%H%M%S")
        frame = read_handbook(data) if fmt == "handbook" else read_simulated(data)
        if fmt == "handbook":
            arrivals = delayed_truth_arrivals(frame, int(delay_days * 86_400_000))
        else:
            path = outcomes or data.with_name(data.name.replace(data.suffix, ".outcomes" + data.suffix))
            if not path.exists():
                raise typer.BadParameter(f"outcomes file {path} not found (give --outcomes)")
            import pandas as pd

            arrivals = outcome_arrivals(frame, pd.read_parquet(path) if path.suffix == ".parquet"
                                        else pd.read_json(path, lines=True))
        # The label of an event is its latest outcome; no outcome = presumed good
        # (a chargeback would have arrived), which is what a card issuer assumes too.
        latest = arrivals.sort_values("arrival_time_ms").groupby("event_id")["is_bad"].last()
        labels = frame["event_id"].map(latest).fillna(False).astype(float).to_numpy()
        batches: list[EncodedBatch] = []
        replay = Replay(frame, arrivals, FieldIsolatedEncoder())
        replay.run_until(int(frame["event_time_ms"].max()) + 1, lambda r, e, enc: batches.append(enc), "encode")
        dataset = LabelledSet(EncodedBatch.concat(batches), torch.tensor(labels, dtype=torch.float32),
                              torch.tensor(frame["amount"].to_numpy(), dtype=torch.float32),
                              torch.tensor(frame["event_time_ms"].to_numpy(), dtype=torch.int64))
        cfg = TrainConfig(seed=seed, epochs=epochs, negative_keep=negative_keep, threads=threads)
        model_cfg = ModelConfig(inputs=InputSpec.from_schema(FeatureSchema.default()))
        report = report_dir or settings.paths.reports_dir / version
        result = train_model(dataset, model_cfg, cfg, version=version, report_dir=report)
        out = save_model_dir(result.model, result.card, (models_dir or settings.paths.models_dir) / version)
        summary = {k: result.val_metrics.get(k) for k in ("auc_roc", "average_precision", "risk_ece_calibrated",
                                                          "verdict_ece_calibrated", "verdict_share")}
        typer.echo(json.dumps(summary, default=float))
        typer.echo(f"model {version} -> {out}; report -> {report} (n={len(dataset)}, bad={int(np.sum(labels))})")

    @app.command("backtest")
    def backtest(
        data: Path = typer.Option(..., "--data", exists=True, help="Events with ground truth."),
        fmt: str = typer.Option("handbook", "--format", help="handbook | simulated"),
        train_start: datetime = typer.Option(..., formats=["%Y-%m-%d"], help="First training day (UTC)."),
        train_days: int = typer.Option(7, min=1), delay_days: int = typer.Option(7, min=0),
        test_days: int = typer.Option(7, min=1),
        history_days: int = typer.Option(30, min=0, help="Days before training replayed to warm the features."),
        out: Path = typer.Option(..., "--out", help="Scores Parquet: transaction_id, risk_score, verdict, "
                                 "confidence (+ event time, card, assessed, label)."),
        model: list[str] = typer.Option(["transformer"], "--model", help="transformer | lightgbm (repeatable: "
                                        "several families share one replay)."),
        epochs: int = typer.Option(6, min=1), seed: int = typer.Option(0),
        int8: bool = typer.Option(False, "--int8", help="Also score with the int8-quantised transformer."),
        report_dir: Path | None = typer.Option(None, help="Training reports and metrics.json go here."),
        threads: int = typer.Option(1, min=1, help="torch threads (1: see TrainConfig.threads)."),
        overrides: list[str] = typer.Option([], "--set", help="ModelConfig/TrainConfig field=JSON value for "
                                            "the transformer, e.g. --set 'ignore_categorical=[\"terminal\"]'."),
        cache_dir: Path | None = typer.Option(None, help="Keep the replayed, encoded window here and reuse it "
                                              "when the same events, window and feature schema come again."),
    ) -> None:
        """Train on a window, replay the next days in event time with delayed labels, score, evaluate."""
        from engine.backtest import Window, read_handbook, read_simulated, run_backtest

        for name in model:
            if name not in ("transformer", "lightgbm"):
                raise typer.BadParameter(f"unknown --model {name!r}: transformer or lightgbm")
        window = Window.from_date(train_start.date().isoformat(), train_days, delay_days, test_days, history_days)
        frame = (read_handbook(data, window.history_start_ms, window.test_end_ms) if fmt == "handbook"
                 else read_simulated(data))
        settings_override = {}
        for item in overrides:
            key, sep, value = item.partition("=")
            if not sep:
                raise typer.BadParameter(f"--set {item!r}: expected field=value")
            try:
                settings_override[key.strip()] = json.loads(value)
            except json.JSONDecodeError:
                settings_override[key.strip()] = value
        results = run_backtest(frame, window, models=tuple(model), seed=seed, epochs=epochs, int8=int8,
                               report_dir=report_dir, threads=threads, model_overrides=settings_override,
                               cache_dir=cache_dir)
        out.parent.mkdir(parents=True, exist_ok=True)
        for i, (name, result) in enumerate(results.items()):
            path = out if i == 0 else out.with_name(f"{out.stem}.{name}{out.suffix}")
            result.scores.to_parquet(path, index=False)
            m = result.metrics
            typer.echo(f"{name:17s} AUC ROC {m['auc_roc']:.3f}  AP {m['average_precision']:.3f}  "
                       f"CP@100 {m['card_precision_at_100']:.3f}  (n={m['n']}, bad={m['n_bad']}) -> {path}")
        if report_dir is not None:
            report_dir.mkdir(parents=True, exist_ok=True)
            (report_dir / "backtest_metrics.json").write_text(
                json.dumps({k: r.metrics for k, r in results.items()}, indent=2, default=str))
