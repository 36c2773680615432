"""``ops/bench/README.md`` is the map of the benchmarks: it names every script there, and
names no script that is gone, so a newcomer finds the one that measures what they changed."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "ops" / "bench"


def _named(readme: str) -> set[str]:
    return set(re.findall(r"^\| `([a-z_]+\.py)`", readme, flags=re.MULTILINE))


def test_the_map_names_every_benchmark_and_no_other():
    scripts = {p.name for p in BENCH.glob("*.py")} - {"_common.py"}
    named = _named((BENCH / "README.md").read_text())
    assert sorted(scripts - named) == [], "add these to ops/bench/README.md"
    assert sorted(named - scripts) == [], "ops/bench/README.md names scripts that are gone"


def test_the_map_reads_only_table_rows():
    assert _named("| `engine.py` | x |\nsee `model.py`\n| `peers.py` (and `peers/`) | y |") == {"engine.py", "peers.py"}
