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
    sys.stdin.readline()  # blocks until the signal
finally:
    print("cleaning", flush=True)
    sys.stdin.readline()  # the test sends a second SIGTERM here, then a line
    print("cleaned up", flush=True)
"""


def _terminated(mode: str, twice: bool = False) -> tuple[int, str]:
    child = subprocess.Popen([sys.executable, "-c", SCRIPT, mode], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGTERM)
    said = ""
    if twice:
        said = child.stdout.readline()
        assert said == "cleaning\n"
        child.send_signal(signal.SIGTERM)  # as `timeout` forwards one after pkill's
    rest, _ = child.communicate("go\n", timeout=60)
    return child.returncode, said + rest


def test_sigterm_runs_the_cleanup_and_exits_143():
    assert _terminated("on") == (143, "cleaning\ncleaned up\n")


def test_a_second_sigterm_does_not_cut_the_cleanup_short():
    assert _terminated("on", twice=True) == (143, "cleaning\ncleaned up\n")


def test_without_it_sigterm_skips_the_cleanup():
    # what a benchmark did before: killed at once, its finally never ran
    assert _terminated("off") == (-signal.SIGTERM, "")
