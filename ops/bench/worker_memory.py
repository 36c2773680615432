"""Memory of one worker and its model process, by ``settings.batch.process_min_rows``.

    python ops/bench/worker_memory.py                       # a fresh model of the default architecture
    python ops/bench/worker_memory.py --model-dir DIR --rows 1,64

For each setting a separate process assembles the pipeline as ``tollgate run`` does
(``build_pipeline(..., model_process=settings.batch)``), decides synthetic batches of
1, 100 and 512 events (so both processes have run forward passes at the sizes a stream
sends), and reports the resident and proportional set size (``/proc/<pid>/smaps_rollup``:
PSS splits shared library pages between the processes that map them) of the worker and
of its model process, and whether the worker imported PyTorch. With 1, every batch goes
to the model process and the worker holds neither PyTorch nor a copy of the model.
``swapped``: the same after one hot swap, with the replaced model process kept as the
spare (``settings.batch.spare_model_process``).
No broker or Redis: the context is the in-memory store.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

REPO = Path(__file__).resolve().parents[2]

MEASURE = """
import os, sys
from pathlib import Path
from engine.assemble import build_pipeline, load_model_components
from engine.settings import BatchSettings, Settings
from engine.worker import infer_process
from engine.worker.warmup import synthetic_events

batch = BatchSettings(process_min_rows=int(sys.argv[2]))
pipeline = build_pipeline(Settings(), model=sys.argv[1], model_process=batch)


def decide():
    for n in (1, 100, 512):
        events = synthetic_events(n)
        pipeline.decide_batch(events, [0.0] * n)


decide()
spare = None
if sys.argv[3] == "swapped":  # one hot swap (to the same directory): the old model process becomes the spare
    pipeline.swap(**load_model_components(Path(sys.argv[1]), pipeline.components.encoder, model_process=batch))
    decide()
    spare = infer_process._prestarted.pid


def kib(pid, path, key):
    with open(f"/proc/{pid}/{path}") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(key))


inference = pipeline.components.inference
child = getattr(inference, "remote", inference)._child.pid
me = os.getpid()
print(kib(me, "status", "VmRSS:"), kib(me, "smaps_rollup", "Pss:"), kib(child, "status", "VmRSS:"),
      kib(child, "smaps_rollup", "Pss:"), kib(spare, "smaps_rollup", "Pss:") if spare else 0, int("torch" in sys.modules))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model-dir", default=None, help="a model directory (default: a fresh model, default architecture)")
    ap.add_argument("--rows", default="1,64", help="process_min_rows values to compare")
    ap.add_argument("--states", default="started,swapped",
                    help="started: as a worker starts; swapped: after one hot swap, with the spare model process")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tollgate-memory-") as tmp:
        model_dir = args.model_dir or _fresh_model(Path(tmp))
        env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
        print(f"model {model_dir}")
        print(f"{'process_min_rows':>16} {'state':>8} {'worker RSS':>11} {'worker PSS':>11} {'model RSS':>10} "
              f"{'model PSS':>10} {'spare PSS':>10} {'sum PSS':>8}  worker imports PyTorch")
        for rows in args.rows.split(","):
            for state in args.states.split(","):
                out = subprocess.run([sys.executable, "-c", MEASURE, str(model_dir), rows, state], env=env,
                                     cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
                w_rss, w_pss, m_rss, m_pss, s_pss, torch = (int(x) for x in out.stdout.split()[-6:])
                print(f"{rows:>16} {state:>8} {w_rss / 1024:>8.0f} MB {w_pss / 1024:>8.0f} MB "
                      f"{m_rss / 1024:>7.0f} MB {m_pss / 1024:>7.0f} MB {s_pss / 1024:>7.0f} MB "
                      f"{(w_pss + m_pss + s_pss) / 1024:>5.0f} MB  {'yes' if torch else 'no'}")
    return 0


def _fresh_model(tmp: Path) -> Path:
    # local: only this process needs PyTorch to write a model; the measured ones import what they import
    from engine.model import InputSpec, fresh_model, save_model_dir
    from engine.stages.encode import FieldIsolatedEncoder

    model, card = fresh_model(InputSpec.from_schema(FieldIsolatedEncoder().schema), version="mem1", seed=1)
    return Path(save_model_dir(model, card, tmp / "mem1"))


if __name__ == "__main__":
    sys.exit(main())
