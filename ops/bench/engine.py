"""End-to-end benchmark of the engine worker through the real broker (and Redis).

    python ops/bench/engine.py                      # default B/W: fixed rates + saturation,
                                                    # with the model and with it removed
    python ops/bench/engine.py --sweep              # also try other (B, W) and say which wins
    python ops/bench/engine.py --modes              # also: no close-when-idle; the model in the
                                                    # worker's process; torch threads per core
    python ops/bench/engine.py --rates 500 1000 --duration 20 --saturation-events 20000

What is measured, and how:

* The worker runs as a real subprocess (``tollgate run``) on its own topics, group and
  Redis prefix, so its CPU, GIL and sockets are its own. This process produces events
  and reads verdicts.
* **End-to-end latency** = the moment a read_committed consumer here receives the
  verdict − the moment the event was produced (the event's ``event_time_ms`` is set to
  the produce time). It includes the producer's send, the broker, the worker's batch
  wait, decision, transaction commit, and the reader's fetch: what a downstream
  consumer sees.
* **Per-stage breakdown** is scraped from the worker's own ``/metrics`` (histogram
  sums / counts per stage, per batch), before and after each run. Stages are wall
  time, and the worker overlaps batches (a transaction commits while the next batch is
  decided), so they do not add up to the time per batch.
* **Worker CPU per event** (``cpu/ev``): user + system CPU of the worker process (and
  of its model process, in that mode) over the run (``/proc``), divided by the events
  it decided. On a machine whose cores are
  shared with the broker, Redis, this load generator and anything else, events/s
  swing with the neighbours; CPU per event is what the worker itself costs.
* **Fixed rates**: events are paced at R events/s for D seconds; the first second is
  dropped (warm caches, first rebalance). **Saturation**: the topic is pre-filled with
  N events before the worker joins; events/s = N / (last verdict − first verdict).
* **Model removed**: the same loop with ``inference`` swapped for a constant stub of the
  same output shape; the ratio shows what the model costs.

Figures depend on the machine; the README quotes a run with the command that made it.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:  # imported as ops.bench.engine: the worker loads its pipeline factories from here
    from ops.bench import _common
REPO = _common.REPO
percentile = _common.percentile

import argparse
import json
import os
import uuid
from dataclasses import dataclass, field

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from engine.codec import Codec  # noqa: E402
from ops.bench.engine_io import VerdictReader, cpu_seconds, produce_timed, scrape  # noqa: E402

STAGES = ("decode", "enrich", "encode", "infer", "detect", "decide", "guard", "emit")
#: ``--modes``: the default worker against one setting changed (settings.batch).
MODES = {"fixed-W": {"TOLLGATE_BATCH__CLOSE_WHEN_IDLE": "false"},
         "one-process": {"TOLLGATE_BATCH__INFER_PROCESS": "false"},
         "one-process-infer-thread": {"TOLLGATE_BATCH__INFER_PROCESS": "false", "TOLLGATE_BATCH__INFER_THREAD": "true"},
         "torch-threads-per-core": {"TOLLGATE_BATCH__TORCH_THREADS": "0"}}


# -- the model-removed pipeline (loaded by the worker subprocess via --pipeline) ----------

class ConstantInference:
    """Same output shapes as ``engine.infer.Inference``, no model: what the loop costs alone."""

    version = "no-model"

    def __call__(self, batch):
        import torch

        from engine.infer import ModelOutputs

        n = int(batch.control_numeric.shape[0])
        probs = torch.tensor([[0.9, 0.07, 0.03]]).expand(n, 3)
        return ModelOutputs(probs, torch.zeros(n), torch.zeros(n, dtype=torch.long), self.version)


def no_model_pipeline(settings, *, model=None):
    from engine.commands.run import build_worker_pipeline

    pipeline = build_worker_pipeline(settings, model=model)
    pipeline.swap(inference=ConstantInference(), model_version="no-model")
    return pipeline


def model_pipeline(settings, *, model=None):
    from engine.commands.run import build_worker_pipeline

    return build_worker_pipeline(settings, model=model)


# -- one run ------------------------------------------------------------------------------

@dataclass
class RunResult:
    label: str
    offered: float | None  # events/s, None = saturation
    events: int
    throughput: float
    latencies_ms: list[float] = field(repr=False)
    stage_ms_per_batch: dict[str, float]
    mean_batch: float
    #: The worker's own view (means): produce → commit, and arrival at the worker → commit.
    produce_to_commit_ms: float = float("nan")
    arrival_to_commit_ms: float = float("nan")
    #: CPU time (user + system, all threads) the worker process spent per decided event,
    #: in µs: what the loop costs, less sensitive than events/s to other processes on
    #: the same cores.
    cpu_us_per_event: float = float("nan")

    def pct(self, q: float) -> float:
        return percentile(self.latencies_ms, q) if self.latencies_ms else float("nan")


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.bootstrap = os.environ.get("TOLLGATE_KAFKA_BOOTSTRAP", "127.0.0.1:9092")
        self.redis_url = os.environ.get("TOLLGATE_REDIS_URL", "redis://127.0.0.1:6379/0")
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        self.codec = Codec()
        self.workdir = Path(args.workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.models_dir = self.workdir / "models"
        if not (self.models_dir / "bench-v1").exists():
            from tests.integration.worker_support import save_fresh_model

            save_fresh_model(self.models_dir, "bench-v1")

    def run(self, label: str, pipeline: str, batch: tuple[int, float], rate: float | None,
            env: dict[str, str] | None = None) -> RunResult:
        from tests.integration.worker_support import WorkerEnv, WorkerProcess, make_events, produce_events

        u = uuid.uuid4().hex[:8]
        topics = {k: f"bench.{k}.{u}" for k in ("events", "verdicts", "dlq")}
        fs = self.admin.create_topics([NewTopic(t, self.args.partitions, 1) for t in topics.values()])
        for f in fs.values():
            f.result(30)
        wenv = WorkerEnv(self.bootstrap, self.redis_url, u, topics["events"], topics["verdicts"], topics["dlq"],
                         self.models_dir, extra={"TOLLGATE_BATCH__MAX_EVENTS": str(batch[0]),
                                                 "TOLLGATE_BATCH__MAX_WAIT_MS": str(batch[1]), **(env or {})})
        n = self.args.saturation_events if rate is None else int(rate * self.args.duration)
        events = make_events(u, n)
        if rate is None:  # pre-fill: the worker starts with a full backlog
            produce_events(self.bootstrap, topics["events"], events, self.codec)
        worker = WorkerProcess(wenv, label.replace(" ", "_"), self.workdir, "--model",
                               str(self.models_dir / "bench-v1"), "--no-hot-swap", "--pipeline", pipeline)
        reader = VerdictReader(self.bootstrap, topics["verdicts"], n)
        try:
            worker.wait_for("worker ready", timeout=180)
            port = worker.health_port
            before = scrape(port)
            before[("cpu_seconds", "")] = cpu_seconds(worker.proc.pid)
            reader.start()
            if rate is not None:
                produce_timed(self.bootstrap, topics["events"], events, self.codec, rate)
            reader.join(timeout=self.args.timeout)
            after = scrape(port)
            after[("cpu_seconds", "")] = cpu_seconds(worker.proc.pid)
        finally:
            worker.terminate()
            reader.stop()
            for f in self.admin.delete_topics(list(topics.values())).values():
                try:
                    f.result(30)
                except Exception:  # noqa: BLE001
                    pass
        return self._result(label, rate, n, reader, before, after)

    @staticmethod
    def _result(label, rate, n, reader, before, after) -> RunResult:
        got = reader.received
        lat: list[float] = []
        if rate is not None:  # saturation has no meaningful latency: the backlog is the point
            skip_until = got[0][0] + 1000.0 if got else 0
            lat = [recv - sent for recv, sent in got if recv >= skip_until]
        span_s = (got[-1][0] - got[0][0]) / 1000.0 if len(got) > 1 else float("nan")
        throughput = (len(got) - 1) / span_s if len(got) > 1 else 0.0
        batches = after.get(("tollgate_batch_size_count", ""), 0) - before.get(("tollgate_batch_size_count", ""), 0)
        events = after.get(("tollgate_batch_size_sum", ""), 0) - before.get(("tollgate_batch_size_sum", ""), 0)
        stages = {}
        for st in STAGES:
            s = after.get(("tollgate_stage_latency_ms_sum", st), 0) - before.get(("tollgate_stage_latency_ms_sum", st), 0)
            c = after.get(("tollgate_stage_latency_ms_count", st), 0) - before.get(("tollgate_stage_latency_ms_count", st), 0)
            stages[st] = s / c if c else 0.0
        def mean(name: str) -> float:
            c = after.get((name + "_count", ""), 0) - before.get((name + "_count", ""), 0)
            return (after.get((name + "_sum", ""), 0) - before.get((name + "_sum", ""), 0)) / c if c else float("nan")

        if len(got) < n:
            print(f"  ! {label}: only {len(got)} of {n} verdicts arrived", file=sys.stderr)
        cpu_s = after[("cpu_seconds", "")] - before[("cpu_seconds", "")]
        return RunResult(label, rate, len(got), throughput, lat, stages, events / batches if batches else 0.0,
                         mean("tollgate_e2e_from_event_time_ms") if rate is not None else float("nan"),
                         mean("tollgate_e2e_from_arrival_ms"),
                         cpu_s * 1e6 / events if events else float("nan"))


LEGEND = ("p50/p95/p99: produce -> verdict read by a read_committed consumer (ms); p2c / a2c: the worker's "
          "mean produce -> commit / arrival -> commit (ms); cpu/ev: worker CPU µs per event (all threads); "
          "batch: mean events per batch; stages: mean wall ms per batch (stages of different batches overlap)")


def _print(results: list[RunResult]) -> None:
    print(f"{'run':22} {'offered':>7} {'ev/s':>6} {'p50':>7} {'p95':>7} {'p99':>7} {'p2c':>6} {'a2c':>6} "
          f"{'cpu/ev':>6} {'batch':>5}  " + " ".join(f"{s:>6}" for s in STAGES))
    for r in results:
        offered = "sat" if r.offered is None else f"{r.offered:g}"
        print(f"{r.label:22} {offered:>7} {r.throughput:6.0f} {r.pct(50):7.1f} {r.pct(95):7.1f} {r.pct(99):7.1f} "
              f"{r.produce_to_commit_ms:6.1f} {r.arrival_to_commit_ms:6.1f} {r.cpu_us_per_event:6.0f} "
              f"{r.mean_batch:5.1f}  " + " ".join(f"{r.stage_ms_per_batch[s]:6.2f}" for s in STAGES))


def _recommend(results: list[RunResult]) -> None:
    """B only matters once batches fill (under load): take the B with the best saturation
    throughput. W only matters when they do not (light load): take the W with the lowest
    p99 at the 1,000 events/s target. Printed, so the choice is reproducible."""
    sat = [r for r in results if r.offered is None and r.label.startswith("model ")]
    at_target = [r for r in results if r.offered == 1000.0 and r.label.startswith("model ")]
    if not sat or not at_target:
        return
    best_b = max(sat, key=lambda r: r.throughput)
    b = best_b.label.split("B=")[1].split()[0]
    kept_up = [r for r in at_target if r.throughput >= 0.95 * 1000.0]
    if kept_up:
        best_w = min(kept_up, key=lambda r: r.pct(99))
        w = best_w.label.split("W=")[1].split()[0]
        why_w = f"best p99 at 1000 ev/s: {best_w.pct(99):.1f} ms"
    else:  # an overloaded run's p99 is queueing, not batching: it cannot choose W
        w, why_w = "5", "no run kept up with 1000 ev/s here; 5 ms leaves 25 of the 30 ms budget"
    print(f"recommended settings.batch: max_events={b} (best saturation {best_b.throughput:.0f} ev/s), "
          f"max_wait_ms={w} ({why_w})")


def _plot(runs: list[RunResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(8, 4.5))
    lo = max(1.0, min(min(r.latencies_ms) for r in runs))
    hi = max(max(r.latencies_ms) for r in runs)
    bins = np.logspace(np.log10(lo), np.log10(max(hi, lo * 10)), 60)
    for r in runs:
        ax.hist(r.latencies_ms, bins=bins, histtype="step", linewidth=1.5,
                label=f"{r.label} @ {r.offered:g}/s  p99 {r.pct(99):.0f} ms")
    ax.axvline(30, color="red", linestyle="--", linewidth=1, label="30 ms target")
    ax.set_xscale("log")
    ax.set_xlabel("produce → committed verdict visible (ms)")
    ax.set_ylabel("events")
    ax.set_title("Tollgate engine worker: end-to-end latency")
    ax.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=float, nargs="*", default=[250, 500, 1000])
    ap.add_argument("--duration", type=float, default=15.0, help="seconds per fixed-rate run")
    ap.add_argument("--saturation-events", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--batch", type=str, default=None, help="B,W (default: settings.batch)")
    ap.add_argument("--sweep", action="store_true", help="also compare other (B, W) at 1000 ev/s and saturation")
    ap.add_argument("--modes", action="store_true",
                    help="also compare the worker's modes at 1000 ev/s and saturation: batches closed only "
                         "at B or W (no close-when-idle); the model in the worker's own process (on the "
                         "main thread, or on a thread of its own) instead of a model process; PyTorch's "
                         "default threads (one per core) instead of one")
    ap.add_argument("--no-model-baseline", dest="baseline", action="store_false")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--workdir", default=str(REPO / ".tollgate" / "bench"))
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--plot", default=str(REPO / ".tollgate" / "reports" / "engine_latency.png"),
                    help="latency histogram (PNG) of the fixed-rate runs")
    args = ap.parse_args()

    from engine.settings import Settings

    s = Settings()
    default = (s.batch.max_events, s.batch.max_wait_ms)
    if args.batch:
        b, w = args.batch.split(",")
        default = (int(b), float(w))
    bench = Bench(args)
    model = "ops.bench.engine:model_pipeline"
    results: list[RunResult] = []
    tag = f"B={default[0]} W={default[1]:g}"
    for rate in args.rates:
        results.append(bench.run(f"model {tag}", model, default, rate))
        _print(results[-1:])
    results.append(bench.run(f"model {tag}", model, default, None))
    _print(results[-1:])
    if args.baseline:
        nm = "ops.bench.engine:no_model_pipeline"
        base_rate = max(args.rates) if args.rates else None
        if base_rate:
            results.append(bench.run(f"no-model {tag}", nm, default, base_rate))
        results.append(bench.run(f"no-model {tag}", nm, default, None))
    if args.modes:
        for name, env in MODES.items():
            for rate in (1000.0, None):
                results.append(bench.run(f"model {tag} {name}", model, default, rate, env))
                _print(results[-1:])
    if args.sweep:
        for b, w in ((16, 2.0), (32, 5.0), (64, 5.0), (128, 10.0)):
            if (b, w) == default:
                continue
            results.append(bench.run(f"model B={b} W={w:g}", model, (b, w), 1000.0))
            results.append(bench.run(f"model B={b} W={w:g}", model, (b, w), None))
    print()
    print(LEGEND)
    _print(results)
    sat = {r.label: r for r in results if r.offered is None}
    with_model, without = sat.get(f"model {tag}"), sat.get(f"no-model {tag}")
    if with_model and without and with_model.throughput:
        print(f"\nsaturation: no-model / model = {without.throughput / with_model.throughput:.2f}x events/s; "
              f"infer = {with_model.stage_ms_per_batch['infer']:.2f} of "
              f"{sum(with_model.stage_ms_per_batch.values()):.2f} ms per batch")
    fixed = {r.label: r for r in results if r.offered == 1000.0}
    if f"model {tag}" in fixed and f"no-model {tag}" in fixed:
        print(f"at 1000 ev/s: p99 model {fixed[f'model {tag}'].pct(99):.1f} ms vs "
              f"no-model {fixed[f'no-model {tag}'].pct(99):.1f} ms")
    if args.sweep:
        _recommend(results)
    if args.plot:
        _plot([r for r in results if r.offered is not None and r.latencies_ms], Path(args.plot))
        print(f"latency histogram: {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([{
            "label": r.label, "offered": r.offered, "events": r.events, "throughput": r.throughput,
            "p50": r.pct(50), "p95": r.pct(95), "p99": r.pct(99), "mean_batch": r.mean_batch,
            "stage_ms_per_batch": r.stage_ms_per_batch} for r in results], indent=2))


if __name__ == "__main__":
    main()
