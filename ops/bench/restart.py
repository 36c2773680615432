"""Restart-to-first-verdict: how long a stream goes without decisions when a worker is
SIGKILLed (a crash) or SIGTERMed (a deploy) and restarted under the same id, and where
that time goes.

    eval "$(ops/stack up)"   # or export TOLLGATE_KAFKA_BOOTSTRAP and TOLLGATE_REDIS_URL
    OMP_NUM_THREADS=1 python ops/bench/restart.py --rounds 3

Needs the broker and Redis (TOLLGATE_KAFKA_BOOTSTRAP, TOLLGATE_REDIS_URL). Makes its
own topics (4 partitions), a fresh model v1, and streams events at ``--rate``. Each
round starts worker w1, waits for its first verdicts, SIGKILLs it mid-stream and
starts it again under the same id; it reports, per start, the seconds from spawning
the process to its first committed transaction, and the phases the worker logs:

* process_start_s   interpreter start and the CLI's imports
* imports_s         the worker's own imports, settings, the Redis client
* model_load_s      the pipeline: model, detector, rules, the model process
* wiring_s          rule watcher, health server, model watcher, the Kafka clients
* warmup_s          synthetic batches through the whole path
* init_transactions_s  fencing the previous instance, aborting its open transaction
                      (since 2026-12-05 it runs beside the join and the warm-up, so the
                      phases overlap and ``unaccounted_s`` can be negative)
* assigned_after_ready_s  joining the group (a restart waits here for the dead
                      member's session timeout unless membership is static)
* first_commit_after_ready_s  the first batch decided and committed
* cpu_to_first_verdict_s  CPU seconds the worker and its model process had used when
                      the bench saw the first verdict: on a loaded host, wall seconds
                      say how busy the machine was; this says what a start costs

``--stops kill,term`` alternates a SIGKILL with a SIGTERM (the restart is spawned as soon
as the old process has exited, as a supervisor does) and also reports
``signal_to_first_verdict_s``: from the signal to the new process's first verdict, the
whole pause a deploy or a crash puts in the stream.

``--runtimes torch,onnx`` alternates the model's runtime start by start: the model is
exported to ONNX (``tollgate model export``'s code) and served either through PyTorch
(``TOLLGATE_MODEL__RUNTIME=torch``, the safetensors weights) or as the graph on NumPy
arrays (``onnx``: neither the worker nor its model process imports PyTorch;
``engine.stages.infer_arrays``).

``--stops scale-down`` measures a worker stopped for good instead: a second worker (w2)
joins beside w1, and once both hold partitions w1 is SIGTERMed and not restarted;
``handoff_s`` is from the signal to w2's log line of w1's partitions assigned to it. A
static member skips the LeaveGroup on close, so without the worker's own leave
(``EventConsumer.close``) that waits for the session timeout (10 s).

``--modes static,dynamic`` alternates static group membership with dynamic (the
default), round by round, so both see the same machine load. ``--baseline DIR`` runs
every start twice, alternately: once with the code in DIR (e.g. ``git archive <commit> |
tar -x -C DIR``) on ``PYTHONPATH``, once with this tree: before/after in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

from engine.wire.codec import Codec
from tests.support.worker_support import (
    WorkerEnv,
    WorkerProcess,
    bench_worker_env,
    child_processes,
    make_events,
    produce_events,
    save_fresh_model,
)

PHASES = ("process_start_s", "imports_s", "model_load_s", "wiring_s", "warmup_s", "init_transactions_s",
          "assigned_after_ready_s")


def _first(worker: WorkerProcess, msg: str, timeout: float) -> dict:
    return worker.wait_for(msg, timeout=timeout)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its live children (the model process)."""
    total = 0.0
    for p in (pid, *child_processes(pid)):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _one_start(wenv: WorkerEnv, log_dir: Path, env: dict[str, str],
               tree: Path = _common.REPO) -> tuple[WorkerProcess, dict[str, float]]:
    spawned = time.time()
    worker = WorkerProcess(wenv, "w1", log_dir, command=_common.tree_cli(tree), cwd=tree, **env)
    ready = _first(worker, "worker ready", 300)
    first = _first(worker, "first verdicts committed", 300)
    cpu_s = _cpu_s(worker.proc.pid)  # read when the bench sees the line (polled every 0.1 s)
    assigned = _first(worker, "first partitions assigned", 300)
    out = {p: float(ready.get(p, float("nan"))) for p in PHASES}
    out["assigned_after_ready_s"] = float(assigned["after_ready_s"])
    out["first_commit_after_ready_s"] = float(first["after_ready_s"]) - out["assigned_after_ready_s"]
    out["to_first_verdict_s"] = float(first["ts"]) - spawned
    out["spawned"] = spawned
    out["cpu_to_first_verdict_s"] = cpu_s
    # spawn → exec and anything the phases miss (a phase the baseline does not log counts here)
    out["unaccounted_s"] = out["to_first_verdict_s"] - sum(v for k, v in out.items() if k in PHASES and not math.isnan(v)) \
        - out["first_commit_after_ready_s"]
    return worker, out


def _scale_down(wenv: WorkerEnv, log_dir: Path, env: dict[str, str], tree: Path, w1: WorkerProcess) -> float:
    """w2 joins beside ``w1``; once both hold partitions, SIGTERM w1 for good and return
    the seconds until w2 is assigned w1's partitions (its next ``partitions assigned``)."""
    w2 = WorkerProcess(wenv, "w2", log_dir, command=_common.tree_cli(tree), cwd=tree, **env)
    try:
        deadline = time.monotonic() + 300
        # cooperative-sticky: w2 gets its share in a second round, after w1 revoked it
        while not (any(line["partitions"] for line in w2.logged("partitions assigned"))
                   and w1.logged("partitions revoked")):
            if time.monotonic() > deadline or w2.proc.poll() is not None:
                raise RuntimeError("w2 never got partitions:\n" + w2.tail())
            time.sleep(0.1)
        held = len(w2.logged("partitions assigned"))
        signalled = time.time()
        if w1.terminate() != 0:
            raise RuntimeError("w1 did not stop cleanly:\n" + w1.tail())
        while len(w2.logged("partitions assigned")) == held:
            if time.monotonic() > deadline:
                raise RuntimeError("w1's partitions never reached w2:\n" + w2.tail())
            time.sleep(0.05)
        return float(w2.logged("partitions assigned")[held]["ts"]) - signalled
    finally:
        w2.terminate()  # leaves cleanly: the next start is not held up by w2's session
        w2.stop_quietly()


def main() -> int:
    # A SIGTERM must still run the clean-up below (stop the workers, delete the topics).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=200.0, help="events/s streamed throughout")
    ap.add_argument("--modes", default="static", help="comma list of static,dynamic (alternated)")
    ap.add_argument("--stops", default="kill", help="comma list of kill,term,scale-down (alternated)")
    ap.add_argument("--infer-process", choices=("true", "false"), default="true")
    ap.add_argument("--baseline", type=Path, help="a tree of the code before (same layout); alternated with this one")
    ap.add_argument("--runtimes", default="torch",
                    help="comma list of torch,onnx (alternated): the same model through PyTorch or as its ONNX graph")
    args = ap.parse_args()
    runtimes = args.runtimes.split(",")
    stack = _common.stack_from_env()
    if stack is None:
        return 2
    bootstrap, redis_url = stack
    unique = "bench-restart-" + uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="tollgate-restart-"))
    cleanup = contextlib.ExitStack()  # topics and keys go when the run ends
    wenv, client = cleanup.enter_context(bench_worker_env(bootstrap, redis_url, unique, work / "models"))
    source = save_fresh_model(wenv.models_dir, "v1")
    if runtimes != ["torch"]:
        from engine.model.export import export_model_dir  # local: only for --runtimes with onnx

        # The serving version; runtime torch reads its safetensors weights, onnx its graph.
        export_model_dir(source, wenv.models_dir / "v1-onnx-fp32", "onnx", "fp32", samples=64)
        client.set(f"{wenv.key_prefix}:model:serving", "v1-onnx-fp32")
    stop = threading.Event()
    codec = Codec()
    stream = itertools.takewhile(lambda _: not stop.is_set(), itertools.chain.from_iterable(
        make_events(unique, 1_000, start=k * 1_000) for k in itertools.count()))
    producer = threading.Thread(target=produce_events, args=(bootstrap, wenv.events, stream, codec),
                                kwargs={"rate_per_s": args.rate}, daemon=True)
    producer.start()
    trees = {"after": str(_common.REPO)} if args.baseline is None else {
        "before": str(args.baseline.resolve()), "after": str(_common.REPO)}
    modes = [f"{m}/{t}" if len(trees) > 1 else m for m in args.modes.split(",") for t in trees]
    modes = [f"{m} {stop}" for m in modes for stop in args.stops.split(",")]
    if runtimes != ["torch"]:
        modes = [f"{rt}:{m}" for m in modes for rt in runtimes]
    results: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    worker = None
    try:
        for rnd in range(args.rounds):
            for mode in modes:
                setup, _, how = mode.partition(" ")
                runtime, _, setup = setup.rpartition(":")
                membership, _, tree = setup.partition("/")
                env = {"TOLLGATE_WORKER__STATIC_MEMBERSHIP": "true" if membership == "static" else "false",
                       "TOLLGATE_BATCH__INFER_PROCESS": args.infer_process,
                       "TOLLGATE_MODEL__RUNTIME": runtime or "auto",
                       "PYTHONPATH": trees[tree or "after"]}
                if worker is not None:
                    worker.stop_quietly()
                where = Path(trees[tree or "after"])
                worker, first = _one_start(wenv, work, env, where)  # a start after a clean exit/kill
                if how == "scale-down":
                    handoff_s = _scale_down(wenv, work, env, where, worker)
                    results[mode].setdefault("handoff_s", []).append(handoff_s)
                    print(f"round {rnd + 1} {mode}: handoff {handoff_s:.2f} s", flush=True)
                    continue
                signalled = time.time()
                if how == "term":  # a deploy: the worker finishes its batch, commits and leaves the group
                    worker.terminate()
                else:  # a crash, mid-stream: open transaction, member still in the group
                    worker.kill()
                    worker.proc.wait()
                worker, again = _one_start(wenv, work, env, where)
                again["signal_to_first_verdict_s"] = again["to_first_verdict_s"] + (again["spawned"] - signalled)
                del again["spawned"]
                for key, value in again.items():
                    results[mode].setdefault(key, []).append(value)
                print(f"round {rnd + 1} {mode}: first start {first['to_first_verdict_s']:.2f} s, restart "
                      f"{again['to_first_verdict_s']:.2f} s  "
                      + " ".join(f"{k}={v:.2f}" for k, v in again.items() if k != "to_first_verdict_s"), flush=True)
    finally:
        stop.set()
        if worker is not None:
            worker.stop_quietly()
        cleanup.close()
    print(f"\nrestart, median of {args.rounds} (infer_process={args.infer_process}, {args.rate:g} events/s)")
    for mode in modes:
        r = results[mode]
        if "handoff_s" in r:
            print(f"  {mode:21s} SIGTERM to w2 assigned w1's partitions {statistics.median(r['handoff_s']):6.2f} s "
                  f"({', '.join(f'{v:.2f}' for v in r['handoff_s'])})")
            continue
        print(f"  {mode:21s} to first verdict {statistics.median(r['to_first_verdict_s']):6.2f} s  ("
              + ", ".join(f"{k} {statistics.median(r[k]):.2f}" for k in (*PHASES, "first_commit_after_ready_s",
                                                                            "unaccounted_s", "cpu_to_first_verdict_s",
                                                                            "signal_to_first_verdict_s"))
              + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
