"""A worker caps NumPy's BLAS threads at ``settings.batch.blas_threads`` (1 by default):
its own process shares the host's cores with the model process, the broker and Redis.
Here, not in tests/unit: the cap is process-wide, so each check runs in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys

from engine.settings import Settings

_PROBE = """
import json, sys
import numpy  # noqa: F401  (loads the BLAS library to cap)
from threadpoolctl import threadpool_info
from engine.worker.main import limit_blas_threads
before = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
limit_blas_threads(int(sys.argv[1]))
after = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({"before": before, "after": after}))
"""


def _probe(threads: int) -> dict[str, list[int]]:
    # A process of its own: the cap is process-wide and must not reach the test session.
    out = subprocess.run([sys.executable, "-c", _PROBE, str(threads)], capture_output=True, text=True,
                         check=True, env={"OPENBLAS_NUM_THREADS": "2", "PATH": ""}, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_worker_caps_blas_threads_by_default():
    assert Settings().batch.blas_threads == 1
    seen = _probe(1)
    assert seen["before"] and all(n == 2 for n in seen["before"])  # the library's own choice
    assert all(n == 1 for n in seen["after"])


def test_zero_leaves_the_library_default():
    seen = _probe(0)
    assert seen["after"] == seen["before"]
