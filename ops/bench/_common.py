"""What every benchmark in ``ops/bench`` shares. Import it first, before the project:

    import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)
    from _common import REPO, percentile, timed_ms

Why first: run as ``python ops/bench/X.py``, Python puts this folder at the front of
``sys.path``, and the sibling benchmark ``engine.py`` (the name the engine issue gives
it) would then shadow the ``engine`` package. Importing this module swaps the folder for
the repository root, so ``import engine`` means the project (installed or not). It is
found because the folder is still first at that moment; afterwards it stays in
``sys.modules``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

_HERE = Path(__file__).resolve().parent
REPO = _HERE.parents[1]
sys.path[:] = [str(REPO)] + [p for p in sys.path if Path(p or ".").resolve() not in (_HERE, REPO)]


def stop_on_sigterm() -> None:
    """Make SIGTERM (``timeout``, a CI job's end, ``kill``) stop this benchmark as Ctrl-C
    does: ``SystemExit(143)`` in the main thread, so its ``finally`` blocks run and delete
    the topics, Redis keys and child processes it made. Left by a killed run, a session's
    Redis grew by gigabytes and every later run read a bigger server. A second SIGTERM
    (``timeout`` forwards one of its own) is ignored, so it cannot cut that cleanup short;
    every wait in it is bounded, and SIGKILL still ends it."""

    def stop(signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (``q`` in 0..100) of ``values``: a value that
    was measured, not an interpolation between two.

    >>> percentile([5, 1, 4, 2, 3], 50), percentile(range(1, 101), 99), percentile([7], 99)
    (3, 99, 7)
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def timed_ms(fn: Callable[[], object], repeat: int, warmup: int = 5,
             sync: Callable[[], None] | None = None) -> list[float]:
    """Wall-clock milliseconds of ``repeat`` calls of ``fn``, after ``warmup`` untimed ones.

    ``sync`` (e.g. ``torch.cuda.synchronize``) runs after every call inside the timing, so
    on an accelerator the figure is what a caller waiting for the result sees.
    """
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        if sync is not None:
            sync()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def tree_cli(tree: Path) -> list[str]:
    """``tollgate`` of the source tree ``tree``, whatever its layout (run it with ``cwd=tree``:
    the model process is ``python -m``, which finds the package in the working directory
    first). Not the shared venv's script: it tries the new module path first, which its
    editable install finds in another checkout."""
    module = "engine.interfaces.cli" if (tree / "engine" / "interfaces" / "cli.py").exists() else "engine.cli"
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.argv[0] = 'tollgate'; sys.exit(main())"]


def stack_from_env() -> tuple[str, str] | None:
    """The broker and Redis a bench runs against (``TOLLGATE_KAFKA_BOOTSTRAP``,
    ``TOLLGATE_REDIS_URL``), or None after saying how to get them."""
    bootstrap, redis_url = os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP"), os.environ.get("TOLLGATE_REDIS_URL")
    if not (bootstrap and redis_url):
        print("set TOLLGATE_KAFKA_BOOTSTRAP and TOLLGATE_REDIS_URL (source the stack's env)", file=sys.stderr)
        return None
    return bootstrap, redis_url


def redis_script_usec(client) -> int:
    """Microseconds the Redis server has spent in Lua scripts since its stats were last
    reset (``INFO commandstats``: ``EVALSHA`` and ``EVAL``, which include the commands
    the scripts call). Server-wide: run on a Redis nothing else uses."""
    stats = client.info("commandstats")
    return sum(v["usec"] for name, v in stats.items() if name in ("cmdstat_evalsha", "cmdstat_eval"))
