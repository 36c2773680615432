"""``tollgate quickstart``: the whole loop on one machine, in one command.

1. start the stack (``ops/stack up``) and create the topics;
2. train a small model on simulated history if the registry serves none;
3. start an engine worker (``tollgate run``) and the feedback worker as subprocesses;
4. replay simulated days through Kafka at ``--speed`` × real time, outcomes delayed;
5. print a live summary while verdicts come back;
6. stop the workers, write the report, say where it and the Grafana dashboard are.

Each step says what it does; a step that cannot run says why and what to do, and
optional pieces (the feedback worker) only cost a warning.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import typer

from engine.settings import REPO_ROOT, Settings

DASHBOARD = REPO_ROOT / "ops" / "grafana" / "dashboards" / "tollgate.json"


def say(message: str) -> None:
    typer.secho(f"▸ {message}", fg=typer.colors.CYAN)


def warn(message: str) -> None:
    typer.secho(f"! {message}", fg=typer.colors.YELLOW)


class Proc:
    """A worker subprocess with its log file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], log_dir: Path):
        from engine.interfaces.quickstart import TOLLGATE

        log_dir.mkdir(parents=True, exist_ok=True)
        self.name, self.log_path = name, log_dir / f"{name}.log"
        self._log = self.log_path.open("wb")
        self.proc = subprocess.Popen([TOLLGATE, *args], env=env, cwd=str(REPO_ROOT), stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, n: int = 15) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])

    def json_lines(self) -> list[dict]:
        out = []
        for raw in self.log_path.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
        return out

    def stop(self, timeout: float = 30.0) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def wait_worker_ready(worker: Proc, timeout: float = 180.0) -> int:
    """Wait for the engine worker's /readyz; returns its health port."""
    deadline = time.monotonic() + timeout
    port = None
    while time.monotonic() < deadline:
        if not worker.alive():
            raise typer.Exit(_fail(f"the engine worker exited ({worker.proc.returncode}):\n{worker.tail()}"))
        if port is None:
            port = next((int(x["health_port"]) for x in worker.json_lines() if "health_port" in x), None)
        if port is not None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return port
            except OSError:
                pass
        time.sleep(0.5)
    raise typer.Exit(_fail(f"the engine worker was not ready within {timeout:.0f} s:\n{worker.tail()}"))


def report_meta(version: str, *, days: int, speed: float, customers: int, seed: int, wall_s: float) -> dict:
    """The run as the report states it: the customers are the simulated world's (at
    least 1,000 — ``world_customers``), not the option as typed."""
    from engine.interfaces.quickstart import world_customers

    return {"model_version": version, "days": days, "speed": speed, "customers": world_customers(customers),
            "seed": seed, "wall_s": round(wall_s, 1)}


def fallback_model(settings: Settings, exc: Exception) -> str:
    """Training failed: the worker would serve the newest model directory, if there is one
    (``engine.model.locate.find_model_dir``) — say so; with none it could not start at all,
    so stop here with what to do instead of a worker failing later with model-not-found."""
    from engine.model.locate import ModelNotFound, find_model_dir

    try:
        found = find_model_dir(settings)
    except ModelNotFound:
        raise typer.Exit(_fail(
            f"could not train a model ({type(exc).__name__}: {exc}), and there is no model in "
            f"{settings.paths.models_dir} for the engine worker to serve.\n"
            "  Train one with `tollgate model bootstrap` (or `tollgate train` then `tollgate model promote`), "
            "then run the quickstart again.")) from exc
    warn(f"could not train a model ({type(exc).__name__}: {exc}); the engine worker will serve the newest "
         f"model directory instead: {found}")
    return found.name


def grafana_hint(port: int | None, metrics_port: int) -> list[str]:
    """Where the dashboard is, and honestly what it can show: the compose stack's Grafana
    charts the compose deployment (its own broker, Redis and workers, on ports that clash
    with the stack this run used), not this run's worker, which has stopped by now."""
    scrape = (f"rerun with --metrics-port {metrics_port or 9464}, and while it runs point a Prometheus at "
              f"127.0.0.1:{metrics_port or 9464} (a static scrape target for the worker's /metrics; the jobs in "
              "ops/prometheus/prometheus.yml show the metric names' source)")
    return [
        f"Grafana dashboard: {DASHBOARD} (import it into any Grafana with a Prometheus data source)",
        (f"  this run's engine worker served its metrics at http://127.0.0.1:{port}/metrics while it ran; "
         if port else "  ") + f"to chart a run like this one, {scrape}",
        "  `docker compose up` provisions the same dashboard at http://localhost:3000 for the compose deployment "
        "— its own Kafka, Redis and workers, not this run's (stop this stack first: `ops/stack down`; "
        "its ports clash)",
    ]


def _fail(message: str) -> int:
    typer.secho(f"✗ {message}", fg=typer.colors.RED, err=True)
    return 1


def register(app: typer.Typer) -> None:
    @app.command("quickstart")
    def quickstart(
        days: int = typer.Option(2, min=1, help="Simulated days to replay through Kafka."),
        speed: float = typer.Option(1440.0, min=1.0, help="Simulated seconds per real second (1440: a day a minute)."),
        customers: int = typer.Option(1000, min=10, help="Simulated customers (cards); the world has at least "
                                                           "1,000 (fewer leave too few frauds to learn from)."),
        history_days: int = typer.Option(14, min=2, help="Days of simulated history to train on, if no model serves."),
        outcome_delay_days: float = typer.Option(1.5, min=1.0, help="Mean delay of fraud outcomes (days)."),
        seed: int = typer.Option(42, help="Simulation seed."),
        stack: bool = typer.Option(True, "--stack/--no-stack", help="Run `ops/stack up` (off: use the running stack)."),
        feedback: bool = typer.Option(True, "--feedback/--no-feedback", help="Also run the feedback worker."),
        metrics_port: int = typer.Option(0, min=0, max=65535,
                                         help="The engine worker's /healthz, /readyz, /metrics port (0: any free "
                                              "one) — fix it to point a Prometheus at the run."),
    ) -> None:
        """Start the stack, train a model if needed, replay simulated days through Kafka with
        the engine and feedback workers, and print a live summary and a report."""
        import redis

        from engine.interfaces.quickstart import (
            LiveSummary,
            PacedProducer,
            QuickstartError,
            ensure_model,
            ensure_stack,
            summary_line,
            world_customers,
            write_report,
        )
        from engine.wire.redisconn import connect

        started = time.monotonic()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            if stack:
                say("starting Kafka (KRaft) and Redis with ops/stack up, creating topics …")
                env = ensure_stack(env)
            os.environ.update({k: v for k, v in env.items() if k.startswith("TOLLGATE_")})
            settings = Settings()
            client = connect(settings.redis.url, socket_timeout_s=5)
            client.ping()
        except (QuickstartError, redis.RedisError) as exc:
            raise typer.Exit(_fail(f"the stack is not available: {exc}\n"
                                   "  run `ops/stack up` (or set TOLLGATE_KAFKA_BOOTSTRAP / TOLLGATE_REDIS_URL)")) from exc
        say(f"stack: Kafka {settings.kafka.bootstrap}, Redis {settings.redis.url}")

        try:
            version = ensure_model(settings, client, history_days=history_days, customers=customers, seed=seed,
                                   say=say)
        except Exception as exc:  # noqa: BLE001 - said, then the fallback the worker itself would take
            version = fallback_model(settings, exc)

        run_dir = Path(settings.paths.state_dir) / "quickstart" / time.strftime("%Y%m%d-%H%M%S")
        say(f"starting the engine worker{' and the feedback worker' if feedback else ''} (logs in {run_dir})")
        worker = Proc("engine-worker", ["run", "--worker-id", "quickstart-engine-1", "--port", str(metrics_port)],
                      env, run_dir)
        procs = [worker]
        if feedback:
            procs.append(Proc("feedback-worker", ["feedback", "worker"], env, run_dir))
        summary = replay = None
        port = None
        try:
            port = wait_worker_ready(worker)
            say(f"engine worker ready: http://127.0.0.1:{port}/metrics")
            # The scored days continue the world the model was trained on (same seed and
            # cards), after its last days of history have warmed the engine's context.
            replay = PacedProducer(settings, days=days, customers=world_customers(customers), seed=seed, speed=speed,
                            start_date=None, outcome_delay_days=outcome_delay_days,
                            skip_days=history_days, warm_days=min(4, history_days))
            summary = LiveSummary(settings, replay.truth)  # reads from the end of tx.verdicts, as of now
            say(f"warming the context with the last {min(4, history_days)} days of history, then replaying "
                f"{days} new simulated day(s) of {world_customers(customers)} customers at {speed:g}× real time "
                f"(~{days * 86400 / speed:.0f} s); outcomes follow ~{outcome_delay_days:g} simulated days later")
            replay.start()
            last_print, last_progress, last_count = 0.0, time.monotonic(), -1
            while True:
                summary.poll(1.0)
                fig = summary.figures()
                now = time.monotonic()
                if fig["decided"] != last_count:
                    last_count, last_progress = fig["decided"], now
                if now - last_print >= 3.0:
                    sim = replay.sim_now_ms
                    day = f"sim {time.strftime('%Y-%m-%d %H:%M', time.gmtime(sim / 1000))} | " if sim else ""
                    typer.echo(day + summary_line(fig))
                    last_print = now
                for p in procs[1:]:
                    if not p.alive() and not getattr(p, "_warned", False):
                        p._warned = True  # type: ignore[attr-defined]
                        warn(f"the {p.name} stopped ({p.proc.returncode}); continuing without it:\n{p.tail(5)}")
                if not worker.alive():
                    raise typer.Exit(_fail(f"the engine worker stopped:\n{worker.tail()}"))
                if replay.done.is_set():
                    if replay.error is not None:
                        raise typer.Exit(_fail(f"replay failed: {replay.error}"))
                    if fig["decided"] >= fig["produced"] or now - last_progress > 60:
                        break
        except KeyboardInterrupt:
            warn("interrupted: stopping the replay and the workers, writing the report so far")
            if replay is not None:
                replay.stop.set()
        finally:
            for p in procs:
                p.stop()
        if summary is None:
            raise typer.Exit(1)
        if replay is not None:
            replay.join(5)
        summary.poll(1.0)
        figures = summary.figures()
        summary.close()
        report = write_report(
            Path(settings.paths.reports_dir) / f"quickstart-{time.strftime('%Y%m%d-%H%M%S')}", figures,
            [v.decision_latency_ms for v in summary.verdicts.values()],
            report_meta(version, days=days, speed=speed, customers=customers, seed=seed,
                        wall_s=time.monotonic() - started))
        typer.echo("")
        typer.secho("Summary", bold=True)
        typer.echo(summary_line(figures))
        say(f"report: {report / 'summary.md'} (figures in summary.json, latency histogram in latency.png)")
        say(f"worker logs: {run_dir}")
        for line in grafana_hint(port, metrics_port):
            say(line)
        say(f"done in {timedelta(seconds=int(time.monotonic() - started))}")
