"""The ``tollgate`` command line.

Each area owns its commands in ``engine/commands/<area>.py`` (or ``feedback/commands.py``)
and exposes ``register(app)``; this module only assembles them, so no single file
grows into a god object.
"""

from __future__ import annotations

import importlib

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
    "engine.commands.stack",      # topics create|list
    "engine.commands.simulate",   # simulate
    "engine.commands.features",   # features train-tokenizer|schema|log
    "engine.commands.model",      # train, backtest, model list|promote|rollback
    "engine.commands.run",        # run (the engine worker)
    "engine.commands.rules",      # rules check|test|backtest
    "engine.commands.detector",   # detector train|eval
    "engine.commands.serve",      # serve, score
    "engine.commands.quickstart", # quickstart
    "feedback.commands",          # feedback worker|fine-tune|export
)


_registered = False


def _register_all() -> None:
    """Import every command module once and let it add its commands (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(app)


def main() -> None:
    _register_all()
    app()
