"""Walking cel-python's parse tree: what both rule compilers (``engine.rules.expr``, one
event at a time, and ``engine.rules.columns``, a batch's columns) need to read it alike."""

from __future__ import annotations

from typing import Any

import lark

#: The grammar's precedence levels: a node of one of these with a single child is only
#: the path down to that child.
PASS_THROUGH = frozenset({"expr", "conditionalor", "conditionaland", "relation", "addition",
                          "multiplication", "unary", "member", "primary"})


def unwrap(tree: Any) -> Any:
    """Skip the grammar's single-child pass-through levels."""
    while isinstance(tree, lark.Tree) and tree.data in PASS_THROUGH and len(tree.children) == 1:
        tree = tree.children[0]
    return tree


def dotted_names(tree: Any) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"], or None when the chain is not a plain name path."""
    parts: list[str] = []
    while True:
        tree = unwrap(tree)
        if not isinstance(tree, lark.Tree):
            return None
        if tree.data == "member_dot":
            parts.append(str(tree.children[1]))
            tree = tree.children[0]
        elif tree.data == "ident":
            parts.append(str(tree.children[0]))
            return parts[::-1]
        else:
            return None
