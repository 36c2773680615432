"""``tollgate simulate``: a seeded card-payment stream into files or Kafka."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import typer

from engine.settings import get_settings


def register(app: typer.Typer) -> None:
    @app.command("simulate")
    def simulate(
        days: int = typer.Option(1, min=1, help="Days to simulate."),
        customers: int = typer.Option(5_000, min=1, help="Number of customers (cards)."),
        terminals: int = typer.Option(10_000, min=3, help="Number of terminals (merchants, payees)."),
        seed: int = typer.Option(0, help="Random seed: the same seed gives the same stream."),
        start_date: datetime = typer.Option("2018-04-01", formats=["%Y-%m-%d"], help="First simulated day (UTC)."),
        out: Path | None = typer.Option(None, help="Write events to FILE.parquet or FILE.jsonl "
                                                   "(outcomes to FILE.outcomes.parquet / .jsonl)."),
        kafka: bool = typer.Option(False, "--kafka", help="Produce to Kafka (events → tx.events, "
                                                          "outcomes → tx.outcomes)."),
        events_topic: str | None = typer.Option(None, help="Events topic (default from settings)."),
        outcomes_topic: str | None = typer.Option(None, help="Outcomes topic (default from settings)."),
        json_events: bool = typer.Option(False, "--json", help="Publish events as JSON "
                                                               "(header content-type: application/json)."),
        outcomes: bool = typer.Option(True, help="Also write the delayed outcomes."),
        outcome_delay_days: float = typer.Option(7.0, min=1.0, help="Mean delay of fraud outcomes, in days."),
        outcome_delay_min_days: float = typer.Option(1.0, min=0.01, help="Shortest delay of a fraud outcome, in days."),
        confirm_rate: float = typer.Option(0.01, min=0.0, max=1.0, help="Share of good payments a customer confirms "
                                           "(confirmed_legitimate outcomes); the default leaves ~80 % of labels bad."),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    ) -> None:
        """Simulate card payments (handbook model + channels, devices, memos) with delayed outcomes."""
        from confluent_kafka import KafkaException
        from tqdm import tqdm

        from engine.offline.simulate.simulator import SimConfig, Simulator
        from engine.offline.simulate.sinks import KafkaSink, file_sink

        if (out is None) == (not kafka):
            typer.echo("error: give exactly one of --out FILE.{parquet,jsonl} or --kafka", err=True)
            raise typer.Exit(2)
        config = SimConfig(customers=customers, terminals=terminals, days=days, seed=seed,
                           start_date=start_date.date(), outcome_delay_mean_days=outcome_delay_days,
                           outcome_delay_min_days=min(outcome_delay_min_days, outcome_delay_days),
                           legit_confirm_rate=confirm_rate, drain_outcomes=outcomes)
        settings = get_settings()
        try:
            sink = (KafkaSink(settings, events_topic, outcomes_topic, json_events=json_events,
                              with_outcomes=outcomes) if kafka else file_sink(out, outcomes))
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        n_events = n_fraud = n_outcomes = n_injections = 0
        simulator = Simulator(config)
        bar = tqdm(total=days + int(outcomes), unit="day", disable=quiet, desc="simulate")
        try:
            for day in simulator.days():
                sink.write(day)
                n_events += len(day.events)
                n_fraud += int(day.events["tx_fraud"].sum()) if len(day.events) else 0
                n_injections += int(day.events["memo_injection"].notna().sum()) if len(day.events) else 0
                n_outcomes += len(day.outcomes) if outcomes else 0
                bar.update(1)
                bar.set_postfix(events=n_events, fraud=n_fraud, outcomes=n_outcomes)
            sink.close()
        except (RuntimeError, KafkaException) as exc:  # delivery failures, broker gone
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        finally:
            bar.close()
        where = (f"{events_topic or settings.topics.events} / {outcomes_topic or settings.topics.outcomes} "
                 f"on {settings.kafka.bootstrap}") if kafka else f"{sink.path}" + (
                     f" / {sink.outcomes_path}" if sink.outcomes_path else "")
        rate = 100.0 * n_fraud / max(n_events, 1)
        typer.echo(f"{n_events} events ({n_fraud} fraud, {rate:.2f} %; {n_injections} memo injections), "
                   f"{n_outcomes} outcomes → {where}")
