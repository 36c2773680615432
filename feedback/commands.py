"""``tollgate feedback worker|fine-tune|drill|export`` and
``tollgate model list|promote|rollback|audit|bootstrap``.

The model commands join an existing ``model`` group if another area registered one
(``engine.interfaces.commands.model`` owns ``model train``), so the CLI shows a single group.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import typer

feedback_app = typer.Typer(help="The feedback loop: outcome join worker, fine-tune cycles, export.",
                           no_args_is_help=True)


def _settings():
    from engine.settings import get_settings

    return get_settings()


def _redis(settings):
    from engine.wire.redisconn import connect

    return connect(settings.redis.url, socket_timeout_s=5.0)


@feedback_app.command("worker")
def worker(flush_interval_s: float = typer.Option(5.0, help="Seconds between Parquet flushes."),
           batch_size: int = typer.Option(500, help="Messages per join batch."),
           consume_events: bool = typer.Option(False, help="Also join tx.events (when decision logs expire early)."),
           app_id: str | None = typer.Option(None, help="faust app id / consumer group (default: settings)."),
           metrics_port: int = typer.Option(9401, help="Port of the Prometheus /metrics endpoint (0: off)."),
           ) -> None:
    """Run the feedback worker (faust): join outcomes to verdicts, update delayed-label
    risk, append labelled examples. Stops cleanly on SIGTERM/SIGINT."""
    from engine.features.redis_store import RedisFeatureStore
    from feedback.stream.app import run_worker
    from feedback.stream.feedback_metrics import FeedbackMetrics
    from feedback.stream.process import FeedbackProcessor

    settings = _settings()
    client = _redis(settings)
    processor = FeedbackProcessor.from_settings(settings, client, RedisFeatureStore(client, settings))
    metrics = FeedbackMetrics()
    metrics.decision_log_redis.set(settings.redis.decision_log_redis_ms / 1000)
    if metrics_port:
        FeedbackMetrics.serve(metrics_port, settings.http.host)
    sys.argv = [sys.argv[0], "worker"]  # faust's Worker parses argv; give it nothing of ours
    run_worker(settings, processor, app_id=app_id, batch_size=batch_size,
               flush_interval_s=flush_interval_s, consume_events=consume_events, metrics=metrics)


@feedback_app.command("fine-tune")
def fine_tune_cmd(now: bool = typer.Option(False, "--now", help="Run one cycle now and exit."),
                  at_ms: int | None = typer.Option(None, help="Event-time 'now' for the cycle (backtests)."),
                  who: str = typer.Option(os.environ.get("USER", "scheduler"), help="Recorded as the promoter."),
                  poll_s: float = typer.Option(60.0, help="How often the scheduler checks whether a cycle is due."),
                  scope: str = typer.Option("heads", help="What the fine-tune updates: heads | lora | all."),
                  since_ms: int | None = typer.Option(None, help="Train on labels from this time (default: since the last promotion)."),
                  ) -> None:
    """Fine-tune a candidate from the serving model, gate it, promote it if every bar
    holds. Without --now: run every ``TOLLGATE_FEEDBACK__FINE_TUNE_INTERVAL_HOURS``."""
    from feedback.learn.finetune import FineTuneConfig
    from feedback.learn.scheduler import FineTuneScheduler, SchedulerConfig

    if scope not in ("heads", "lora", "all"):
        raise typer.BadParameter("scope must be heads, lora or all")
    settings = _settings()
    config = SchedulerConfig.from_settings(settings, finetune=FineTuneConfig(scope=scope))
    sched = FineTuneScheduler(settings, _redis(settings), config=config)
    if now or at_ms is not None:
        result = sched.run_cycle(at_ms, who=who, train_since_ms=since_ms)
        typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
        raise typer.Exit(3 if result.status in ("refused", "halted") else 0)
    sched.run_forever(poll_s=poll_s)


@feedback_app.command("drill")
def drill_cmd(flip_labels: float = typer.Option(..., "--flip-labels", min=0.0, max=1.0,
                                                help="Share of the untrusted outcomes whose label is flipped."),
              at_ms: int | None = typer.Option(None, help="Event-time 'now' for the cycle (default: wall clock)."),
              since_ms: int | None = typer.Option(None, help="Train on labels from this time (default: since the last promotion)."),
              ) -> None:
    """Rehearse a poisoning of tx.outcomes: run one fine-tune cycle, without promoting,
    on the stored labels with a share of the untrusted ones flipped, and show what
    stops it (the label-shift alarm or the gate). Exit 0 when the poisoning is stopped,
    1 when the gate would have promoted the poisoned candidate."""
    from feedback.learn.scheduler import FineTuneScheduler

    from .trust import flip_labels as flip

    settings = _settings()
    trusted = tuple(settings.feedback.trust.trusted_sources)
    sched = FineTuneScheduler(settings, _redis(settings))
    result = sched.run_cycle(at_ms, who="drill", train_since_ms=since_ms, poison=flip(flip_labels, trusted),
                             dry_run=True)
    held = ("trusted sources " + ", ".join(trusted) if trusted else
            "a hash share of event ids, untrusted: nothing is promoted on it unless "
            "feedback.trust.allow_untrusted_heldout (set feedback.trust.trusted_sources)")
    typer.echo(f"drill: {flip_labels:.0%} of untrusted labels flipped; held-out set: {held}")
    typer.echo(json.dumps(result.to_dict(), indent=2, default=str))
    if result.status in ("halted", "refused"):
        what = "the label-shift alarm" if result.status == "halted" else "the gate"
        typer.echo(f"stopped by {what}: " + "; ".join(result.reasons))
        raise typer.Exit(0)
    if result.status == "skipped":
        typer.echo("nothing to rehearse on: " + "; ".join(result.reasons), err=True)
        raise typer.Exit(2)
    typer.echo("NOT stopped: the gate would have promoted a candidate trained on the poisoned labels", err=True)
    raise typer.Exit(1)


@feedback_app.command("export")
def export_cmd(out: Path = typer.Argument(..., help="Output file: .parquet or .csv"),
               since_ms: int | None = typer.Option(None, help="Events from this time (epoch ms)."),
               until_ms: int | None = typer.Option(None, help="Events before this time (epoch ms)."),
               labelled_only: bool = typer.Option(False, help="Only events whose outcome is known."),
               ) -> None:
    """Decision logs + outcomes → a clean table (event, features, verdict, outcome, label)."""
    from feedback.learn.export import export_table

    settings = _settings()
    root = settings.paths.examples_dir
    path, rows = export_table(root / "decisions", root / "labels", out, since_ms=since_ms,
                              until_ms=until_ms, labelled_only=labelled_only)
    typer.echo(f"wrote {rows} rows to {path}")


def _registry():
    from engine.model.registry import ModelRegistry

    settings = _settings()
    return ModelRegistry(settings, _redis(settings))


def model_list() -> None:
    """Registered model versions; * marks the one serving."""
    reg = _registry()
    rows = reg.list()
    if not rows:
        typer.echo(f"no model versions in {reg.models_dir}")
        return
    for m in rows:
        metrics = m.card.get("metrics") or {}
        gate = metrics.get("gate") or {}
        ap = gate.get("ap", metrics.get("val_average_precision"))
        when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(m.registered_at_ms / 1000))
        typer.echo(f"{'*' if m.serving else ' '} {m.version:<40} {when}  parent={m.card.get('parent_version') or '-'}"
                   f"  AP={'-' if ap is None else f'{float(ap):.4f}'}")


def model_promote(version: str = typer.Argument(...),
                  who: str = typer.Option(..., help="Who promotes (recorded)."),
                  why: str = typer.Option(..., help="Why (recorded).")) -> None:
    """Point serving at VERSION; running engines hot-swap through pub/sub."""
    from engine.model.registry import RegistryError

    try:
        event = _registry().promote(version, who=who, why=why)
    except RegistryError as exc:
        typer.echo(f"refused: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"serving {event.version} (was {event.previous or 'none'})")


def model_rollback(who: str = typer.Option(..., help="Who rolls back (recorded)."),
                   why: str = typer.Option(..., help="Why (recorded).")) -> None:
    """Return serving to the version that served before the current one."""
    from engine.model.registry import RegistryError

    try:
        event = _registry().rollback(who=who, why=why)
    except RegistryError as exc:
        typer.echo(f"refused: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"serving {event.version} (rolled back from {event.previous})")


def model_bootstrap(history_days: int = typer.Option(14, min=2, help="Days of simulated history to train on."),
                    customers: int = typer.Option(1000, min=10, help="Simulated cards (at least 1,000 are used)."),
                    seed: int = typer.Option(42, help="Simulation and training seed."),
                    epochs: int = typer.Option(5, min=1, help="Training epochs."),
                    ) -> None:
    """Make sure a model serves: if the registry serves none, train a small one on
    simulated history, register and promote it; otherwise do nothing. The container
    stack runs this once before the engine starts (docker-compose.yml, model-init)."""
    from engine.interfaces.quickstart import ensure_model

    settings = _settings()
    version = ensure_model(settings, _redis(settings), history_days=history_days, customers=customers,
                           seed=seed, epochs=epochs, name="bootstrap", say=typer.echo)
    typer.echo(f"serving {version}")


def model_audit() -> None:
    """Every promotion and rollback, with who and why."""
    for e in _registry().audit():
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.at / 1000))
        event_time = ("" if e.event_time_ms is None else
                      "  (event time " + time.strftime("%Y-%m-%d %H:%M", time.gmtime(e.event_time_ms / 1000)) + ")")
        typer.echo(f"{when}  {e.action:<8} {e.previous or '-'} -> {e.version}  by {e.who}: {e.why}{event_time}")


def register(app: typer.Typer) -> None:
    app.add_typer(feedback_app, name="feedback")
    model_group = next((g.typer_instance for g in app.registered_groups if g.name == "model"), None)
    if model_group is None:
        model_group = typer.Typer(help="Model versions: list, promote, roll back.", no_args_is_help=True)
        app.add_typer(model_group, name="model")
    taken = {c.name or (c.callback.__name__ if c.callback else "") for c in model_group.registered_commands}
    for name, fn in (("list", model_list), ("promote", model_promote), ("rollback", model_rollback),
                     ("audit", model_audit), ("bootstrap", model_bootstrap)):
        if name not in taken:
            model_group.command(name)(fn)
