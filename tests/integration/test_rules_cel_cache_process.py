"""The shipped rules load in a fresh process from the CEL parser cache the previous one
wrote (``engine/rules/cel_cache.py``; the parser itself: ``tests/unit/test_rules_cel_cache.py``).
Here, not among the unit tests: it starts two interpreters."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_rules_load_in_a_fresh_process_from_the_cache(tmp_path):
    """Two fresh processes load the shipped rules; the second reads the cache the first wrote."""
    code = ("from engine.assemble import load_guard; from engine.settings import get_settings; "
            "print(load_guard(get_settings()).version)")
    env = {**os.environ, "TOLLGATE_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False,
                           cwd=REPO)
    assert first.returncode == 0, first.stderr[-2000:]
    written = (tmp_path / "cel-parser.lark").stat().st_mtime_ns
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, check=False,
                            cwd=REPO)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.strip().splitlines()[-1] == first.stdout.strip().splitlines()[-1]
    assert (tmp_path / "cel-parser.lark").stat().st_mtime_ns == written  # read, not rebuilt
