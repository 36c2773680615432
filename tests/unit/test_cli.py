"""Every `tollgate` subcommand, at every depth, answers --help."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from engine.interfaces import cli


def _walk(command, path: tuple[str, ...] = ()):
    yield path, command
    # typer vendors its own click, so duck-type groups instead of isinstance(click.Group).
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _walk(sub, path + (name,))


def test_every_subcommand_has_help() -> None:
    cli._register_all()
    root = typer.main.get_command(cli.app)
    runner = CliRunner()
    seen = []
    for path, _command in _walk(root):
        result = runner.invoke(cli.app, [*path, "--help"])
        assert result.exit_code == 0, f"tollgate {' '.join(path)} --help failed: {result.output}"
        assert "Usage" in result.output
        seen.append(" ".join(path))
    # The commands the README and docker-compose rely on.
    for expected in ("topics create", "simulate", "run", "train", "backtest", "serve", "score",
                     "rules check", "rules test", "rules backtest", "feedback worker",
                     "feedback fine-tune", "feedback export", "model list", "model promote",
                     "model rollback", "model bootstrap", "quickstart"):
        assert expected in seen, f"missing command: tollgate {expected}"
