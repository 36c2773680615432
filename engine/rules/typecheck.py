"""Static type checks of rule conditions, at load time (``rules check`` and every reload).

At run time a comparison of a number with a string is simply never true (``==``) or
an evaluation error that makes the rule not fire (``<``, ``>``…): either way a typo
such as ``event.amount > "5000"`` or ``event.merchant_category == 5411`` would load
fine and then silently never fire. Where the type of both sides is known — a field
whose type is fixed (``FIELD_TYPES``: ``event.amount``, every ``ctx.*``, ``model.*``,
``detector.*``…), a literal, or an expression built from them — the mismatch is
refused instead, with the condition's line and column (the loader adds file, line
and rule). Anything of unknown type (``event.attributes.*``, an index, ``null``) is
left to run time, as before.

>>> from celpy.celparser import CELParser
>>> check_types(CELParser().parse('event.amount >= 5000 && event.country in ["KP", "IR"]'),
...             'event.amount >= 5000 && event.country in ["KP", "IR"]')
>>> check_types(CELParser().parse('event.amount > "5000"'), 'event.amount > "5000"')
Traceback (most recent call last):
...
engine.rules.typecheck.TypeMismatch: `event.amount > "5000"` compares a number (event.amount) with a string ("5000"), so it is never true; write the number without quotes
"""  # noqa: E501 (a doctest line is the exception message as printed)

from __future__ import annotations

from typing import Any

import lark

NUMBER, STRING, BOOL = "number", "string", "bool"
NAMED_LIST = "named list"  # lists.NAME: a set of strings
SCALARS = (NUMBER, STRING, BOOL)

#: Fields whose type is fixed by ``engine.stages.guard.event_inputs``/``model_inputs``
#: (tests/unit/test_rules_typecheck.py holds the two together). ``ctx.*`` are numbers.
FIELD_TYPES: dict[tuple[str, str], str] = {
    **{("event", f): STRING for f in ("event_id", "customer_id", "account_id", "terminal_id",
                                      "merchant_category", "currency", "channel", "country", "device_id", "ip")},
    **{("event", f): NUMBER for f in ("amount", "event_time_ms", "hour", "weekday")},
    **{("model", f): NUMBER for f in ("p_pass", "p_review", "p_reject", "risk", "confidence")},
    ("model", "verdict"): STRING, ("model", "model_verdict"): STRING, ("model", "degraded"): BOOL,
    ("detector", "score"): NUMBER, ("detector", "flagged"): BOOL,
}
_ROOT_TYPES = {"ctx": NUMBER}  # every context feature is a float
_LITERALS = {"INT_LIT": NUMBER, "UINT_LIT": NUMBER, "FLOAT_LIT": NUMBER, "STRING_LIT": STRING,
             "MLSTRING_LIT": STRING, "BOOL_LIT": BOOL}
_FUNCTIONS = {"size": NUMBER, "int": NUMBER, "double": NUMBER, "string": STRING, "has": BOOL}
_METHODS = {"size": NUMBER, "startsWith": BOOL, "endsWith": BOOL, "contains": BOOL}
_ORDERED = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">="}
_PASS_THROUGH = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                           "multiplication", "unary", "member", "primary"})

# A type is one of SCALARS, NAMED_LIST, ("list", element types) or None (unknown).
Type = Any


class TypeMismatch(ValueError):
    """A comparison that can never be true. ``line``/``column`` are inside the condition."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line, self.column = line, column


def check_types(tree: Any, source: str) -> None:
    """Raise ``TypeMismatch`` for the first comparison of known, different types."""
    _Checker(source).type_of(tree)


def _unwrap(tree: Any) -> Any:
    while isinstance(tree, lark.Tree) and tree.data in _PASS_THROUGH and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def type_of(self, tree: Any) -> Type:
        tree = _unwrap(tree)
        if not isinstance(tree, lark.Tree):
            return None
        kind, kids = tree.data, tree.children
        if kind == "expr":  # cond ? a : b
            types = [self.type_of(k) for k in kids]
            return types[1] if types[1] == types[2] else None
        if kind in ("conditionalor", "conditionaland"):
            self.visit(kids)
            return BOOL
        if kind == "relation":
            return self.relation(tree)
        if kind in ("addition", "multiplication"):
            op_tree, right_tree = kids
            left, right = self.type_of(op_tree.children[0]), self.type_of(right_tree)
            if left == right == NUMBER:
                return NUMBER
            return STRING if op_tree.data == "addition_add" and left == right == STRING else None
        if kind == "unary":
            op, operand = kids
            operand_type = self.type_of(operand)
            if op.data == "unary_not":
                return BOOL
            return NUMBER if operand_type == NUMBER else None
        if kind == "paren_expr":
            return self.type_of(kids[0])
        if kind == "literal":
            return _LITERALS.get(getattr(kids[0], "type", ""))
        if kind == "list_lit":
            items = kids[0].children if kids and isinstance(kids[0], lark.Tree) else []
            return ("list", tuple(self.type_of(k) for k in items))
        if kind in ("member_dot", "ident"):
            return self.path(tree)
        if kind == "ident_arg":
            self.visit(kids[1:])
            return _FUNCTIONS.get(str(kids[0]))
        if kind == "member_dot_arg":
            self.visit([kids[0], *kids[2:]])
            return _METHODS.get(str(kids[1]))
        self.visit(kids)
        return None

    def visit(self, kids: list[Any]) -> None:
        for kid in kids:
            if isinstance(kid, lark.Tree):
                if kid.data == "exprlist":
                    self.visit(kid.children)
                else:
                    self.type_of(kid)

    def path(self, tree: Any) -> Type:
        parts: list[str] = []
        node = tree
        while True:
            node = _unwrap(node)
            if isinstance(node, lark.Tree) and node.data == "member_dot":
                parts.append(str(node.children[1]))
                node = node.children[0]
            elif isinstance(node, lark.Tree) and node.data == "ident":
                parts.append(str(node.children[0]))
                break
            else:  # a field of a computed value: check inside it, type unknown
                self.type_of(node)
                return None
        parts.reverse()
        if len(parts) != 2:
            return None
        root, field = parts
        if root == "lists":
            return NAMED_LIST
        return FIELD_TYPES.get((root, field), _ROOT_TYPES.get(root))

    def relation(self, tree: Any) -> Type:
        op_tree, right_tree = tree.children
        left_tree = op_tree.children[0]
        left, right = self.type_of(left_tree), self.type_of(right_tree)
        op = op_tree.data
        if op == "relation_in":
            if right == NAMED_LIST and left in (NUMBER, BOOL):
                self.fail(tree, f"looks for {self.describe(left_tree, left)} in a named list, which holds "
                                "strings, so it never matches; use string(...) if you mean its text")
            if isinstance(right, tuple) and left in SCALARS:
                wrong = [t for t in right[1] if t in SCALARS and t != left]
                if wrong:
                    self.fail(tree, f"looks for {self.describe(left_tree, left)} in a list that holds a {wrong[0]}, "
                                    f"which never matches; write every item as a {left}")
            return BOOL
        if left in SCALARS and right in SCALARS:
            if left != right:
                self.fail(tree, f"compares {self.describe(left_tree, left)} with {self.describe(right_tree, right)}, "
                                f"so it is never true; {_hint(left, right, right_tree)}")
            if left == BOOL and op in _ORDERED:
                self.fail(tree, f"orders booleans with {_ORDERED[op]}, which fails on every event; "
                                "use == or !=")
        return BOOL

    def describe(self, tree: Any, kind: str) -> str:
        text = self.text(tree)
        return f"a {kind} ({text})" if text else f"a {kind}"

    def text(self, tree: Any) -> str | None:
        meta = getattr(_unwrap(tree), "meta", None)
        if meta is None or getattr(meta, "empty", True):
            token = _unwrap(tree)
            return str(token) if isinstance(token, lark.Token) else None
        return self.source[meta.start_pos:meta.end_pos].strip() or None

    def fail(self, tree: Any, message: str) -> None:
        meta = getattr(tree, "meta", None)
        text = self.text(tree)
        raise TypeMismatch(f"`{text}` {message}" if text else message[0].upper() + message[1:],
                           getattr(meta, "line", None), getattr(meta, "column", None))


def _hint(left: str, right: str, right_tree: Any) -> str:
    """How to write the right-hand side so it matches the left (usually a literal)."""
    literal = _unwrap(right_tree)
    is_literal = isinstance(literal, lark.Tree) and literal.data == "literal"
    if left == NUMBER and right == STRING and is_literal:
        return "write the number without quotes"
    if left == STRING and right == NUMBER and is_literal:
        return f"write it in quotes, e.g. \"{literal.children[0]}\""
    return f"make both sides a {left}" + (" (int(), double() or string())" if BOOL not in (left, right) else "")
