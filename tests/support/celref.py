"""cel-python's own interpreter over the same inputs: the reference our compiler is held to.

``engine.rules.expr`` compiles conditions to closures for speed; this module runs the
*same* source through cel-python's ``InterpretedRunner`` so tests can check, on many
random inputs, that both agree, and the benchmark can show what compiling buys.
Not used on the hot path (hundreds of µs per condition: ``python ops/bench/rules.py``).

>>> reference_evaluate("event.amount > 5000 && event.country in lists.high_risk",
...                    {"event": {"amount": 9000.0, "country": "KP"}}, {"high_risk": {"KP"}})
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel

_ENV = celpy.Environment()  # created once: it raises the interpreter's recursion limit


@lru_cache(maxsize=256)
def _program(source: str) -> Any:
    return _ENV.program(_ENV.compile(source))


def to_activation(env: Mapping[str, Any], lists: Mapping[str, Iterable[str]] | None = None) -> dict[str, Any]:
    activation = {name: json_to_cel(dict(value)) for name, value in env.items()}
    activation["lists"] = celtypes.MapType({
        celtypes.StringType(name): celtypes.MapType({celtypes.StringType(v): celtypes.BoolType(True) for v in values})
        for name, values in (lists or {}).items()
    })
    return activation


def reference_evaluate(source: str, env: Mapping[str, Any],
                       lists: Mapping[str, Iterable[str]] | None = None) -> Any:
    """The condition's value per cel-python (a bool), or the ``CELEvalError`` it produced."""
    try:
        value = _program(source).evaluate(to_activation(env, lists))
    except celpy.CELEvalError as exc:
        return exc
    return bool(value) if isinstance(value, celtypes.BoolType) else value
