"""Tollgate's engine: the hot path from a Kafka event to a verdict.

The stages, in data-path order, each in its own module of ``stages/``: ``consume``,
``decode``, ``enrich``, ``encode``, ``batch``, ``infer``, ``detect``, ``decide``,
``guard``, ``emit`` (their Protocols: ``stages/contracts.py``); ``worker/`` drives them
(``worker/main.py`` builds everything). ``pipeline`` chains enrich → … → guard for every
entry point (stream, Python API, HTTP, batch file scoring) so they all give the same
verdict; ``text_twins`` keeps user text from lowering one. ``wire/``, ``features/``,
``model/``, ``rules/``, ``detector/``, ``text/`` and ``observe/`` are what the stages are
made of; ``interfaces/`` are the ways in; ``offline/`` never runs in a worker.
See docs/architecture.md.

``from engine import load_model`` is the notebook entry point (see ``engine.interfaces.api``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_model"]


def load_model(*args: Any, **kwargs: Any):  # noqa: ANN201 - re-exported lazily
    """Load a decision model plus policy and rules; see ``engine.interfaces.api.load_model``."""
    # local: `import engine` must not load the whole Python API (torch, rules, features)
    from engine.interfaces.api import load_model as _load_model

    return _load_model(*args, **kwargs)
