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
                                             "FILE.outcomes.parquet next to it, for --format simulated; "
                                             "optional with --rules/--rule-verdicts: a cold start)."),
        fmt: str = typer.Option("simulated", "--format", help="simulated | handbook"),
        delay_days: float = typer.Option(7.0, help="handbook format: labels arrive this long after events."),
        rules: Path | None = typer.Option(None, "--rules", exists=True, file_okay=False,
                                          help="Cold start: run this YAML rule set over the events (as the "
                                          "guard would, without a model) and learn its verdicts as soft "
                                          "labels; events without an outcome stay unlabelled for the risk head."),
        rule_verdicts: Path | None = typer.Option(None, "--rule-verdicts", exists=True, dir_okay=False,
                                                  help="Cold start from recorded rule-engine verdicts: a "
                                                  "Parquet/CSV/JSONL file with event_id and verdict "
                                                  "(pass|review|reject), used like --rules."),
        rule_confidence: float = typer.Option(0.9, min=0.34, max=1.0, help="Probability a rule verdict puts on itself as a soft "
                                              "label (the rest is shared by the other two verdicts)."),
        version: str | None = typer.Option(None, help="Model version (default: a timestamp)."),
        models_dir: Path | None = typer.Option(None, help="Where model directories go (default from settings)."),
        report_dir: Path | None = typer.Option(None, help="Report directory (default <reports>/<version>)."),
        epochs: int = typer.Option(14, min=1, help="Training epochs (14: the published backtest's)."),
        seed: int = typer.Option(0),
        negative_keep: float = typer.Option(0.25, help="Share of good events kept per epoch (re-sampling)."),
        threads: int = typer.Option(1, min=1, help="torch threads (1: see TrainConfig.threads)."),
    ) -> None:
        """Train the decision model on events + outcomes (or rule verdicts for a cold start);
        write the model directory and a report."""
        from engine.model import InputSpec, ModelConfig, save_model_dir
        from engine.model.export import add_serving_graph
        from engine.offline.backtest.run import (
            delayed_truth_arrivals,
            outcome_arrivals,
            read_handbook_frame,
            read_simulated,
        )
        from engine.offline.train.data import build_training_set, no_arrivals, read_rule_verdicts, rule_judge
        from engine.offline.train.fit import train_model
        from engine.offline.train.sets import TrainConfig
        from engine.stages.encode import FeatureSchema

        settings = get_settings()
        if fmt not in FORMATS:
            raise typer.BadParameter(f"--format must be one of {FORMATS}")
        if rules is not None and rule_verdicts is not None:
            raise typer.BadParameter("give --rules or --rule-verdicts, not both")
        cold_start = rules is not None or rule_verdicts is not None
        try:  # a rule set that does not load (RuleSetError) or a bad verdict file: refuse up front
            judge = rule_judge(rules) if rules is not None else None
            verdict_map = read_rule_verdicts(rule_verdicts) if rule_verdicts is not None else None
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        version = version or datetime.utcnow().strftime("m%Y%m%dT%H%M%S")
        frame = read_handbook_frame(data) if fmt == "handbook" else read_simulated(data)
        if fmt == "handbook":
            arrivals = delayed_truth_arrivals(frame, int(delay_days * 86_400_000))
        else:
            import pandas as pd

            path = outcomes or data.with_name(data.name.replace(data.suffix, ".outcomes" + data.suffix))
            if path.exists():
                arrivals = outcome_arrivals(frame, pd.read_parquet(path) if path.suffix == ".parquet"
                                            else pd.read_json(path, lines=True))
            elif cold_start and outcomes is None:  # no outcomes yet: the rules are all there is
                arrivals = no_arrivals()
            else:
                raise typer.BadParameter(f"outcomes file {path} not found (give --outcomes, or --rules for "
                                         "a cold start)")
        built = build_training_set(frame, arrivals, judge=judge, rule_verdicts=verdict_map,
                                   confidence=rule_confidence)
        cfg = TrainConfig(seed=seed, epochs=epochs, negative_keep=negative_keep, threads=threads)
        model_cfg = ModelConfig.default_for(InputSpec.from_schema(FeatureSchema.default()))
        report = report_dir or settings.paths.reports_dir / version
        result = train_model(built.dataset, model_cfg, cfg, version=version, report_dir=report)
        out = save_model_dir(result.model, result.card, (models_dir or settings.paths.models_dir) / version)
        if settings.model.serving_graph == "onnx":
            add_serving_graph(out)  # served without PyTorch (settings.model.serving_graph)
        summary = {k: result.val_metrics.get(k) for k in ("auc_roc", "average_precision", "risk_ece_calibrated",
                                                          "verdict_ece_calibrated", "verdict_share",
                                                          "rule_agreement", "rule_balanced_agreement")
                   if k in result.val_metrics}
        typer.echo(json.dumps(summary, default=float))
        typer.echo(f"model {version} -> {out}; report -> {report} (n={len(built.dataset)}, "
                   f"outcomes={built.n_outcomes}, bad={built.n_bad}, rule verdicts={built.n_rule_verdicts})")

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
        epochs: int = typer.Option(14, min=1, help="Training epochs (14: the published figures')."),
        seed: int = typer.Option(0),
        int8: bool = typer.Option(False, "--int8", help="Also score with the int8-quantised transformer."),
        report_dir: Path | None = typer.Option(None, help="Training reports and metrics.json go here."),
        threads: int = typer.Option(1, min=1, help="torch threads (1: see TrainConfig.threads)."),
        overrides: list[str] = typer.Option([], "--set", help="ModelConfig/TrainConfig field=JSON value for "
                                            "the transformer, e.g. --set 'ignore_categorical=[\"terminal\"]'."),
        cache_dir: Path | None = typer.Option(None, help="Keep the replayed, encoded window here and reuse it "
                                              "when the same events, window and feature schema come again."),
    ) -> None:
        """Train on a window, replay the next days in event time with delayed labels, score, evaluate."""
        from engine.offline.backtest.run import Window, read_handbook_frame, read_simulated, run_backtest

        for name in model:
            if name not in ("transformer", "lightgbm"):
                raise typer.BadParameter(f"unknown --model {name!r}: transformer or lightgbm")
        window = Window.from_date(train_start.date().isoformat(), train_days, delay_days, test_days, history_days)
        frame = (read_handbook_frame(data, window.history_start_ms, window.test_end_ms) if fmt == "handbook"
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

    _register_export(app)


def _register_export(app: typer.Typer) -> None:
    """``tollgate model export``: joins the ``model`` group (``feedback.commands`` adds
    list|promote|rollback|audit|bootstrap to the same group)."""
    group = next((g.typer_instance for g in app.registered_groups if g.name == "model"), None)
    if group is None:
        group = typer.Typer(help="Model versions: list, promote, roll back, export.", no_args_is_help=True)
        app.add_typer(group, name="model")

    @group.command("export")
    def export(
        model_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="The model directory to export."),
        fmt: str = typer.Option("onnx", "--format", help="onnx | torchscript"),
        dtype: str = typer.Option("fp32", "--dtype", help="fp32 | fp16 | int8"),
        out: Path | None = typer.Option(None, "--out", help="The new model directory (default: MODEL_DIR's "
                                        "sibling <name>-<format>-<dtype>)."),
    ) -> None:
        """Write a model directory that serves through ONNX Runtime or TorchScript, after
        checking it agrees with the PyTorch model; TOLLGATE_MODEL__RUNTIME=auto (the
        default) then serves its graph in the worker, the API, HTTP and `tollgate score`."""
        from engine.model.export import ExportError, export_model_dir

        target = out or model_dir.with_name(f"{model_dir.name}-{fmt}-{dtype}")
        try:
            result = export_model_dir(model_dir, target, fmt, dtype)  # type: ignore[arg-type]
        except (ExportError, ValueError, FileExistsError) as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        diffs = ", ".join(f"{k} {v:.2g}" for k, v in result.max_abs_diff.items())
        typer.echo(f"exported {result.card.version} to {result.path} (largest difference to PyTorch: {diffs}; "
                   f"tolerance {result.card.serving.tolerance if result.card.serving else '?'})")
