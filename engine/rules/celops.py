"""Run-time operations of compiled rule conditions, with CEL's typing rules.

Kept apart from the compiler (``expr``) so each reads on its own. Every operation
checks its operand types and raises ``EvalError`` rather than letting Python's own
coercions leak in (``True + 1`` is 2 in Python, an error in CEL). Numbers compare
numerically across int and double (``event.amount > 5000`` works on a float
amount), which is friendlier for ops than strict CEL and is documented in
``rules/README.md``.

>>> cel_eq(1, 1.0), cel_eq(1, True), contains("d1", frozenset({"d1"}))
(True, False, True)
>>> arith("/", -7, 2), arith("%", -7, 2)
(-3, -1)
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from typing import Any


class EvalError(Exception):
    """A condition that failed at evaluation time (missing key, wrong type, ÷0)."""


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, (set, frozenset)):
        return "named list"
    if isinstance(value, Mapping):
        return "map"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def cel_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_number(a) and is_number(b):
        return a == b
    if type(a) is not type(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return False
    return a == b


def ordered(op: str, a: Any, b: Any) -> bool:
    if not ((is_number(a) and is_number(b)) or (isinstance(a, str) and isinstance(b, str))):
        raise EvalError(f"cannot compare {kind_of(a)} {op} {kind_of(b)}")
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def compare_fn(op: str, left: Callable[[Any], Any], right: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """``left(env) op right(env)``, compiled. Two plain numbers (a bool is not one) compare
    at once — most rule conditions are thresholds, and this runs for every event; anything
    else takes ``ordered``, which compares strings or raises the same ``EvalError``.

    >>> f = compare_fn(">", lambda env: env["x"], lambda env: 2)
    >>> f({"x": 3}), f({"x": 2.0})
    (True, False)
    """
    cmp = _COMPARE[op]

    def compare(env: Any) -> bool:
        a, b = left(env), right(env)
        ta, tb = type(a), type(b)
        if (ta is float or ta is int) and (tb is float or tb is int):
            return cmp(a, b)
        return ordered(op, a, b)
    return compare


def equal_fn(left: Callable[[Any], Any], right: Callable[[Any], Any], negate: bool) -> Callable[[Any], bool]:
    """``left(env) == right(env)`` (``!=`` with ``negate``), compiled: values of one type
    compare with ``==``, which is what ``cel_eq`` does for them; mixed types go through it.

    >>> equal_fn(lambda env: 1, lambda env: 1.0, False)({}), equal_fn(lambda env: 1, lambda env: True, True)({})
    (True, True)
    """
    def equal(env: Any) -> bool:
        a, b = left(env), right(env)
        same = a == b if type(a) is type(b) else cel_eq(a, b)
        return not same if negate else same
    return equal


def contains(item: Any, container: Any) -> bool:
    if isinstance(container, (set, frozenset)):
        return isinstance(item, (str, int, float)) and item in container
    if isinstance(container, (list, tuple)):
        return any(cel_eq(item, x) for x in container)
    if isinstance(container, Mapping):
        return item in container
    raise EvalError(f"'in' needs a list or map on the right, got {kind_of(container)}")


def arith(op: str, a: Any, b: Any) -> Any:
    if is_number(a) and is_number(b):
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            if b == 0:
                raise EvalError("division by zero")
            if isinstance(a, int) and isinstance(b, int):  # CEL truncates toward zero, like C
                q = abs(a) // abs(b)
                return q if (a >= 0) == (b >= 0) else -q
            return a / b
        if b == 0:
            raise EvalError("modulus by zero")
        if isinstance(a, int) and isinstance(b, int):  # the remainder takes the dividend's sign
            r = abs(a) % abs(b)
            return r if a >= 0 else -r
        return math.fmod(a, b)
    if op == "+" and isinstance(a, str) and isinstance(b, str):
        return a + b
    if op == "+" and isinstance(a, list) and isinstance(b, list):
        return a + b
    raise EvalError(f"cannot apply {op} to {kind_of(a)} and {kind_of(b)}")


def as_bool(value: Any, what: str) -> bool:
    if value is True or value is False:
        return value
    raise EvalError(f"{what} needs true/false, got {kind_of(value)}")


def size(value: Any) -> int:
    if isinstance(value, (str, list, tuple, set, frozenset, Mapping)):
        return len(value)
    raise EvalError(f"size() of {kind_of(value)}")


def to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise EvalError("int() of bool")
    if isinstance(value, str):
        return int(value.strip())
    if is_number(value):
        return int(value)
    raise EvalError(f"int() of {kind_of(value)}")


def to_double(value: Any) -> float:
    if isinstance(value, bool) or not (is_number(value) or isinstance(value, str)):
        raise EvalError(f"double() of {kind_of(value)}")
    return float(value)


def to_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise EvalError(f"string() of {kind_of(value)}")


def str_method(name: str) -> Callable[[Any, Any], bool]:
    def method(target: Any, arg: Any) -> bool:
        if not (isinstance(target, str) and isinstance(arg, str)):
            raise EvalError(f"{name}() needs strings, got {kind_of(target)} and {kind_of(arg)}")
        if name == "startsWith":
            return target.startswith(arg)
        if name == "endsWith":
            return target.endswith(arg)
        return arg in target
    return method


FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "size": size, "int": to_int, "double": to_double, "string": to_string,
}
STRING_METHODS = ("startsWith", "endsWith", "contains")
REFUSED_FUNCTIONS = {
    "matches": "regular expressions are not allowed in rules (their run time is unbounded); "
               "use startsWith/endsWith/contains or a named list",
    "exists": "comprehension macros (exists/all/map/filter) are not allowed in rules; use a named list",
    "all": "comprehension macros (exists/all/map/filter) are not allowed in rules; use a named list",
    "exists_one": "comprehension macros are not allowed in rules; use a named list",
    "map": "comprehension macros are not allowed in rules",
    "filter": "comprehension macros are not allowed in rules",
}
RELATIONS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">="}


def field_of(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        try:
            return value[name]
        except KeyError:
            raise EvalError(f"no field {name!r}") from None
    raise EvalError(f"{kind_of(value)} has no fields (.{name})")
