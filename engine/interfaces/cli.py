"""The ``tollgate`` command line.

Each area owns its commands in ``engine/interfaces/commands/<area>.py`` and exposes
``register(app)``; this module only assembles them, so no single file grows into a god
object. Packages outside the engine (``feedback``) add theirs through the
``tollgate.commands`` entry-point group (pyproject.toml), so the engine never imports them.
"""

from __future__ import annotations

import importlib
import tomllib
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

import typer

app = typer.Typer(
    name="tollgate",
    help="Tollgate: streaming risk-control decisions (pass / review / reject) on Kafka.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

#: Modules that contribute commands, in the order their help is listed.
COMMAND_MODULES: tuple[str, ...] = (
    "engine.interfaces.commands.stack",      # topics create|list
    "engine.interfaces.commands.simulate",   # simulate
    "engine.interfaces.commands.features",   # features train-tokenizer|schema|log
    "engine.interfaces.commands.model",      # train, backtest, model list|promote|rollback
    "engine.interfaces.commands.run",        # run (the engine worker)
    "engine.interfaces.commands.rules",      # rules check|test|backtest
    "engine.interfaces.commands.detector",   # detector train|eval
    "engine.interfaces.commands.serve",      # serve, score
    "engine.interfaces.commands.quickstart", # quickstart
)

#: Entry-point group through which other installed packages add commands
#: (``feedback``: feedback worker|fine-tune|export, model list|promote|rollback|audit|bootstrap).
PLUGIN_GROUP = "tollgate.commands"


_registered = False


def _register_all() -> None:
    """Import every command module once and let it add its commands (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)
    for ep in sorted(_plugins(), key=lambda e: e.name):
        ep.load().register(app)


def _plugins() -> list[EntryPoint]:
    """The installed ``tollgate.commands`` entry points.

    Fallback: an environment installed before the group existed (its dist-info lacks it,
    e.g. a venv installed from an older checkout and run with PYTHONPATH on this one)
    reads the group from this checkout's pyproject.toml, so ``tollgate feedback`` is not
    silently missing; a fresh install (CI, ``ops/setup``) never needs it.
    """
    installed = list(entry_points(group=PLUGIN_GROUP))
    if installed:
        return installed
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if not pyproject.is_file():  # an installed wheel: no checkout beside it
        return []
    declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    group = declared.get("project", {}).get("entry-points", {}).get(PLUGIN_GROUP, {})
    return [EntryPoint(name=name, value=value, group=PLUGIN_GROUP) for name, value in group.items()]


def main() -> None:
    _register_all()
    app()
