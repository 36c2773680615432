"""The engine benchmark's own logic: the sweep's recommendation and the CPU accounting
that docs/performance.md's "where the cores went" table comes from (``ops/bench``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ops.bench.engine_io import machine_cpu
from ops.bench.engine_report import RunResult, recommend
from tests.integration.worker_support import child_processes


def _run(b: int, w: float, offered: float | None, throughput: float, p99: float = float("nan")) -> RunResult:
    latencies = [] if offered is None else [p99] * 100
    return RunResult(f"sweep B={b} W={w:g}", offered, 1000, throughput, latencies, {}, float(b))


def test_recommend_takes_the_best_median_saturation_and_then_the_best_w_for_that_b(capsys):
    results = [
        # B=512 has one bad saturation run but the better median; B=128 one lucky run.
        _run(128, 5, None, 3_500), _run(128, 5, None, 1_800), _run(128, 5, None, 1_900),
        _run(512, 5, None, 1_700), _run(512, 5, None, 2_700), _run(512, 5, None, 2_800),
        _run(512, 10, None, 2_000), _run(512, 10, None, 2_100), _run(512, 10, None, 2_200),
        _run(128, 5, 1000.0, 1000, p99=100), _run(128, 5, 1000.0, 1000, p99=100),
        _run(512, 5, 1000.0, 1000, p99=400), _run(512, 5, 1000.0, 1000, p99=300),
        # W=10 has the lowest p99 with B=512, once: its median is higher.
        _run(512, 10, 1000.0, 1000, p99=50), _run(512, 10, 1000.0, 1000, p99=900),
        _run(512, 10, 1000.0, 1000, p99=800),
    ]
    recommend(results)
    out = capsys.readouterr().out
    assert "recommended settings.batch: max_events=512 (best median saturation 2700 ev/s)" in out
    assert "max_wait_ms=5 (best median p99 at 1000 ev/s with B=512: 350.0 ms)" in out


def test_recommend_does_not_choose_w_from_runs_that_fell_behind(capsys):
    results = [_run(256, 5, None, 2_000), _run(256, 5, 1000.0, 700, p99=90)]  # 700 of 1000 ev/s
    recommend(results)
    assert "max_wait_ms=5 (no run with that B kept up" in capsys.readouterr().out


def test_machine_cpu_puts_the_worker_and_its_children_in_the_worker_group():
    # A stand-in "worker" whose own child spends ~0.5 s of CPU and then stays alive, as
    # the worker's model process does; this process spends ~0.2 s (the "bench" group).
    child = ("import time; t = time.process_time()\n"
             "while time.process_time() - t < 0.5: pass\n"
             "time.sleep(60)")
    worker = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {child!r}]).wait()"])
    try:
        before = machine_cpu(worker.pid)
        t = time.process_time()
        while time.process_time() - t < 0.2:
            pass
        deadline = time.monotonic() + 20  # the child's busy half-second, on a busy machine
        while True:
            after = machine_cpu(worker.pid)
            if after["worker"] - before["worker"] >= 0.45 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        for pid in child_processes(worker.pid):
            os.kill(pid, 9)
        worker.kill()
        worker.wait(10)
    assert set(before) == {"worker", "broker", "redis", "bench", "other", "idle"}
    assert after["worker"] - before["worker"] >= 0.3
    assert after["bench"] - before["bench"] >= 0.15
    assert after["idle"] >= before["idle"]

