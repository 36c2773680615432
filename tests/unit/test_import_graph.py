"""The package layout holds: no import cycles, the engine never imports feedback, and
nothing a worker runs imports the offline tooling or the interfaces.

The graph is read from the source (``ast``), every import counted: module level,
function-local, and any string literal that is exactly a dotted module name (how
``importlib.import_module`` and ``mock.patch`` name modules); only ``if TYPE_CHECKING:``
blocks are left out, since they never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "feedback")
#: What runs inside an engine worker process: the stages and the worker's machinery.
WORKER_SIDE = ("engine.stages", "engine.worker")
#: Never imported by WORKER_SIDE, directly or through any chain of imports.
NOT_IN_A_WORKER = ("engine.offline", "engine.interfaces", "feedback")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _imported_names(tree: ast.Module, package: str, names: set[str]) -> Iterator[str]:
    def visit(node: ast.AST) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (n for c in child.orelse for n in visit(ast.Module(body=[c], type_ignores=[])))
                continue
            if isinstance(child, ast.Import):
                yield from (a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    head = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join([*head, *([child.module] if child.module else [])])
                yield base
                yield from (f"{base}.{a.name}" for a in child.names)
            elif (isinstance(child, ast.Constant) and isinstance(child.value, str) and "." in child.value
                  and child.value in names):  # a bare "feedback" is a CLI word, not an import
                yield child.value
            yield from visit(child)

    yield from visit(tree)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for imported in _imported_names(ast.parse(path.read_text(encoding="utf-8")), package, set(modules)):
            while imported and imported not in modules:  # ``from pkg import name``: the module part
                imported = imported.rpartition(".")[0]
            # a package's own __init__ runs before its modules; it is not an edge of the graph
            if imported and imported != name and not imported.startswith(name + "."):
                targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _graph()


def test_the_graph_is_read_from_the_real_tree(graph):
    # guards the tests below against passing on an empty or mis-resolved graph
    assert "engine.worker.loop" in graph and "feedback.stream.app" in graph
    assert "engine.stages.decide" in graph["engine.pipeline"]


def test_no_import_cycles(graph):
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_engine_never_imports_feedback(graph):
    offenders = sorted((m, t) for m, targets in graph.items() if _within(m, ("engine",))
                       for t in targets if _within(t, ("feedback",)))
    assert offenders == []


def test_no_worker_module_reaches_offline_tooling_or_interfaces(graph):
    offenders: list[tuple[str, str]] = []
    for start in (m for m in graph if _within(m, WORKER_SIDE)):
        seen, todo = {start}, [start]
        while todo:
            for target in graph.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        offenders.extend((start, m) for m in sorted(seen) if _within(m, NOT_IN_A_WORKER))
    assert offenders == []


#: Command modules import what a command needs when it runs, so that ``tollgate --help``
#: and every other command do not load torch, pandas and the Kafka clients.
LAZY_BY_DESIGN = ("engine.interfaces.commands", "feedback.commands")


def _explained(lines: list[str], lineno: int) -> bool:
    """An import is explained by ``# local: ...`` on its line, or on the nearest line above
    its group of imports (a comment line, or the ``try:`` that guards them)."""
    if "# local:" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and (not lines[i].strip() or lines[i].strip().startswith(("import ", "from "))):
        i -= 1
    return i >= 0 and "# local:" in lines[i]


def test_every_function_local_import_says_why():
    """A function-local import hides an edge of the graph; it is kept only with a reason,
    written as ``# local: ...`` above it (or on its line)."""
    unexplained = []
    for name, path in _modules().items():
        if _within(name, LAZY_BY_DESIGN):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and not _explained(lines, node.lineno):
                    unexplained.append(f"{path.relative_to(REPO)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == []


def test_an_import_group_is_explained_once():
    lines = ["def f():", "    # local: why", "    import a", "    from b import c", "    x = 1", "    import d"]
    assert _explained(lines, 3) and _explained(lines, 4) and not _explained(lines, 6)
