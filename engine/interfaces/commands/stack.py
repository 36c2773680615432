"""``tollgate topics create|list``: the topics the engine reads and writes."""

from __future__ import annotations

import typer

from engine.settings import get_settings


def register(app: typer.Typer) -> None:
    topics = typer.Typer(help="Create, list or count Tollgate's Kafka topics (names and partitions from settings).",
                         no_args_is_help=True)

    @topics.command("create")
    def create(timeout: float = typer.Option(30.0, help="Seconds to wait for the broker.")) -> None:
        """Create tx.events, tx.verdicts, tx.outcomes and tx.events.dlq; existing ones are kept."""
        from confluent_kafka import KafkaException

        from engine.wire.topics import ensure_topics

        settings = get_settings()
        try:
            statuses = ensure_topics(settings, timeout_s=timeout, quiet=True)
        except KafkaException as exc:
            typer.echo(f"error: could not create topics on {settings.kafka.bootstrap}: {exc}", err=True)
            raise typer.Exit(1) from exc
        for s in statuses:
            note = "" if s.partitions_match else f"  (settings ask for {s.wanted_partitions})"
            typer.echo(f"{s.state:8} {s.name}  partitions={s.partitions}{note}")

    @topics.command("list")
    def list_(
        timeout: float = typer.Option(10.0, help="Seconds to wait for the broker."),
        all_topics: bool = typer.Option(False, "--all", help="Also list topics that are not Tollgate's."),
    ) -> None:
        """List topics and their partition counts; Tollgate's missing ones are marked."""
        from confluent_kafka import KafkaException

        from engine.wire.topics import admin_client, existing_partitions, topic_specs

        settings = get_settings()
        try:
            found = existing_partitions(admin_client(settings, quiet=True), timeout)
        except KafkaException as exc:
            typer.echo(f"error: broker {settings.kafka.bootstrap} did not answer: {exc}", err=True)
            raise typer.Exit(1) from exc
        ours = {s.name for s in topic_specs(settings)}
        for spec in topic_specs(settings):
            count = found.get(spec.name)
            typer.echo(f"{spec.name}  partitions={count}" if count is not None else f"{spec.name}  MISSING")
        if all_topics:
            for name in sorted(set(found) - ours):
                typer.echo(f"{name}  partitions={found[name]}")

    @topics.command("count")
    def count(
        names: list[str] | None = typer.Argument(None, help="Topics to count (default: Tollgate's four)."),
        decode: bool = typer.Option(False, "--decode", help="Also decode every message with the codec of "
                                                            "the topic (by name from settings) and count failures."),
        timeout: float = typer.Option(60.0, help="Seconds to reach the end of each topic."),
    ) -> None:
        """Read topics from the beginning and print how many committed messages they hold."""
        from confluent_kafka import KafkaException

        from engine.records import SourcePosition
        from engine.wire.codec import Codec
        from engine.wire.topics import count_messages

        settings = get_settings()
        t = settings.topics
        codec = Codec(settings) if decode else None
        decoders = {}
        if codec is not None:
            decoders = {
                t.events: lambda m: codec.decode_event(m.value(), m.headers(),
                                                       SourcePosition(m.topic(), m.partition(), m.offset()), m.key()),
                t.verdicts: lambda m: codec.decode_verdict(m.value(), m.headers()),
                t.outcomes: lambda m: codec.decode_outcome(m.value(), m.headers()),
                t.dead_letters: lambda m: codec.decode_dead_letter(m.value()),
            }
        failed = False
        for name in names or [t.events, t.verdicts, t.outcomes, t.dead_letters]:
            try:
                result = count_messages(settings, name, decoders.get(name), timeout, quiet=True)
            except (LookupError, TimeoutError, KafkaException) as exc:
                typer.echo(f"{name}  error: {exc}", err=True)
                failed = True
                continue
            parts = " ".join(f"{p}:{n}" for p, n in result.per_partition.items())
            bad = "" if result.undecodable is None else f"  undecodable={result.undecodable}"
            typer.echo(f"{name}  messages={result.messages}{bad}  partitions [{parts}]")
        if failed:
            raise typer.Exit(1)

    app.add_typer(topics, name="topics")
