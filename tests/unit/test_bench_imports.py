"""A benchmark imports its siblings as ``ops.bench.<name>``, never by their bare name.

``_common`` (imported first by every benchmark) takes ``ops/bench`` off ``sys.path`` so that
the sibling ``engine.py`` cannot shadow the ``engine`` package; a bare ``from engine_relay
import ...`` then fails at start. ``ops/bench/transactions.py`` did, and nothing ran it.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "ops" / "bench"
#: Top-level packages of the repository: a sibling file with one of these names is
#: shadowed by the package (that is the point of ``_common``), so the name is the package.
PACKAGES = {"engine", "feedback", "ops", "tests"}


def _bare_sibling_imports(path: Path, siblings: set[str]) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found += [f"{path.name}:{node.lineno} imports {name}" for name in names
                  if name.split(".")[0] in siblings]
    return found


def test_benchmarks_import_their_siblings_through_the_package():
    siblings = {p.stem for p in BENCH.glob("*.py")} - PACKAGES - {"_common"}
    offenders = [hit for path in sorted(BENCH.glob("*.py")) for hit in _bare_sibling_imports(path, siblings)]
    assert offenders == [], f"import these as ops.bench.<name>: {offenders}"


def test_the_check_sees_a_bare_sibling_import(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("import _common\nfrom engine_relay import commit_records_first\nfrom engine.settings import Settings\n")
    assert _bare_sibling_imports(script, {"engine_relay"}) == ["x.py:2 imports engine_relay"]
