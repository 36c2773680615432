"""Rule conditions: CEL parsed by cel-python, checked, then compiled to closures.

Why not evaluate with cel-python directly? Its tree-walking interpreter costs hundreds
of µs per expression — one rule would blow the whole 0.2 ms budget
(``python ops/bench/rules.py`` times both; figures in docs/performance.md).
So cel-python does what it is best at (the grammar: parsing and syntax errors, and the
reference semantics our tests compare against), and this module turns the parse tree
once per load into a tree of small Python closures. Nothing is ever passed to
``eval``/``exec``, and the closures only ever do ``dict[key]`` lookups: no Python
attribute access exists in the compiled form, so ``__class__`` & co. reach nothing.

Evaluation time is bounded by construction: the expression size and nesting are
capped at compile time, and the subset has no loops (no comprehension macros) and no
regular expressions (``matches`` could backtrack for ever), so one evaluation is
linear in the (capped) expression size. The guard still measures every evaluation.

Variables (see ``engine.stages.guard`` for how they are filled):
``event.*`` trusted event fields, ``ctx.*`` context features, ``model.*`` the model's
and the policy's outputs, ``detector.*`` the untrusted-text detector, ``lists.NAME``
named lists (``event.device_id in lists.blocked_devices``).

>>> c = compile_condition("event.amount > 5000 && event.country in ['KP', 'IR']")
>>> c.evaluate({"event": {"amount": 9000.0, "country": "KP"}})
True
>>> compile_condition("event.memo.contains('x')")
Traceback (most recent call last):
...
engine.rules.expr.ExpressionError: event.memo is user-written text and is not available to rules (field isolation); use detector.score or detector.flagged
"""  # noqa: E501 (a doctest line is the exception message as printed)

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import lark
from celpy.celparser import CELParseError, CELParser
from celpy.celtypes import IntType, UintType
from celpy.evaluation import celstr

from engine.rules.cel_cache import install_cached_cel_parser
from engine.rules.celops import (
    FUNCTIONS,
    REFUSED_FUNCTIONS,
    RELATIONS,
    STRING_METHODS,
    EvalError,
    arith,
    as_bool,
    compare_fn,
    contains,
    equal_fn,
    field_of,
    is_number,
    kind_of,
    size,
    str_method,
)
from engine.rules.celtree import dotted_names, unwrap
from engine.rules.columns import compile_columns
from engine.rules.typecheck import TypeMismatch, check_types

#: Compile-time bounds (the "bounded evaluation time" of the issue).
MAX_EXPR_CHARS = 2000
MAX_NESTING = 16  # brackets: ( [ {
MAX_AST_NODES = 600

#: Trusted event fields a rule may read (``engine.stages.guard.event_inputs`` fills them).
#: ``memo`` and ``merchant_descriptor`` are written by end users and deliberately
#: absent, and so is whether they are present (field isolation: inserting text
#: changes no rule input).
EVENT_FIELDS = frozenset({
    "event_id", "event_time_ms", "customer_id", "account_id", "terminal_id", "merchant_category",
    "amount", "currency", "channel", "country", "device_id", "ip", "attributes", "hour", "weekday",
})
UNTRUSTED_EVENT_FIELDS = frozenset({"memo", "merchant_descriptor"})
MODEL_FIELDS = frozenset({
    "verdict", "model_verdict", "confidence", "p_pass", "p_review", "p_reject", "risk", "degraded",
})
DETECTOR_FIELDS = frozenset({"score", "flagged"})
ROOTS = ("event", "ctx", "model", "detector", "lists")

Env = Mapping[str, Any]
Fn = Callable[[Env], Any]

_PARSER: CELParser | None = None


class ExpressionError(ValueError):
    """A condition that does not compile. ``line``/``column`` are inside the expression."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line, self.column = line, column


@dataclass(slots=True, frozen=True)
class Condition:
    """A compiled condition: call ``evaluate(env)`` → bool (raises ``EvalError``)."""

    source: str
    fn: Fn
    names: frozenset[str]  # dotted variables read, e.g. "ctx.device_is_new"
    list_names: frozenset[str]
    #: The same condition over a batch's columns (``engine.rules.columns``); None when it
    #: uses syntax only the closures cover.
    columns: Callable[[Any], Any] | None = field(default=None, compare=False)

    def evaluate(self, env: Env) -> bool:
        try:
            value = self.fn(env)
        except EvalError:
            raise
        except (KeyError, TypeError, ValueError, ZeroDivisionError, OverflowError, IndexError) as exc:
            raise EvalError(f"{type(exc).__name__}: {exc}") from None
        if value is not True and value is not False:
            raise EvalError(f"condition must be true or false, got {kind_of(value)}")
        return value


def _parser() -> CELParser:
    global _PARSER
    if _PARSER is None:
        install_cached_cel_parser()  # builds the grammar's tables once per user, not per start
        _PARSER = CELParser()
    return _PARSER


def compile_condition(source: str, *, lists: Mapping[str, Any] | None = None,
                      ctx_names: frozenset[str] | None = None) -> Condition:
    """Parse, check and compile ``source``.

    ``lists`` maps list names to objects with a ``values`` attribute (a set, read at
    evaluation time so a refreshed Redis list is seen at once); unknown names are
    compile errors. ``ctx_names``, when given, is the complete set of context features.
    """
    if not isinstance(source, str) or not source.strip():
        raise ExpressionError("empty condition")
    if len(source) > MAX_EXPR_CHARS:
        raise ExpressionError(f"condition is {len(source)} characters; the limit is {MAX_EXPR_CHARS}")
    _check_nesting(source)
    try:
        tree = _parser().parse(source)
    except CELParseError as exc:
        raise ExpressionError(_syntax_message(source, exc.line, exc.column), exc.line, exc.column) from None
    except RecursionError:
        raise ExpressionError("condition is nested too deeply") from None
    count = sum(1 for _ in tree.iter_subtrees())
    if count > MAX_AST_NODES:
        raise ExpressionError(f"condition is too large ({count} syntax nodes; the limit is {MAX_AST_NODES})")
    compiler = _Compiler(lists or {}, ctx_names)
    fn = compiler.node(tree)
    try:  # after compiling, so an unknown name is reported as such first
        check_types(tree, source)
    except TypeMismatch as exc:
        raise ExpressionError(str(exc), exc.line, exc.column) from None
    return Condition(source, fn, frozenset(compiler.names), frozenset(compiler.list_names),
                     compile_columns(source, lists))


def _syntax_message(source: str, line: int | None, column: int | None) -> str:
    lines = source.splitlines() or [""]
    if line is None or column is None or line > len(lines):
        return "CEL syntax error"
    rest = lines[line - 1][column - 1:].strip()
    near = f"near {rest[:24]!r}" if rest else "unexpected end of condition"
    return f"CEL syntax error at line {line}, column {column}: {near}"


def _check_nesting(source: str) -> None:
    """Bracket depth outside string literals, checked before the (recursive) parser runs."""
    depth = 0
    quote: str | None = None
    escaped = False
    for ch in source:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
            if depth > MAX_NESTING:
                raise ExpressionError(f"condition nests brackets more than {MAX_NESTING} deep")
        elif ch in ")]}":
            depth -= 1


class _Compiler:
    """Parse tree → closure. Each method returns ``fn(env) -> value``."""

    def __init__(self, lists: Mapping[str, Any], ctx_names: frozenset[str] | None):
        self.lists = lists
        self.ctx_names = ctx_names
        self.names: set[str] = set()
        self.list_names: set[str] = set()

    def error(self, tree: Any, message: str) -> ExpressionError:
        meta = getattr(tree, "meta", None)
        return ExpressionError(message, getattr(meta, "line", None), getattr(meta, "column", None))

    def node(self, tree: Any) -> Fn:
        if isinstance(tree, lark.Token):
            raise self.error(tree, f"unexpected token {tree.value!r}")
        kids = tree.children
        kind = tree.data
        # Pass-through levels of the grammar (one child, no operator).
        if kind in ("expr", "conditionalor", "conditionaland", "relation", "addition",
                    "multiplication", "unary", "member", "primary") and len(kids) == 1:
            return self.node(kids[0])
        if kind == "expr":
            cond, yes, no = (self.node(k) for k in kids)
            return lambda env: yes(env) if as_bool(cond(env), "?:") else no(env)
        if kind == "conditionalor":
            return self.logical(kids, is_and=False)
        if kind == "conditionaland":
            return self.logical(kids, is_and=True)
        if kind == "relation":
            return self.relation(kids[0], kids[1])
        if kind in ("addition", "multiplication"):
            op_tree, right_tree = kids
            left = self.node(op_tree.children[0])
            right = self.node(right_tree)
            op = {"addition_add": "+", "addition_sub": "-", "multiplication_mul": "*",
                  "multiplication_div": "/", "multiplication_mod": "%"}[op_tree.data]
            return lambda env: arith(op, left(env), right(env))
        if kind == "unary":
            op, operand_tree = kids
            operand = self.node(operand_tree)
            if op.data == "unary_not":
                return lambda env: not as_bool(operand(env), "!")

            def negate(env: Env) -> Any:
                value = operand(env)
                if not is_number(value):
                    raise EvalError(f"cannot negate {kind_of(value)}")
                return -value
            return negate
        if kind == "paren_expr":
            return self.node(kids[0])
        if kind == "literal":
            return self.literal(kids[0])
        if kind == "list_lit":
            items = [self.node(k) for k in kids[0].children] if kids and kids[0] is not None else []
            return lambda env: [f(env) for f in items]
        if kind in ("member_dot", "ident"):
            return self.path(tree)
        if kind == "member_index":
            target, key = self.node(kids[0]), self.node(kids[1])

            def index(env: Env) -> Any:
                container, k = target(env), key(env)
                if isinstance(container, Mapping):
                    return container[k]
                if isinstance(container, list) and is_number(k) and float(k).is_integer():
                    return container[int(k)]
                raise EvalError(f"cannot index {kind_of(container)} with {kind_of(k)}")
            return index
        if kind == "ident_arg":
            return self.function(tree)
        if kind == "member_dot_arg":
            return self.method(tree)
        if kind == "map_lit":
            raise self.error(tree, "map literals are not supported in rules")
        if kind in ("member_object", "dot_ident", "dot_ident_arg"):
            raise self.error(tree, "message construction and leading-dot names are not supported in rules")
        raise self.error(tree, f"unsupported syntax ({kind})")

    def logical(self, kids: list[Any], is_and: bool) -> Fn:
        left, right = self.node(kids[0]), self.node(kids[1])
        op = "&&" if is_and else "||"
        decisive = not is_and  # || is decided by true, && by false

        def combine(env: Env) -> bool:
            # CEL semantics: an error on one side is absorbed when the other side decides.
            try:
                a = as_bool(left(env), op)
            except (EvalError, KeyError, TypeError, ValueError, ZeroDivisionError) as exc:
                if as_bool(right(env), op) is decisive:
                    return decisive
                raise exc
            if a is decisive:
                return decisive
            return as_bool(right(env), op)
        return combine

    def relation(self, op_tree: Any, right_tree: Any) -> Fn:
        left, right = self.node(op_tree.children[0]), self.node(right_tree)
        kind = op_tree.data
        if kind in ("relation_eq", "relation_ne"):
            return equal_fn(left, right, negate=kind == "relation_ne")
        if kind == "relation_in":
            return lambda env: contains(left(env), right(env))
        return compare_fn(RELATIONS[kind], left, right)

    def literal(self, token: lark.Token) -> Fn:
        kind, text = token.type, token.value
        if kind == "FLOAT_LIT":
            value: Any = float(text)
        elif kind == "INT_LIT":
            value = int(IntType(text))
        elif kind == "UINT_LIT":
            value = int(UintType(text[:-1]))
        elif kind in ("STRING_LIT", "MLSTRING_LIT"):
            value = str(celstr(token))
        elif kind == "BOOL_LIT":
            value = text == "true"
        elif kind == "NULL_LIT":
            value = None
        else:
            raise ExpressionError(f"{kind.lower().replace('_lit', '')} literals are not supported in rules",
                                  token.line, token.column)
        return lambda env: value

    def path(self, tree: Any) -> Fn:
        parts = dotted_names(tree)
        if parts is None:  # a field of a computed value: (x).f — resolve at run time
            target, name = self.node(tree.children[0]), str(tree.children[1])
            self.check_name(tree, name)
            return lambda env: field_of(target(env), name)
        for part in parts:
            self.check_name(tree, part)
        root = parts[0]
        if root not in ROOTS:
            raise self.error(tree, f"unknown variable {root!r}; rules can read {', '.join(ROOTS)}")
        if len(parts) == 1:
            raise self.error(tree, f"{root!r} alone is not a value; name a field, e.g. {root}.<name>")
        field = parts[1]
        dotted = ".".join(parts[:2])
        if root == "lists":
            holder = self.lists.get(field)
            if holder is None:
                known = ", ".join(sorted(self.lists)) or "none defined"
                raise self.error(tree, f"unknown list {field!r} (known lists: {known})")
            if len(parts) > 2:
                raise self.error(tree, f"lists.{field} is a set; use `x in lists.{field}`")
            self.list_names.add(field)
            return lambda env: holder.values
        if root == "event":
            if field in UNTRUSTED_EVENT_FIELDS:
                raise self.error(tree, f"event.{field} is user-written text and is not available to rules "
                                       "(field isolation); use detector.score or detector.flagged")
            if field not in EVENT_FIELDS:
                raise self.error(tree, f"unknown event field {field!r} (known: {', '.join(sorted(EVENT_FIELDS))})")
        elif root == "model" and field not in MODEL_FIELDS:
            raise self.error(tree, f"unknown model field {field!r} (known: {', '.join(sorted(MODEL_FIELDS))})")
        elif root == "detector" and field not in DETECTOR_FIELDS:
            raise self.error(tree, f"unknown detector field {field!r} (known: {', '.join(sorted(DETECTOR_FIELDS))})")
        elif root == "ctx" and self.ctx_names is not None and field not in self.ctx_names:
            raise self.error(tree, f"unknown context feature {field!r} (known: {', '.join(sorted(self.ctx_names))})")
        self.names.add(dotted)
        rest = parts[2:]
        if not rest:
            return lambda env: env[root][field]

        def deep(env: Env) -> Any:
            value = env[root][field]
            for name in rest:
                value = field_of(value, name)
            return value
        return deep

    def check_name(self, tree: Any, name: str) -> None:
        if name.startswith("_"):
            raise self.error(tree, f"names starting with '_' are not allowed ({name!r})")

    def args(self, tree: Any) -> list[Any]:
        exprlist = tree.children[-1] if tree.children and isinstance(tree.children[-1], lark.Tree) \
            and tree.children[-1].data == "exprlist" else None
        return list(exprlist.children) if exprlist is not None else []

    def function(self, tree: Any) -> Fn:
        name = str(tree.children[0])
        self.check_name(tree, name)
        arg_trees = self.args(tree)
        if name == "has":
            inner = unwrap(arg_trees[0]) if len(arg_trees) == 1 else None
            parts = dotted_names(inner) if inner is not None else None
            if inner is None or parts is None or len(parts) < 3:
                raise self.error(tree, "has() takes one field of a map, e.g. has(event.attributes.promo)")
            container, key = self.node(inner.children[0]), str(inner.children[1])
            self.check_name(tree, key)

            def has(env: Env) -> bool:
                value = container(env)
                return isinstance(value, Mapping) and key in value
            return has
        if name in REFUSED_FUNCTIONS:
            raise self.error(tree, REFUSED_FUNCTIONS[name])
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise self.error(tree, f"unknown function {name}() (allowed: {', '.join(sorted(FUNCTIONS))}, has)")
        if len(arg_trees) != 1:
            raise self.error(tree, f"{name}() takes one argument")
        arg = self.node(arg_trees[0])
        return lambda env: fn(arg(env))

    def method(self, tree: Any) -> Fn:
        target_tree, name_token = tree.children[0], tree.children[1]
        name = str(name_token)
        self.check_name(tree, name)
        arg_trees = self.args(tree)
        if name in REFUSED_FUNCTIONS:
            raise self.error(tree, REFUSED_FUNCTIONS[name])
        target = self.node(target_tree)
        if name == "size" and not arg_trees:
            return lambda env: size(target(env))
        if name in STRING_METHODS:
            if len(arg_trees) != 1:
                raise self.error(tree, f"{name}() takes one argument")
            arg, method = self.node(arg_trees[0]), str_method(name)
            return lambda env: method(target(env), arg(env))
        raise self.error(tree, f"unknown method .{name}() (allowed: size, {', '.join(STRING_METHODS)})")
