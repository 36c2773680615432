"""The engine benchmark's CPU accounting (``ops/bench/engine_io.machine_cpu``): a worker
and its child processes are counted in the worker group. Starts real processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from ops.bench.engine_io import machine_cpu
from tests.support.worker_support import child_processes

pytestmark = pytest.mark.integration


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
    assert set(before) == {"worker", "worker_main", "worker_model", "broker", "redis", "bench", "outcomes", "other",
                           "idle"}
    assert after["worker"] - before["worker"] >= 0.3
    # the busy child is the worker's child: counted as its model process, and in the worker's total
    assert after["worker_model"] - before["worker_model"] >= 0.3
    assert after["worker"] == pytest.approx(after["worker_main"] + after["worker_model"])
    assert after["bench"] - before["bench"] >= 0.15
    assert after["idle"] >= before["idle"]



def test_machine_cpu_counts_the_outcomes_child_apart():
    """``ops/bench/engine_outcomes.py`` (the feedback worker's stand-in during a run) is its
    own group, not "other"."""
    busy = ("import time; t = time.process_time()\n"
            "while time.process_time() - t < 0.4: pass\n"
            "time.sleep(60)")
    stand_in = subprocess.Popen([sys.executable, "-c", busy, "ops/bench/engine_outcomes.py"])
    try:
        no_worker = -1  # the stand-in is this process's child: not a worker's here
        before = machine_cpu(no_worker)
        deadline = time.monotonic() + 20  # its busy 0.4 s, on a busy machine
        while True:
            after = machine_cpu(no_worker)
            if after["outcomes"] - before["outcomes"] >= 0.35 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        stand_in.kill()
        stand_in.wait(10)
    assert after["outcomes"] - before["outcomes"] >= 0.2
