"""Unit tests start no processes (#16): a test that needs a fresh interpreter, a shell
script or a worker goes in ``tests/integration/``. Read from the source, so a test that
would start one fails here before it runs."""

from __future__ import annotations

import ast
from pathlib import Path

UNIT = Path(__file__).resolve().parent

#: Modules whose import means starting a process.
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty"}
#: ``os`` functions that start or replace a process.
OS_CALLS = {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "spawnl", "spawnle", "spawnlp",
            "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe", "execl", "execle", "execlp", "execlpe", "execv",
            "execve", "execvp", "execvpe"}
#: Names that start processes however they are imported.
PROCESS_NAMES = {"ProcessPoolExecutor"}

#: file (relative to tests/unit) -> why it may start a process. Empty: keep it so.
ALLOWED: dict[str, str] = {}


def process_starts(source: str) -> list[str]:
    """Where ``source`` imports or calls something that starts a process.

    >>> process_starts("import subprocess")
    ['line 1: import subprocess']
    >>> process_starts("from concurrent.futures import ProcessPoolExecutor as P")
    ['line 1: ProcessPoolExecutor']
    >>> process_starts("import os\\nos.system('true')")
    ['line 2: os.system']
    >>> process_starts("import os\\nos.environ.get('X')")
    []
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] in PROCESS_MODULES]
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] in PROCESS_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import ...")
            found += [f"line {node.lineno}: {a.name}" for a in node.names if a.name in PROCESS_NAMES]
        elif isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == "os" and node.attr in OS_CALLS:
                found.append(f"line {node.lineno}: os.{node.attr}")
            elif node.attr in PROCESS_NAMES:
                found.append(f"line {node.lineno}: {node.attr}")
    return found


def test_no_unit_test_starts_a_process() -> None:
    offenders = {}
    for path in sorted(UNIT.rglob("*.py")):
        name = str(path.relative_to(UNIT))
        if name in ALLOWED or path == Path(__file__).resolve():
            continue
        if found := process_starts(path.read_text(encoding="utf-8")):
            offenders[name] = found
    assert not offenders, f"unit tests that start processes (move them to tests/integration/): {offenders}"


def test_the_allow_list_names_existing_files_with_a_reason() -> None:
    for name, why in ALLOWED.items():
        assert (UNIT / name).is_file() and why.strip(), name
