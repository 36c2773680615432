"""``tollgate features``: the text tokenizer asset, the feature list, the decision log.

Register with ``engine.interfaces.cli.COMMAND_MODULES`` (entry ``"engine.interfaces.commands.features"``).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Event-time features, the encoder's schema and the text tokenizer.",
                        no_args_is_help=True)
    app.add_typer(group, name="features")

    @group.command("train-tokenizer")
    def train_tokenizer(
        out: Path = typer.Option(None, help="Where to write the tokenizer JSON "
                                            "(default: engine/assets/text_tokenizer.json)."),
        vocab_size: int = typer.Option(3000, min=300, help="Byte-level BPE vocabulary size."),
        seed: int = typer.Option(7, help="Seed of the synthetic memo corpus."),
    ) -> None:
        """Retrain the untrusted-text BPE offline (deterministic). Changing it changes the
        feature-schema hash, so models trained on the old one are refused."""
        from engine.offline.text_tokenizer_build import ASSET, train_text_tokenizer

        path = train_text_tokenizer(out or ASSET, vocab_size, seed)
        typer.echo(f"wrote {path}")

    @group.command("schema")
    def schema() -> None:
        """Print the feature schema (tensor layout, feature names, hash) as JSON."""
        from engine.stages.encode import FeatureSchema

        s = FeatureSchema.default()
        typer.echo(json.dumps({"schema_hash": s.schema_hash(), **s.to_dict()}, indent=2, default=list))

    @group.command("log")
    def decision_log(event_ids: list[str] = typer.Argument(..., help="Event ids to look up.")) -> None:
        """Print the context snapshot each event got (the Redis decision log), one JSON per line."""
        from engine.features.redis_store import RedisFeatureStore

        for event_id, snap in zip(event_ids, RedisFeatureStore().decision_log(event_ids)):
            typer.echo(json.dumps(snap.to_dict() if snap else {"event_id": event_id, "found": False}))
