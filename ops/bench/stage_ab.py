"""Two source trees' worker stages on the same batches, interleaved batch by batch.

    python ops/bench/stage_ab.py --before DIR [--after DIR] [--events 12000] [--batch 512]
                                 [--context memory|redis] [--model-dir DIR] [--warm-batches 2]

Why this exists: on this VM two runs of the same code minutes apart differ by more than
the changes being measured (docs/performance.md, "Stage costs A/B": sequential
comparisons there showed gains that did not hold). A change of a few percent is only seen
when both sides run seconds apart on the same input; run it A/A first. So each tree gets a long-lived process (its own
``PYTHONPATH`` and working directory, so each imports its own ``engine``), both build
the same pipeline (``engine.assemble.build_pipeline``), the same events
(``ops/bench/engine_events.py``, one seed, made by the driver and handed to both as JSON)
and the same model, and the driver hands them
batch *k* in turn, alternating which goes first. Each process times its own thread's CPU
per phase: decode (``engine.stages.decode``), prepare (enrich + encode), score (the
model, in process), finish (detect, decide, guard) and the verdicts' Avro encoding.

Printed: per phase, µs of thread CPU per event on each side and after ÷ before; and over
the batches, the median and quartiles of the paired ratio after ÷ before of the batch's
CPU without ``score`` (the model is the same code on both sides, and its time swings the
most). With ``--context redis`` each side records into its own key prefix of
``TOLLGATE_REDIS_URL`` (deleted after), so both see the same state evolve.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:
    from ops.bench import _common
REPO = _common.REPO

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import uuid

from ops.bench.engine_events import make_bench_events  # noqa: E402

PHASES = ("decode", "prepare", "score", "finish", "emit")

#: Run in each tree's own interpreter (``python -c``): only names both layouts have.
_SIDE = r"""
import json, sys, time
from pathlib import Path
args = json.loads(sys.argv[1])
from engine.assemble import build_pipeline
from engine.settings import RedisSettings, Settings
from engine.stages.consume import RawRecord
from engine.stages.decode import DecodeStage
from engine.wire.codec import JSON_HEADERS, Codec
from engine.records import TransactionEvent
settings = Settings()
if args["context"] == "redis":
    settings = settings.model_copy(update={"redis": RedisSettings(url=settings.redis.url, key_prefix=args["prefix"])})
pipeline = build_pipeline(settings, model=args["model_dir"], context=args["context"], record=args["context"] == "redis")
codec = Codec()
events = [(TransactionEvent.from_dict(d), as_json) for d, as_json in json.loads(Path(args["events_file"]).read_text())]
records = [RawRecord("tx.events", i % 6, i, e.customer_id.encode(),
                     codec.events.encode_json(e) if as_json else codec.encode_event(e),
                     list(JSON_HEADERS) if as_json else [], 0, time.time() * 1000.0)
           for i, (e, as_json) in enumerate(events)]
decode = DecodeStage(codec)
import gc
gc.collect()
gc.freeze()
print(json.dumps({"ready": len(records)}), flush=True)
for line in sys.stdin:
    k = int(line)
    chunk = records[k * args["batch"]:(k + 1) * args["batch"]]
    cpu = {}
    t = time.thread_time()
    decoded = decode(chunk)
    cpu["decode"], t = time.thread_time() - t, time.thread_time()
    prepared = pipeline.prepare(decoded.events, decoded.arrival_ms)
    cpu["prepare"], t = time.thread_time() - t, time.thread_time()
    scored = pipeline.score(prepared)
    cpu["score"], t = time.thread_time() - t, time.thread_time()
    verdicts = pipeline.finish(scored)
    cpu["finish"], t = time.thread_time() - t, time.thread_time()
    if hasattr(codec, "encode_verdicts"):  # from columns (since the verdicts became a VerdictBatch)
        codec.encode_verdicts(verdicts)
    else:
        for v in verdicts:
            codec.encode_verdict(v)
    cpu["emit"] = time.thread_time() - t
    print(json.dumps({"events": len(chunk), "cpu": cpu}), flush=True)
if args["context"] == "redis":
    import redis
    r = redis.Redis.from_url(settings.redis.url)
    for key in r.scan_iter(args["prefix"] + "*", count=1000):
        r.delete(key)
"""


class Side:
    """One tree's process; ``run(k)`` decides batch ``k`` there and returns its CPU."""

    def __init__(self, name: str, tree: Path, config: dict[str, object]):
        self.name = name
        env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-c", _SIDE, json.dumps(config)], cwd=str(tree), env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._reply()["ready"]

    def _reply(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}: the process ended (exit {self.proc.wait()})")
        return json.loads(line)

    def run(self, k: int) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{k}\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the tree before the change (git archive REF | tar -x -C DIR)")
    ap.add_argument("--after", default=str(REPO), help="the tree after it (default: this one)")
    ap.add_argument("--events", type=int, default=12000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--warm-batches", type=int, default=2, help="batches run first on both sides and not counted")
    ap.add_argument("--context", default="memory", choices=("memory", "redis"))
    ap.add_argument("--model-dir", required=True, help="a model directory both trees can serve")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made

    unique = uuid.uuid4().hex[:8]
    # Made here and handed to both sides: a side importing them from its own tree would
    # get that tree's mix (the shops' skew changed on 2026-12-07).
    events_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    with events_file:
        json.dump([[b.event.to_dict(), b.json] for b in make_bench_events("users", unique, args.events)], events_file)
    sides = []
    try:
        for name, tree in (("before", Path(args.before)), ("after", Path(args.after))):
            config = {"context": args.context, "model_dir": str(Path(args.model_dir).resolve()), "batch": args.batch,
                      "events_file": events_file.name, "prefix": f"tg-stage-ab-{unique}-{name}"}
            sides.append(Side(name, tree.resolve(), config))
        batches = -(-sides[0].ready // args.batch)
        totals = {s.name: dict.fromkeys(PHASES, 0.0) for s in sides}
        counted = 0
        ratios = []
        for k in range(batches):
            order = sides if k % 2 else sides[::-1]
            got = {s.name: s.run(k) for s in order}
            if k < args.warm_batches:
                continue
            counted += got["before"]["events"]
            for name, reply in got.items():
                for phase in PHASES:
                    totals[name][phase] += reply["cpu"][phase]
            without = {n: sum(r["cpu"][p] for p in PHASES if p != "score") for n, r in got.items()}
            ratios.append(without["after"] / without["before"])
    finally:
        for s in sides:
            s.close()
        Path(events_file.name).unlink()

    print(f"{counted} events in {len(ratios)} batches of {args.batch} (after {args.warm_batches} warm), "
          f"context {args.context}; thread CPU µs per event, batches interleaved")
    print(f"  {'phase':10s} {'before':>8s} {'after':>8s} {'after/before':>13s}")
    for phase in (*PHASES, "all but score"):
        if phase == "all but score":
            b, a = (sum(totals[n][p] for p in PHASES if p != "score") for n in ("before", "after"))
        else:
            b, a = totals["before"][phase], totals["after"][phase]
        print(f"  {phase:10s} {b * 1e6 / counted:8.1f} {a * 1e6 / counted:8.1f} {a / b if b else float('nan'):13.3f}")
    q = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else [ratios[0]] * 3
    print(f"per-batch paired ratio after/before, all but score: median {statistics.median(ratios):.3f} "
          f"(quartiles {q[0]:.3f}–{q[2]:.3f}, {len(ratios)} batches)")


if __name__ == "__main__":
    main()
