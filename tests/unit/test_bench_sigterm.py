"""A benchmark stopped by SIGTERM (``timeout``, a CI job's end) runs its ``finally`` blocks,
as on Ctrl-C, so it deletes the topics and Redis keys it made (``_common.stop_on_sigterm``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "ops" / "bench"

SCRIPT = f"""
import sys
sys.path.insert(0, {str(BENCH)!r})
import _common
if sys.argv[1] == "on":
    _common.stop_on_sigterm()
try:
    print("ready", flush=True)
    sys.stdin.read()  # blocks until the signal
finally:
    print("cleaned up", flush=True)
"""


def _terminated(mode: str) -> tuple[int, str]:
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    rest, _ = child.communicate(timeout=60)
    return child.returncode, rest


def test_sigterm_runs_the_cleanup_and_exits_143():
    assert _terminated("on") == (143, "cleaned up\n")


def test_without_it_sigterm_skips_the_cleanup():
    # what a benchmark did before: killed at once, its finally never ran
    assert _terminated("off") == (-signal.SIGTERM, "")
