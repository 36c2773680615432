"""What bounding a librdkafka call costs: a thread started per call against
``BoundedCaller``'s one long-lived thread, interleaved in one process.

    python ops/bench/watchdog_calls.py [--calls 3000] [--rounds 3] [--busy]

Each call is a trivial function, so the figures are the bound's own cost: wall time
and process CPU per call (``time.process_time``, all threads). ``--busy`` keeps a
second Python thread spinning meanwhile, as the worker's loop does while the commit
thread opens a quiet stream's transaction: then every hand-off also waits for the GIL.
The worker makes three or four bounded calls per batch (``engine.stages.emit``).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

try:
    import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:  # imported as ops.bench.watchdog_calls
    pass

from engine.worker.watchdog import BoundedCaller


def thread_per_call(bound_s: float) -> Callable[[str, Callable[[], Any]], Any]:
    """The bound as it was before 2026-12-05: a daemon thread started for every call."""

    def call(what: str, fn: Callable[[], Any]) -> Any:
        done = threading.Event()
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append(fn())
            finally:
                done.set()

        threading.Thread(target=run, name=f"tollgate-kafka-{what}", daemon=True).start()
        if not done.wait(bound_s):
            raise TimeoutError(what)
        return outcome[0]

    return call


def measure(caller: Callable[[str, Callable[[], Any]], Any], calls: int) -> tuple[float, float]:
    """(wall µs, CPU µs) per call."""
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        caller("begin_transaction", lambda: None)
    return (time.perf_counter() - t0) / calls * 1e6, (time.process_time() - c0) / calls * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="a second Python thread spins meanwhile")
    args = ap.parse_args()
    stop = threading.Event()
    if args.busy:
        def spin() -> None:
            x = 0
            while not stop.is_set():
                x += 1

        threading.Thread(target=spin, daemon=True).start()
    callers = {"thread per call": thread_per_call(10.0), "one thread (BoundedCaller)": BoundedCaller(10.0)}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in callers}
    for r in range(args.rounds):
        order = list(callers.items())
        for name, caller in order if r % 2 == 0 else order[::-1]:
            results[name].append(measure(caller, args.calls))
    stop.set()
    print(f"{args.calls} calls x {args.rounds} rounds{', a busy thread beside' if args.busy else ''}; medians")
    for name, rows in results.items():
        print(f"  {name:28s} wall {statistics.median(w for w, _ in rows):7.1f} µs/call   "
              f"CPU {statistics.median(c for _, c in rows):7.1f} µs/call")


if __name__ == "__main__":
    main()
