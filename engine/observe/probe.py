"""``python -m engine.observe.probe URL``: a container health probe that restarts a stalled worker.

Docker Compose's ``restart:`` policy acts on exits, never on health, so a probe that
only reports "unhealthy" restarts nothing. This one asks the worker's ``/healthz``;
when the worker *answers* 503 (no progress for ``stall_after_s``, or its loop stuck)
it sends SIGTERM to the worker — PID 1 in its container — which then exits within
``settings.worker.stop_timeout_s`` and is restarted by the policy. A refused or timed
out connection (the worker still starting, or too busy to answer) only reports
unhealthy: killing a worker during its start would make it restart for ever.

Exit status: 0 healthy, 1 unhealthy (Docker's convention).

>>> probe("http://127.0.0.1:1/healthz", pid=None, timeout_s=0.5)
1
"""

from __future__ import annotations

import os
import signal
import sys
import urllib.error
import urllib.request


def probe(url: str, pid: int | None = 1, timeout_s: float = 4.0) -> int:
    """0 when ``url`` answers 200; 1 otherwise, after a SIGTERM to ``pid`` on a 503."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return 0 if response.status == 200 else 1
    except urllib.error.HTTPError as exc:
        if exc.code == 503 and pid is not None:
            print(f"{url}: 503 {exc.read()[:200]!r}; sending SIGTERM to pid {pid}", file=sys.stderr)
            os.kill(pid, signal.SIGTERM)
        return 1
    except OSError as exc:  # refused, reset, timed out: not known to be stalled
        print(f"{url}: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2:
        print("usage: python -m engine.observe.probe URL [PID]", file=sys.stderr)
        return 2
    return probe(argv[0], int(argv[1]) if len(argv) == 2 else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
