"""Restart-to-first-verdict: how long a stream goes without decisions when a worker is
SIGKILLed and restarted under the same id, and where that time goes.

    source /work/issues/stack.env   # or: eval "$(ops/stack up)"
    OMP_NUM_THREADS=1 python ops/bench/restart.py --rounds 3

Needs the broker and Redis (TOLLGATE_KAFKA_BOOTSTRAP, TOLLGATE_REDIS_URL). Makes its
own topics (4 partitions), a fresh model v1, and streams events at ``--rate``. Each
round starts worker w1, waits for its first verdicts, SIGKILLs it mid-stream and
starts it again under the same id; it reports, per start, the seconds from spawning
the process to its first committed transaction, and the phases the worker logs:

* process_start_s   interpreter start and the CLI's imports
* model_load_s      the pipeline: model, detector, rules, the model process
* warmup_s          synthetic batches through the whole path
* init_transactions_s  fencing the previous instance, aborting its open transaction
* assigned_after_ready_s  joining the group (a restart waits here for the dead
                      member's session timeout unless membership is static)
* first_commit_after_ready_s  the first batch decided and committed

``--modes static,dynamic`` alternates static group membership (the default) with
dynamic, round by round, so both see the same machine load.
"""

from __future__ import annotations

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

import argparse
import itertools
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from engine.codec import Codec
from tests.integration.worker_support import WorkerEnv, WorkerProcess, make_events, produce_events, save_fresh_model

PHASES = ("process_start_s", "model_load_s", "warmup_s", "init_transactions_s", "assigned_after_ready_s")


def _first(worker: WorkerProcess, msg: str, timeout: float) -> dict:
    return worker.wait_for(msg, timeout=timeout)


def _one_start(wenv: WorkerEnv, log_dir: Path, env: dict[str, str]) -> tuple[WorkerProcess, dict[str, float]]:
    spawned = time.time()
    worker = WorkerProcess(wenv, "w1", log_dir, **env)
    ready = _first(worker, "worker ready", 300)
    first = _first(worker, "first verdicts committed", 300)
    assigned = _first(worker, "first partitions assigned", 300)
    out = {p: float(ready.get(p, float("nan"))) for p in PHASES}
    out["assigned_after_ready_s"] = float(assigned["after_ready_s"])
    out["first_commit_after_ready_s"] = float(first["after_ready_s"]) - out["assigned_after_ready_s"]
    out["to_first_verdict_s"] = float(first["ts"]) - spawned
    return worker, out


def main() -> int:
    # A SIGTERM must still run the clean-up below (stop the workers, delete the topics).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate", type=float, default=200.0, help="events/s streamed throughout")
    ap.add_argument("--modes", default="static", help="comma list of static,dynamic (alternated)")
    ap.add_argument("--infer-process", choices=("true", "false"), default="true")
    args = ap.parse_args()
    bootstrap, redis_url = os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP"), os.environ.get("TOLLGATE_REDIS_URL")
    if not (bootstrap and redis_url):
        print("set TOLLGATE_KAFKA_BOOTSTRAP and TOLLGATE_REDIS_URL (source the stack's env)", file=sys.stderr)
        return 2
    import redis

    unique = "bench-restart-" + uuid.uuid4().hex[:8]
    work = Path(tempfile.mkdtemp(prefix="tollgate-restart-"))
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = {f"tx.events.{unique}": 4, f"tx.verdicts.{unique}": 4, f"tx.events.dlq.{unique}": 1}
    for f in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        f.result(60)
    events_t, verdicts_t, dlq_t = topics
    wenv = WorkerEnv(bootstrap, redis_url, unique, events_t, verdicts_t, dlq_t, models_dir=work / "models")
    save_fresh_model(wenv.models_dir, "v1")
    client = redis.Redis.from_url(redis_url)
    client.set(f"{wenv.key_prefix}:model:serving", "v1")
    stop = threading.Event()
    codec = Codec()
    stream = itertools.takewhile(lambda _: not stop.is_set(), itertools.chain.from_iterable(
        make_events(unique, 1_000, start=k * 1_000) for k in itertools.count()))
    producer = threading.Thread(target=produce_events, args=(bootstrap, events_t, stream, codec),
                                kwargs={"rate_per_s": args.rate}, daemon=True)
    producer.start()
    modes = args.modes.split(",")
    results: dict[str, dict[str, list[float]]] = {m: {} for m in modes}
    worker = None
    try:
        for rnd in range(args.rounds):
            for mode in modes:
                env = {"TOLLGATE_WORKER__STATIC_MEMBERSHIP": "true" if mode == "static" else "false",
                       "TOLLGATE_BATCH__INFER_PROCESS": args.infer_process}
                if worker is not None:
                    worker.stop_quietly()
                worker, first = _one_start(wenv, work, env)  # a start after a clean exit/kill
                worker.kill()  # SIGKILL mid-stream: open transaction, member still in the group
                worker, again = _one_start(wenv, work, env)
                for key, value in again.items():
                    results[mode].setdefault(key, []).append(value)
                print(f"round {rnd + 1} {mode}: first start {first['to_first_verdict_s']:.2f} s, restart "
                      f"{again['to_first_verdict_s']:.2f} s  "
                      + " ".join(f"{k}={v:.2f}" for k, v in again.items() if k != "to_first_verdict_s"), flush=True)
    finally:
        stop.set()
        if worker is not None:
            worker.stop_quietly()
        admin.delete_topics(list(topics))
        for key in client.scan_iter(f"{wenv.key_prefix}:*", count=5000):
            client.delete(key)
    print(f"\nrestart after SIGKILL, median of {args.rounds} (infer_process={args.infer_process}, {args.rate:g} events/s)")
    for mode in modes:
        r = results[mode]
        print(f"  {mode:8s} to first verdict {statistics.median(r['to_first_verdict_s']):6.2f} s  ("
              + ", ".join(f"{k} {statistics.median(r[k]):.2f}" for k in (*PHASES, "first_commit_after_ready_s"))
              + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
