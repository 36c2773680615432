"""The verdict stream around a model hot swap: the largest gap between consecutive
verdicts near each swap, at 250 and 1,000 events/s, with and without the model process.

    eval "$(ops/stack up)"   # or export TOLLGATE_KAFKA_BOOTSTRAP and TOLLGATE_REDIS_URL
    OMP_NUM_THREADS=1 python ops/bench/hotswap.py --swaps 5

Needs the broker and Redis (TOLLGATE_KAFKA_BOOTSTRAP, TOLLGATE_REDIS_URL). For each
mode and rate: a worker (``tollgate run``) serves v1 while events stream at the rate;
the serving pointer is moved ``--swaps`` times (v2, v3, ...; published on the registry
channel, as a promotion is), each once the previous swap has been followed by a few
seconds of stream. Then every verdict is read back (read_committed) and, per swap, the
largest gap between consecutive ``decided_at_ms`` from 0.5 s before the pointer moved
(loading happens in between) to 3 s after the worker logged the swap is compared with the largest gap in stretches away from any swap (the
stream's own jitter at that rate). Printed: per swap the gap, then per mode and rate
the p99 (nearest rank) over swaps of the around-swap gap, the baseline, and the p99 of
the largest gap in no-swap windows of the same length (the stretches between one swap's
window and the next load; give them room with ``--settle-s`` of 8 or more).

    OMP_NUM_THREADS=1 python ops/bench/hotswap.py --modes import-control --rates 250

``import-control``: the same stream with the model process on and no swap at all;
instead, at each swap's moment, an unrelated process imports PyTorch and the inference
code at the loader's nice level (what a hot-swapped model process does first), and the
window runs from 0.5 s before it started to 3 s after it ended. It separates what the
machine pays for a second PyTorch import from what the worker's own swap path costs.

    OMP_NUM_THREADS=1 python ops/bench/hotswap.py --modes model-process,onnx-model-process --rates 250,1000

``onnx-in-process`` / ``onnx-model-process``: every version is exported to ONNX
(``tollgate model export``'s code) and served as the graph on NumPy arrays
(``TOLLGATE_MODEL__RUNTIME=onnx``, ``engine.stages.infer_arrays``): no PyTorch import
in the worker, its model process or a swap's new one.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)
from _common import percentile

from engine.wire.codec import Codec
from tests.support.worker_support import (
    WorkerProcess,
    bench_worker_env,
    make_events,
    produce_events,
    read_verdicts,
    save_fresh_model,
)

#: The window of a swap: from this long before the pointer moved (so loading the new
#: model in the background is inside it) to this long after the worker swapped.
BEFORE_MS, AFTER_MS = 500, 3_000


def _largest_gap(times: list[float], lo: float, hi: float) -> float:
    return _largest_gap_at(times, lo, hi)[0]


def _largest_gap_at(times: list[float], lo: float, hi: float) -> tuple[float, float]:
    """The largest gap between consecutive times inside [lo, hi], and when it ended."""
    inside = [t for t in times if lo <= t <= hi]
    return max(((b - a, b) for a, b in zip(inside, inside[1:])), default=(float("nan"), float("nan")))


def _unrelated_import() -> None:
    """What a hot-swapped model process does first, in a process the worker knows nothing of."""
    # local: the bench reads the loader's nice level from the product, not a copy of it
    from engine.worker.hotswap import LOADER_NICE

    subprocess.run(["nice", "-n", str(LOADER_NICE), sys.executable, "-c",
                    "import torch; from engine.stages.infer import Inference"],
                   cwd=_common.REPO, check=True, timeout=300)


def run_one(bootstrap: str, redis_url: str, infer_process: bool, rate: float, swaps: int, settle_s: float,
            work: Path, control: bool = False, onnx: bool = False) -> dict:
    unique = "bench-swap-" + uuid.uuid4().hex[:8]
    cleanup = contextlib.ExitStack()  # topics and keys go when the run ends
    wenv, client = cleanup.enter_context(bench_worker_env(bootstrap, redis_url, unique, work / unique))
    events_t, verdicts_t = wenv.events, wenv.verdicts
    for i in range(1, swaps + 2):
        if onnx:  # the registry's v{i} is the exported graph (its card's version: v{i}-onnx-fp32)
            from engine.model.export import export_model_dir  # local: only for the onnx modes

            export_model_dir(save_fresh_model(work / unique / "sources", f"v{i}", seed=i),
                             wenv.models_dir / f"v{i}", "onnx", "fp32", samples=32)
        else:
            save_fresh_model(wenv.models_dir, f"v{i}", seed=i)
    codec = Codec()
    stop = threading.Event()
    produced: list[int] = []
    stream = itertools.takewhile(lambda _: not stop.is_set(), itertools.chain.from_iterable(
        make_events(unique, 1_000, start=k * 1_000) for k in itertools.count()))
    worker = WorkerProcess(wenv, "w1", work, "--hot-swap-check-s", "60",
                           TOLLGATE_BATCH__INFER_PROCESS="true" if infer_process else "false",
                           TOLLGATE_MODEL__RUNTIME="onnx" if onnx else "auto")
    swap_ms: list[float] = []
    moved_ms: list[float] = []
    try:
        worker.wait_for("worker ready", timeout=300)
        producer = threading.Thread(target=lambda: produced.append(
            produce_events(bootstrap, events_t, stream, codec, rate_per_s=rate)), daemon=True)
        producer.start()
        time.sleep(settle_s)  # a stretch with no swap: the baseline
        for i in range(2, swaps + 2):
            moved_ms.append(time.time() * 1000)
            if control:  # no swap: an unrelated PyTorch import instead (import-control)
                _unrelated_import()
                swap_ms.append(time.time() * 1000)
                time.sleep(settle_s)
                continue
            client.set(f"{wenv.key_prefix}:model:serving", f"v{i}")
            client.publish(f"{wenv.key_prefix}:model:events", json.dumps({"version": f"v{i}", "action": "promote"}))
            deadline = time.monotonic() + 300
            while not [m for m in worker.logged("model swapped") if m.get("version") == f"v{i}"]:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no swap to v{i}:\n{worker.tail()}")
                time.sleep(0.2)
            swapped = [m for m in worker.logged("model swapped") if m.get("version") == f"v{i}"][-1]
            swap_ms.append(float(swapped["ts"]) * 1000)
            time.sleep(settle_s)  # the stream after the swap (and before the next load starts)
        stop.set()
        producer.join(60)
        verdicts = read_verdicts(bootstrap, verdicts_t, produced[0], codec, timeout=300, settle_s=2)
    finally:
        stop.set()
        worker.terminate()
        cleanup.close()
    times = sorted(v.decided_at_ms for v in verdicts)
    gaps = [_largest_gap_at(times, m - BEFORE_MS, s + AFTER_MS) for m, s in zip(moved_ms, swap_ms)]
    around = [gap for gap, _ in gaps]
    # where each largest gap ended, from the swap (negative: while the new model loaded)
    gap_end_ms = [round(end - s) for (_, end), s in zip(gaps, swap_ms)]
    start = times[0] + 1_000  # the baseline: the first settle stretch, after a second of warm-up
    baseline = _largest_gap(times, start, moved_ms[0] - BEFORE_MS)
    # The same stream's stretches away from any swap (after a swap's window, before the
    # next load), each as long as the median swap window, so that "the largest gap in a
    # window" compares like with like: a longer window holds larger gaps by chance.
    width = sorted(s + AFTER_MS - (m - BEFORE_MS) for m, s in zip(moved_ms, swap_ms))[len(swap_ms) // 2]
    quiet = [(start, moved_ms[0] - BEFORE_MS)] + [
        (s + AFTER_MS, nxt - BEFORE_MS) for s, nxt in zip(swap_ms, [*moved_ms[1:], times[-1]])]
    no_swap_windows = [_largest_gap(times, lo, lo + width) for lo, hi in quiet if hi - lo >= width]
    load_s = [round((s - m) / 1000, 2) for m, s in zip(moved_ms, swap_ms)]
    versions = sorted({v.model_version for v in verdicts})
    return {"around": around, "gap_end_ms": gap_end_ms, "baseline": baseline, "no_swap_windows": no_swap_windows,
            "load_s": load_s, "verdicts": len(verdicts), "produced": produced[0],
            "versions": versions}


def main() -> int:
    # A SIGTERM must still run the clean-up below (stop the workers, delete the topics).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--swaps", type=int, default=5)
    ap.add_argument("--rates", default="250,1000")
    ap.add_argument("--modes", default="in-process,model-process",
                    help="in-process, model-process, onnx-in-process, onnx-model-process, import-control "
                         "(no swap: an unrelated PyTorch import)")
    ap.add_argument("--settle-s", type=float, default=6.0, help="stream seconds before the first swap and after each")
    args = ap.parse_args()
    stack = _common.stack_from_env()
    if stack is None:
        return 2
    bootstrap, redis_url = stack
    work = Path(tempfile.mkdtemp(prefix="tollgate-hotswap-"))
    rows = []
    for rate in (float(r) for r in args.rates.split(",")):
        for mode in args.modes.split(","):
            r = run_one(bootstrap, redis_url, not mode.endswith("in-process"), rate, args.swaps, args.settle_s, work,
                        control=mode == "import-control", onnx=mode.startswith("onnx-"))
            print(f"{mode:18s} {rate:6.0f}/s: largest gap around each swap (ms) "
                  f"{', '.join(f'{g:.0f}' for g in r['around'])}; baseline {r['baseline']:.0f} ms; "
                  f"no-swap windows of the same length {', '.join(f'{g:.0f}' for g in r['no_swap_windows'])} ms; "
                  f"gap ended at {r['gap_end_ms']} ms from the swap; pointer to swap {r['load_s']} s; "
                  f"{r['verdicts']}/{r['produced']} verdicts, "
                  f"versions {r['versions']}", flush=True)
            rows.append((mode, rate, r))
    print(f"\np99 (nearest rank) over {args.swaps} swaps of the largest verdict gap from "
          f"{BEFORE_MS / 1000:g} s before the pointer moved to {AFTER_MS / 1000:g} s after the swap")
    for mode, rate, r in rows:
        print(f"  {mode:18s} {rate:6.0f} events/s  around swap p99 {percentile(r['around'], 99):6.0f} ms   "
              f"no swap {r['baseline']:6.0f} ms   no-swap windows p99 "
              f"{percentile(r['no_swap_windows'], 99) if r['no_swap_windows'] else float('nan'):6.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
