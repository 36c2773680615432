"""How long a worker on an idle stream takes to stop after SIGTERM: a deploy's restart
waits for it before the supervisor starts the new process (``ops/bench/restart.py
--stops term`` measures a restart under a steady stream, where polls return at once).

    eval "$(ops/stack up)"   # or export TOLLGATE_KAFKA_BOOTSTRAP and TOLLGATE_REDIS_URL
    OMP_NUM_THREADS=1 python ops/bench/stop_time.py --rounds 3

Makes its own topics and a fresh model, then per round starts worker w1, waits until it
is ready and one second more (no events: the loop sits in its idle poll), sends SIGTERM
and prints the seconds to the worker's "worker stopped" line and to the process's exit.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

from tests.support.worker_support import WorkerProcess, bench_worker_env, save_fresh_model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    stack = _common.stack_from_env()
    if stack is None:
        return 2
    bootstrap, redis_url = stack
    unique = "bench-stop-" + uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="tollgate-stop-"))
    with bench_worker_env(bootstrap, redis_url, unique, work / "models") as (wenv, _):
        save_fresh_model(wenv.models_dir, "v1")
        for rnd in range(args.rounds):
            # this tree's CLI (a copy of the tree elsewhere measures that code: before/after)
            worker = WorkerProcess(wenv, "w1", work, command=_common.tree_cli(_common.REPO), cwd=_common.REPO,
                                   PYTHONPATH=str(_common.REPO))
            worker.wait_for("worker ready", timeout=300)
            time.sleep(1.0)  # the loop is in its idle poll: what a deploy on a quiet stream meets
            signalled = time.time()
            worker.proc.send_signal(signal.SIGTERM)
            worker.proc.wait(120)
            exited = time.time()
            stopped = worker.wait_for("worker stopped", timeout=10)
            print(f"round {rnd + 1}: SIGTERM to 'worker stopped' {float(stopped['ts']) - signalled:.3f} s, "
                  f"to exit {exited - signalled:.3f} s (exit code {worker.proc.returncode})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
