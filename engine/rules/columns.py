"""Rule conditions over a whole batch at once: NumPy expressions over columns.

``engine.rules.expr`` compiles a condition to closures that run once per event; a batch
of 512 events and 17 rules is then about 9,000 closure trees, the largest share of the
guard stage's CPU (``python ops/bench/engine_profile.py`` prints it per stage). Most rule
conditions are thresholds and equalities joined by ``&&`` and ``||``, and those read
the same whether the values are one event's or a column of them. This module compiles
that part of CEL to functions of a ``ColumnTable`` (one NumPy array per variable the
batch's rules read) that return one boolean per event.

Where the column form could differ from CEL, it does not guess: a condition that uses
anything else (arithmetic, functions, methods, ``?:``, map fields, indexing) has no
column form (``compile_columns`` returns None), and a column form that meets values whose
types are not all the same — a missing feature, an int among doubles, a bool where a
number was expected — raises ``NeedsRows`` at evaluation, so that rule is evaluated
row by row by its closures, with CEL's error handling. With values of one type per
column, nothing the column form evaluates can fail in CEL, so CEL's error absorption
in ``&&``/``||`` never comes into play and the two forms agree
(``tests/unit/test_rules_columns.py`` holds them, and cel-python, to it).

>>> table = ColumnTable([{"event": {"amount": 20.0, "country": "BE"}},
...                      {"event": {"amount": 9000.0, "country": "KP"}}])
>>> compile_columns("event.amount > 5000 && event.country in ['KP', 'IR']")(table).tolist()
[False, True]
>>> compile_columns("event.amount * 2 > 5000") is None  # arithmetic: row by row
True
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import lark
import numpy as np
from celpy.celparser import CELParseError, CELParser
from celpy.celtypes import IntType, UintType
from celpy.evaluation import celstr

from engine.rules.celtree import dotted_names, unwrap

#: Python ints beyond this lose precision as float64 (and NumPy's int64 ends soon after):
#: such a column is evaluated row by row.
_EXACT_INT = 2 ** 53

_ORDER = {"relation_lt": operator.lt, "relation_le": operator.le, "relation_gt": operator.gt,
          "relation_ge": operator.ge}

_PARSER: CELParser | None = None


class NeedsRows(Exception):
    """The batch's values are not what the column form handles; evaluate row by row."""


class Unsupported(Exception):
    """The condition uses syntax the column form does not cover (compile time)."""


class Column:
    """One variable's values over the batch, all of one type: ``kind`` is ``float``,
    ``int``, ``str`` or ``bool``."""

    __slots__ = ("kind", "values")

    def __init__(self, kind: type, values: np.ndarray):
        self.kind, self.values = kind, values


class ColumnTable:
    """The batch's rule inputs (one env per event, as ``engine.stages.guard`` builds them),
    turned into columns on first use, one per dotted name (``ctx.velocity_1h_count``)."""

    __slots__ = ("_columns", "envs")

    def __init__(self, envs: Sequence[Mapping[str, Any]]):
        self.envs = envs
        self._columns: dict[str, Column] = {}

    def __len__(self) -> int:
        return len(self.envs)

    def column(self, root: str, field: str) -> Column:
        name = f"{root}.{field}"
        found = self._columns.get(name)
        if found is None:
            found = self._columns[name] = self._build(root, field)
        return found

    def _build(self, root: str, field: str) -> Column:
        values_of = getattr(self.envs, "values_of", None)  # engine.stages.guard.BatchInputs
        try:
            values = values_of(root, field) if values_of is not None else [env[root][field] for env in self.envs]
        except (KeyError, TypeError):
            raise NeedsRows(f"{root}.{field} is missing for some event") from None
        kinds = {type(v) for v in values}
        if len(kinds) != 1:
            raise NeedsRows(f"{root}.{field} has values of several types")
        kind = kinds.pop()
        if kind is float:
            return Column(float, np.fromiter(values, dtype=np.float64, count=len(values)))
        if kind is int:
            if any(not -_EXACT_INT <= v <= _EXACT_INT for v in values):
                raise NeedsRows(f"{root}.{field} has integers beyond 2**53")
            return Column(int, np.fromiter(values, dtype=np.int64, count=len(values)))
        if kind is bool:
            return Column(bool, np.fromiter(values, dtype=bool, count=len(values)))
        if kind is str:
            return Column(str, np.array(values, dtype=object))
        raise NeedsRows(f"{root}.{field} holds {kind.__name__} values")


#: A compiled node: the table → a ``Column`` (a variable or a result) or a constant
#: (a Python value, which broadcasts).
Node = Callable[[ColumnTable], Any]


def compile_columns(source: str, lists: Mapping[str, Any] | None = None) -> Callable[[ColumnTable], np.ndarray] | None:
    """The column form of ``source`` (already accepted by ``engine.rules.expr``), or None
    when it uses syntax this module leaves to the per-row closures. The result maps a
    ``ColumnTable`` to one bool per event, or raises ``NeedsRows``."""
    global _PARSER
    if _PARSER is None:
        _PARSER = CELParser()
    try:
        node = _Compiler(lists or {}).node(_PARSER.parse(source))
    except (Unsupported, CELParseError, RecursionError):
        return None

    def evaluate(table: ColumnTable) -> np.ndarray:
        value = node(table)
        if isinstance(value, Column):
            if value.kind is not bool:
                raise NeedsRows("the condition is not a bool")
            return value.values
        if type(value) is bool:  # a constant condition
            return np.full(len(table), value, dtype=bool)
        raise NeedsRows("the condition is not a bool")
    return evaluate


def _kind(value: Any) -> type:
    return value.kind if isinstance(value, Column) else type(value)


def _data(value: Any) -> Any:
    return value.values if isinstance(value, Column) else value


def _boolean(value: Any) -> Any:
    if _kind(value) is not bool:
        raise NeedsRows("a logical operand is not a bool")
    return _data(value)


def _result(values: Any) -> Any:
    return Column(bool, values) if isinstance(values, np.ndarray) else bool(values)


class _Compiler:
    def __init__(self, lists: Mapping[str, Any]):
        self.lists = lists

    def node(self, tree: Any) -> Node:
        tree = unwrap(tree)
        if isinstance(tree, lark.Token):
            raise Unsupported(tree.value)
        kind, kids = tree.data, tree.children
        if kind in ("conditionalor", "conditionaland"):
            left, right = self.node(kids[0]), self.node(kids[1])
            op = np.logical_or if kind == "conditionalor" else np.logical_and
            return lambda t: _result(op(_boolean(left(t)), _boolean(right(t))))
        if kind == "unary" and kids[0].data == "unary_not":
            operand = self.node(kids[1])
            return lambda t: _result(np.logical_not(_boolean(operand(t))))
        if kind == "relation":
            return self.relation(kids[0], kids[1])
        if kind == "paren_expr":
            return self.node(kids[0])
        if kind == "literal":
            value = _literal(kids[0])
            return lambda t: value
        if kind in ("member_dot", "ident"):
            return self.path(tree)
        raise Unsupported(kind)

    def relation(self, op_tree: Any, right_tree: Any) -> Node:
        left, right, kind = self.node(op_tree.children[0]), None, op_tree.data
        if kind == "relation_in":
            return self.member(left, right_tree)
        right = self.node(right_tree)
        if kind in ("relation_eq", "relation_ne"):
            negate = kind == "relation_ne"

            def equal(t: ColumnTable) -> Any:
                a, b = left(t), right(t)
                # Same type: ``==`` (what CEL does); mixed types go through cel_eq row by row.
                if _kind(a) is not _kind(b) or _kind(a) not in (float, int, str, bool):
                    raise NeedsRows("== between values of different types")
                same = _data(a) == _data(b)
                return _result(np.logical_not(same) if negate else same)
            return equal
        cmp = _ORDER[kind]

        def order(t: ColumnTable) -> Any:
            a, b = left(t), right(t)
            ka, kb = _kind(a), _kind(b)
            if not ((ka in (float, int) and kb in (float, int)) or (ka is str and kb is str)):
                raise NeedsRows("an ordering between values that CEL does not order")
            return _result(cmp(_data(a), _data(b)))
        return order

    def member(self, left: Node, right_tree: Any) -> Node:
        right = unwrap(right_tree)
        if right.data == "list_lit":
            items = [unwrap(k) for k in right.children[0].children] if right.children and right.children[0] else []
            if not all(k.data == "literal" for k in items):
                raise Unsupported("a list of non-literals")
            values = [_literal(k.children[0]) for k in items]
            kinds = {type(v) for v in values}
            if len(kinds) > 1 or kinds - {str}:
                raise Unsupported("only lists of strings")
            allowed = frozenset(values)
            return lambda t: self._isin(left(t), allowed)
        parts = dotted_names(right)
        if parts is not None and len(parts) == 2 and parts[0] == "lists" and parts[1] in self.lists:
            holder = self.lists[parts[1]]
            return lambda t: self._isin(left(t), holder.values)  # read now: a refreshed list is seen at once
        raise Unsupported("'in' other than a list literal or a named list")

    @staticmethod
    def _isin(item: Any, allowed: Any) -> Any:
        # A string is in a set or a list of strings exactly when Python's ``in`` says so
        # (what ``celops.contains`` does for a string); anything else goes row by row.
        if _kind(item) is not str:
            raise NeedsRows("'in' of something other than a string")
        if isinstance(item, Column):
            return Column(bool, np.fromiter((v in allowed for v in item.values), dtype=bool, count=len(item.values)))
        return item in allowed

    def path(self, tree: Any) -> Node:
        parts = dotted_names(tree)
        if parts is None or len(parts) != 2 or parts[0] not in ("event", "ctx", "model", "detector"):
            raise Unsupported("only root.field names")
        root, field = parts
        return lambda t: t.column(root, field)


def _literal(token: lark.Token) -> Any:
    kind, text = token.type, token.value
    if kind == "FLOAT_LIT":
        return float(text)
    if kind == "INT_LIT":
        return int(IntType(text))
    if kind == "UINT_LIT":
        return int(UintType(text[:-1]))
    if kind in ("STRING_LIT", "MLSTRING_LIT"):
        return str(celstr(token))
    if kind == "BOOL_LIT":
        return text == "true"
    raise Unsupported(kind)
