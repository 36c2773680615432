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


# A worker that sends every batch to its model process (process_min_rows 1) builds its
# pipeline and decides events, in a process that never imports PyTorch.
WORKER_PIPELINE = """
import sys
from engine.assemble import build_pipeline, scores_in_process
from engine.settings import Settings
from engine.worker.warmup import synthetic_events
settings = Settings()
assert not scores_in_process(settings.batch)
pipeline = build_pipeline(settings, model=sys.argv[1], model_process=settings.batch)
events = synthetic_events(40)
verdicts = pipeline.decide_batch(events, [0.0] * len(events))
assert len(verdicts) == 40 and all(v.model_version == "sv1" for v in verdicts), verdicts[:1]
print(type(pipeline.components.encoder).__name__, type(pipeline.components.inference).__name__)
print(sorted(m for m in ("torch",) if m in sys.modules))
"""


def test_a_worker_whose_model_runs_in_its_model_process_never_imports_pytorch(tmp_path):
    # local: this test module's own process may import PyTorch; the worker under test must not
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.stages.encode import FieldIsolatedEncoder

    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="sv1", seed=3)
    model_dir = save_model_dir(model, card, tmp_path / "sv1")
    assert _last_lines(WORKER_PIPELINE, model_dir, TOLLGATE_BATCH__PROCESS_MIN_ROWS="1") == [
        "ArrayEncoder ProcessInference", "[]"]


def _last_lines(script: str, model_dir: Path, **settings: str) -> list[str]:
    """The last two lines ``script`` prints, run on ``model_dir`` in a fresh interpreter
    with the model process on and ``settings`` in its environment."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "TOLLGATE_BATCH__INFER_PROCESS": "true", **settings}
    out = subprocess.run([sys.executable, "-c", script, str(model_dir)], env=env, cwd=REPO,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-2:]


# A worker serving an exported ONNX graph (the card names it; the default runtime, auto)
# with its default split (small batches here, large ones in the model process): PyTorch
# is imported by neither process, the child prestarted as `tollgate run` does included
# (engine.model.locate.serving_runtime, engine.stages.infer_arrays).
ONNX_WORKER = """
import sys
from engine.model.locate import serving_runtime
from engine.settings import Settings
from engine.worker.infer_process import prestart_model_process
assert serving_runtime(Settings(), sys.argv[1]) == "onnx"
prestart_model_process(serving_runtime(Settings(), sys.argv[1]))
from engine.assemble import build_pipeline
from engine.model.registry import serving_key  # the registry (hot swap) reads no PyTorch either
from engine.worker.warmup import synthetic_events
settings = Settings()
pipeline = build_pipeline(settings, model=sys.argv[1], model_process=settings.batch)
inference = pipeline.components.inference
for n in (3, 150):  # one batch scored here, one in the model process
    events = synthetic_events(n)
    verdicts = pipeline.decide_batch(events, [0.0] * n)
    assert len(verdicts) == n and all(v.model_version == "ov1-onnx-fp32" for v in verdicts), verdicts[:1]
child = inference.remote._child
maps = open(f"/proc/{child.pid}/maps").read()
print(type(pipeline.components.encoder).__name__, type(inference.local).__name__, type(inference.remote).__name__)
print(sorted(m for m in ("torch",) if m in sys.modules), "libtorch" in maps)
"""


def test_a_worker_serving_an_onnx_graph_imports_pytorch_in_neither_process(tmp_path):
    # local: this test module's own process may import PyTorch; the worker under test must not
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.model.export import export_model_dir
    from engine.stages.encode import FieldIsolatedEncoder

    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="ov1", seed=3)
    source = save_model_dir(model, card, tmp_path / "ov1")
    model_dir = export_model_dir(source, tmp_path / "ov1-onnx-fp32", "onnx", "fp32", samples=32).path
    assert _last_lines(ONNX_WORKER, model_dir, TOLLGATE_BATCH__PROCESS_MIN_ROWS="64",
                       TOLLGATE_MODEL__RUNTIME="auto") == ["ArrayEncoder OnnxArrayInference ProcessInference",
                                                           "[] False"]
