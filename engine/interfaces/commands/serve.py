"""``tollgate serve`` (the HTTP scoring service) and ``tollgate score`` (batch files).

Both build their pipeline with ``engine.assemble.build_pipeline`` — the same model,
rules, policy and detector as ``tollgate run`` — so their verdicts are the stream's.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from engine.settings import get_settings

#: ``tollgate score``'s exit code when some rows were refused (and the rest scored).
SOME_ROWS_REFUSED = 3


def _fail(message: str) -> None:
    typer.secho(f"error: {message}", fg=typer.colors.RED, err=True)
    raise typer.Exit(2)


def _settings():  # noqa: ANN202 - engine.settings.Settings
    """The settings, or a one-line error naming the bad one (e.g. an empty API token)."""
    from pydantic import ValidationError

    try:
        return get_settings()
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        _fail(f"invalid settings: {problems}")


def serve(
    host: str | None = typer.Option(None, help="Interface to bind (default: settings.http.host)."),
    port: int | None = typer.Option(None, help="Port (default: settings.http.serve_port, 8080)."),
    model: Path | None = typer.Option(None, help="Model directory or version (default: the registry's serving model)."),
    rules: Path | None = typer.Option(None, help="Rules directory (default: settings.paths.rules_dir)."),
    memory: bool = typer.Option(False, "--memory", help="Keep context in process memory instead of the stream's Redis state."),
    log_level: str = typer.Option("info", help="uvicorn log level."),
) -> None:
    """Serve POST /v1/decide (plus /healthz, /readyz, /metrics, /docs) with the stream's pipeline.

    Context is read from Redis by default — the same live state the stream reads — and
    nothing is written to it, so no caller can change what the stream decides.
    TOLLGATE_HTTP__RECORD_CONTEXT=true records scored events into it as the stream would
    (it needs a token). Set TOLLGATE_HTTP__API_TOKEN to require
    `Authorization: Bearer <token>`; without one the service only binds a loopback address.
    """
    from engine.assemble import build_pipeline
    from engine.interfaces.http import run
    from engine.interfaces.http_guard import InsecureExposure, check_exposure
    from engine.model.locate import ModelNotFound

    settings = _settings()
    try:
        check_exposure(host or settings.http.host, settings.http)  # before the model loads
    except InsecureExposure as exc:
        _fail(str(exc))
    record = settings.http.record_context and not memory
    try:
        pipeline = build_pipeline(settings, model=model, rules=rules, context="memory" if memory else "redis",
                                  record=record)
    except ModelNotFound as exc:
        _fail(str(exc))
    token = "required" if settings.http.api_token is not None else "not configured (loopback only)"
    context = "memory" if memory else ("redis, recording" if record else "redis, read-only")
    typer.echo(f"tollgate serve: model {pipeline.model_version}, rules {pipeline.rules_version}, "
               f"context {context}, API token {token}", err=True)
    run(pipeline, settings, host=host, port=port, log_level=log_level)


def score(
    input_path: Path = typer.Argument(..., exists=True, dir_okay=False, metavar="INPUT",
                                      help="Events as .csv, .parquet or .jsonl (columns/keys as in tx.events)."),
    output: Path = typer.Option(..., "-o", "--output", help="Verdicts file: .csv, .parquet or .jsonl."),
    model: Path | None = typer.Option(None, help="Model directory or version (default: the registry's serving model)."),
    rules: Path | None = typer.Option(None, help="Rules directory (default: settings.paths.rules_dir)."),
    redis_context: bool = typer.Option(False, "--redis",
                                       help="Read the stream's live Redis context instead of replaying the file "
                                            "into a private in-memory context (nothing is written to it)."),
    record: bool = typer.Option(False, "--record",
                                help="With --redis: also record the scored events into the stream's state "
                                     "(history, decision log), as the stream would."),
    outcomes: Path | None = typer.Option(
        None, "--outcomes", exists=True, dir_okay=False, metavar="FILE",
        help="Delayed outcomes (.csv/.parquet/.jsonl, tx.outcomes columns; `tollgate simulate --out "
             "week.parquet` writes week.outcomes.parquet), fed into the context in outcome-time order as the "
             "stream's feedback worker would: terminal_risk_* then match the stream's. Not with --redis."),
    chunk_rows: int = typer.Option(4096, min=1, help="Rows read per chunk (memory stays flat)."),
    batch_size: int = typer.Option(512, min=1, help="Events per decide_batch."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Score a file of events with the stream's pipeline, in chunks, with a progress bar.

    Default context: the file is replayed, in file order (which must be event-time
    order), into a fresh in-memory feature state — each event sees the history the
    stream would have given it after the same events (and, with --outcomes, the same
    outcomes). With --redis, the live Redis state is read instead (--record also writes).

    Rows that are not valid events go to OUTPUT.errors.jsonl with their line number and
    the reason; the others are scored. Exit code: 0 every row scored; 3 some rows refused
    (see the errors file); 1 the input could not be read (nothing is written); 2 usage.
    """
    from engine.assemble import build_pipeline
    from engine.interfaces.file_rows import FileUnreadable, file_format
    from engine.interfaces.file_scoring import score_file
    from engine.model.locate import ModelNotFound

    try:
        file_format(input_path)
        file_format(output)
        if outcomes is not None:
            file_format(outcomes)
    except ValueError as exc:
        _fail(str(exc))
    if record and not redis_context:
        _fail("--record writes into the stream's Redis state: it needs --redis")
    if outcomes is not None and redis_context:
        _fail("--outcomes feeds the private in-memory context; with --redis the stream's feedback worker "
              "records outcomes into Redis")
    settings = _settings()
    if redis_context:
        context = "redis"
    else:
        from engine.features.memory import MemoryFeatureStore
        from engine.features.spec import DAY_MS, IDLE_STATE_TTL_MS

        # Keep per-event snapshots (the decision log, which makes a repeated event id
        # idempotent) for one day of event time only, and forget customers and terminals
        # idle for 31 days (as their Redis keys expire): memory stays flat on any file.
        context = MemoryFeatureStore(snapshot_retention_ms=DAY_MS, forget_idle_after_ms=IDLE_STATE_TTL_MS)
    try:
        pipeline = build_pipeline(settings, model=model, rules=rules, context=context, record=record)
    except ModelNotFound as exc:
        _fail(str(exc))
    feed = None
    if outcomes is not None:
        from engine.interfaces.outcome_feed import OutcomeFeed

        # Read whole before scoring (an index by event_id, ~220 bytes an outcome): the
        # outcome file is in outcome-time order, the events file in event-time order.
        feed = OutcomeFeed.from_file(outcomes, pipeline.components.store)
    started = time.perf_counter()
    try:
        summary = score_file(pipeline, input_path, output, chunk_rows=chunk_rows, batch_size=batch_size,
                             progress=not quiet, outcomes=feed)
    except (FileUnreadable, OSError) as exc:
        typer.secho(f"error: {exc} (no output written)", fg=typer.colors.RED, err=True)
        raise typer.Exit(1) from None
    elapsed = time.perf_counter() - started
    rate = summary.scored / elapsed if elapsed > 0 else 0.0
    typer.echo(f"{summary.describe()} in {elapsed:.1f} s ({rate:,.0f} events/s) → {output}", err=True)
    if summary.invalid:
        raise typer.Exit(SOME_ROWS_REFUSED)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("score")(score)
