"""Tollgate's engine: the hot path from a Kafka event to a verdict.

The stages, in data-path order, each in its own module: ``consume``, ``decode``,
``enrich``, ``encode``, ``batch``, ``infer``, ``detect``, ``decide``, ``guard``,
``emit``; ``worker`` drives them. ``pipeline`` chains enrich → … → guard for every
entry point (stream, Python API, HTTP, batch CLI) so they all give the same verdict.

``from engine import load_model`` is the notebook entry point (see ``engine.api``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["load_model"]


def load_model(*args: Any, **kwargs: Any):  # noqa: ANN201 - re-exported lazily
    """Load a decision model plus policy and rules; see ``engine.api.load_model``."""
    from engine.api import load_model as _load_model

    return _load_model(*args, **kwargs)
