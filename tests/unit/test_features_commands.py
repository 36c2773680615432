"""``tollgate features`` commands (schema printing, tokenizer training)."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from engine.interfaces.commands import features
from engine.stages.encode import FeatureSchema


def _app() -> typer.Typer:
    app = typer.Typer()
    features.register(app)
    app.command("noop")(lambda: None)  # typer needs two commands to keep the group name
    return app


def test_schema_command_prints_the_hash_and_layout():
    result = CliRunner().invoke(_app(), ["features", "schema"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema_hash"] == FeatureSchema.default().schema_hash()
    assert data["numeric_fields"][1] == "velocity_1h_count"


def test_train_tokenizer_command_writes_a_valid_asset(tmp_path):
    out = tmp_path / "tok.json"
    result = CliRunner().invoke(_app(), ["features", "train-tokenizer", "--out", str(out), "--vocab-size", "400"])
    assert result.exit_code == 0, result.output
    from engine.text.tokenizer import TextTokenizer

    assert TextTokenizer(out).vocab_size == 400
