"""The worker's start path imports no PyTorch before the pipeline loads: the model
process is spawned first so that its PyTorch import and the worker's overlap
(``engine.assemble.load_model_components``; ``ops/bench/restart.py`` times a start)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# What ``tollgate run`` imports before it builds the pipeline (engine/interfaces/commands/run.py).
START_PATH = """
import sys
import engine.interfaces.cli, engine.interfaces.commands.run
from engine.wire.redisconn import connect
from engine.assemble import load_model_components
from engine.stages.consume import FatalKafkaError
from engine.features import ContextSnapshot
from engine.observe.health import HealthServer, HealthState
from engine.worker.hotswap import LOADER_NICE, ModelWatcher
from engine.observe.metrics import EngineMetrics, configure_json_logging
from engine.worker.dedupe import ReSendFilter
from engine.worker.redis_hold import HoldingStore, RedisHold
from engine.worker.watchdog import EXIT_FATAL_KAFKA, ExitDeadline, StallWatchdog, hard_exit
from engine.worker.loop import Worker, WorkerOptions
from engine.worker.infer_process import spawn_model_process
import engine.worker.main
print(sorted(m for m in ("torch", "pandas", "pyarrow") if m in sys.modules))
"""


def test_the_worker_start_path_imports_no_pytorch_before_the_model_process_is_spawned():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", START_PATH], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
