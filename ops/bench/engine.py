"""End-to-end benchmark of the engine worker through the real broker (and Redis).

    python ops/bench/engine.py                      # default B/W: fixed rates + saturation,
                                                    # with the model and with it removed
    python ops/bench/engine.py --sweep --rounds 3   # also try other (B, W), interleaved, and say
                                                    # which wins on medians
    python ops/bench/engine.py --modes              # also: no close-when-idle; small batches in
                                                    # the worker; the model in the worker's
                                                    # process; torch threads per core; backlog depth 1
    python ops/bench/engine.py --rates 250 1000 --modes split-64 --mode-rates 250 1000
    python ops/bench/engine.py --rates 500 1000 --duration 20 --saturation-events 20000
    python ops/bench/engine.py --rates 1000 --floor-ab 3   # the relay only: the transaction as
                                                    # committed now against before
    python ops/bench/engine.py --event-mix legacy   # the events before #19 (the test factory's)
    python ops/bench/engine.py --old-pipeline ops.bench.engine_old:old_pipeline
                                                    # also the path before a change, same run
    python ops/bench/engine.py --old-pipeline ops.bench.engine:no_detector_pipeline
                                                    # also the worker without the detector

What is sent (``ops/bench/engine_events.py``, ``--event-mix users``, the default): what
users send — JSON and Avro (``--json-share``), about 5 % memos of realistic lengths
(most a few words, a long tail), a merchant descriptor on every card payment (the shop's
statement line, some with an order reference per payment; ``--no-descriptors``: none),
returning customers with skewed activity and new ones, at shops whose trade is skewed
too. Before each run, a month of those customers' payments and their outcomes is written
through the worker's own feature store (``--history-events``,
``ops/bench/engine_history.py``), so enrich reads full windows and busy shops, as a
running system does; and while the worker decides, outcomes keep
arriving, one for each verdict the reader receives, recorded through the same store as
the feedback worker records them (``ops/bench/engine_outcomes.py``;
``--no-live-outcomes``: none), so Redis does that work beside the worker's.
The model is made the way users get one (``--model-source bootstrap``, the default):
``tollgate model bootstrap`` (fewer simulated days and epochs than its defaults, so the
benchmark starts in minutes; the architecture, and so the serving cost, is the same)
into this run's own registry; ``--model-dir`` reuses a model directory instead.

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
  it decided; ``main`` and ``model`` give the two processes apart. On a machine whose cores are
  shared with the broker, Redis, this load generator and anything else, events/s
  swing with the neighbours; CPU per event is what the worker itself costs.
* **Where the cores went**: every process's CPU from ``/proc`` over each run, grouped
  (the worker with its model process, the broker, Redis, this process, the rest) with
  the machine's idle time: is the worker short of CPU, or waiting?
* **A warm broker**: first, ``--warmup`` seconds at 1,000 events/s, discarded: a JVM
  that has just started is still compiling its hot paths.
* **Fixed rates**: events are paced at R events/s for D seconds; the first second is
  dropped (warm caches, first rebalance). **Saturation**: the topic is pre-filled with
  N events before the worker joins; events/s = N / (last verdict − first verdict).
* **Model removed**: the same loop with ``inference`` swapped for a constant stub of the
  same output shape; the ratio shows what the model costs.
* **The floor** (``--no-floor`` skips it): at each fixed rate, ``ops/bench/engine_relay.py``
  — the worker's consumer and transactional producer, one transaction per poll, nothing
  decoded or decided — through the same load generator and reader. Its latency is what
  exactly-once through this broker costs on this machine before the worker does anything.

Figures depend on the machine; docs/performance.md keeps each run with its command,
date and commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:  # imported as ops.bench.engine: the worker loads its pipeline factories from here
    from ops.bench import _common
REPO = _common.REPO

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
import uuid
from collections.abc import Sequence

from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from engine.wire.codec import Codec  # noqa: E402
from ops.bench.engine_events import BASE_TIME_MS, describe, history_events, make_bench_events  # noqa: E402
from ops.bench.engine_history import DAY_MS, LABEL_DELAY_DAYS  # noqa: E402
from ops.bench.engine_io import VerdictReader, machine_cpu, produce_backlog, produce_timed, scrape  # noqa: E402
from ops.bench.engine_report import (  # noqa: E402
    LEGEND,
    STAGES,
    RunResult,
    core_shares,
    latencies_and_throughput,
    plot,
    print_machine,
    print_old_vs_new,
    print_table,
    print_targets,
    recommend,
    worker_result,
)

#: The label of ``Bench.run_relay``'s rows: an exactly-once relay that decides nothing.
RELAY = "floor: EOS relay"

#: ``--modes``: the default worker against one setting changed (settings.batch).
MODES = {"fixed-W": {"TOLLGATE_BATCH__CLOSE_WHEN_IDLE": "false"},
         # a quiet batch's transaction opened after its decision, as before 2026-12-05
         "no-early-open": {"TOLLGATE_BATCH__OPEN_TRANSACTION_EARLY": "false"},
         # batches under 64 rows in the worker (which then imports PyTorch), as before 2026-12-02
         "split-64": {"TOLLGATE_BATCH__PROCESS_MIN_ROWS": "64"},
         "one-process": {"TOLLGATE_BATCH__INFER_PROCESS": "false"},
         "one-process-infer-thread": {"TOLLGATE_BATCH__INFER_PROCESS": "false", "TOLLGATE_BATCH__INFER_THREAD": "true"},
         "torch-threads-per-core": {"TOLLGATE_BATCH__TORCH_THREADS": "0"},
         # OpenBLAS's default threads (one per core) in the worker's own process
         "blas-threads-per-core": {"TOLLGATE_BATCH__BLAS_THREADS": "0"},
         "backlog-depth-1": {"TOLLGATE_BATCH__BACKLOG_DEPTH": "1"},
         # the garbage collector at Python's default thresholds, as before 2026-12-07
         "gc-python-default": {"TOLLGATE_WORKER__GC_YOUNG_THRESHOLD": "700"},
         # with --model-dir an ONNX export: its safetensors weights through PyTorch instead of
         # the graph on NumPy arrays (engine.stages.infer_arrays), same model, same events
         "torch-runtime": {"TOLLGATE_MODEL__RUNTIME": "torch"},
         # the detector's screen head alone, without the sentence encoder (docs/detector.md)
         "detector-screen-only": {"TOLLGATE_DETECTOR__SENTENCE_ENCODER": "false"},
         # the sentence encoder as the package's numpy code (the default before 2026-12-06),
         # and with int8 products (engine/detector/sentence_graph.py)
         "detector-numpy": {"TOLLGATE_DETECTOR__ENCODER_RUNTIME": "numpy"},
         "detector-int8": {"TOLLGATE_DETECTOR__ENCODER_RUNTIME": "onnx-int8"},
         # the merchant descriptor left to the network alone, without its own head (docs/detector.md)
         "detector-no-descriptor-head": {"TOLLGATE_DETECTOR__DESCRIPTOR_HEAD": "false"}}


# -- the model-removed pipeline (loaded by the worker subprocess via --pipeline) ----------

class ConstantInference:
    """Same output shapes as ``engine.stages.infer.Inference``, no model: what the loop costs alone."""

    version = "no-model"

    def __call__(self, batch):
        import torch

        from engine.stages.infer import ModelOutputs

        n = int(batch.control_numeric.shape[0])
        probs = torch.tensor([[0.9, 0.07, 0.03]]).expand(n, 3)
        return ModelOutputs(probs, torch.zeros(n), torch.zeros(n, dtype=torch.long), self.version)


def no_model_pipeline(settings, *, model=None):
    from engine.worker.main import build_worker_pipeline

    pipeline = build_worker_pipeline(settings, model=model)
    pipeline.swap(inference=ConstantInference(), model_version="no-model")
    return pipeline


def no_detector_pipeline(settings, *, model=None):
    """The worker's pipeline without text screening: what the detector costs the stream
    (issue 17: ``--old-pipeline ops.bench.engine:no_detector_pipeline``, 5 % memos).

    Built without one, not built with one and then swapped out: a detector's sentence
    encoder loads on a background thread (``load_encoder_in_background``), and a worker
    whose pipeline never judges a text starts its loop while that load still runs, so
    the comparison measured the load, not the screening (docs/performance.md,
    "Adversarial-input detector", "Why")."""
    from engine.worker.main import build_worker_pipeline

    return build_worker_pipeline(settings, model=model, detector=False)


def model_pipeline(settings, *, model=None):
    from engine.worker.main import build_worker_pipeline

    return build_worker_pipeline(settings, model=model)


# -- one run ------------------------------------------------------------------------------

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
        # Made again on every run: a model kept from an older checkout would have that
        # checkout's architecture (say, before PLE numeric embeddings), not today's.
        self.model_dir = self._model(args)
        self._described = False
        self._history_said = False

    def _model(self, args: argparse.Namespace) -> Path:
        import shutil
        import subprocess

        if args.model_dir:
            return Path(args.model_dir)
        shutil.rmtree(self.models_dir, ignore_errors=True)
        if args.model_source == "fresh":  # an untrained model of the serving architecture
            from tests.support.worker_support import save_fresh_model

            return save_fresh_model(self.models_dir, "bench-v1")
        # What a user runs: `tollgate model bootstrap`, into this run's own registry (its
        # serving pointer under a key prefix of its own, deleted after).
        prefix = f"tg-bench-{uuid.uuid4().hex[:8]}"
        env = {**os.environ, "TOLLGATE_PATHS__MODELS_DIR": str(self.models_dir),
               "TOLLGATE_REDIS__KEY_PREFIX": prefix, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
        print("model: tollgate model bootstrap --history-days 7 --epochs 2 ...", flush=True)
        subprocess.run([str(Path(sys.executable).with_name("tollgate")), "model", "bootstrap", "--history-days", "7",
                        "--epochs", "2"], env=env, cwd=str(REPO), check=True, timeout=1800,
                       stdout=subprocess.DEVNULL)
        import redis

        r = redis.Redis.from_url(self.redis_url)
        for key in r.scan_iter(f"{prefix}:*", count=1000):
            r.delete(key)
        found = sorted(self.models_dir.glob("bootstrap-*/"))
        if not found:
            raise RuntimeError(f"tollgate model bootstrap left no model under {self.models_dir}")
        return found[-1]

    def events(self, u: str, n: int):
        events = make_bench_events(self.args.event_mix, u, n, self.args.json_share,
                                   descriptors=not self.args.no_descriptors)
        if not self._described:
            print(f"events ({self.args.event_mix}): {describe(events)}", flush=True)
            self._described = True
        return events

    def run(self, label: str, pipeline: str, batch: tuple[int, float], rate: float | None,
            env: dict[str, str] | None = None, duration: float | None = None,
            tree: Path | None = None, history: bool = True) -> RunResult:
        """``tree``: the worker runs that source tree's code (``ops/bench/engine_ab.py``).
        ``history``: write ``--history-events`` first (a broker warm-up needs none)."""
        from tests.support.worker_support import WorkerEnv, WorkerProcess

        u = uuid.uuid4().hex[:8]
        topics = self._create_topics(u)
        wenv = WorkerEnv(self.bootstrap, self.redis_url, u, topics["events"], topics["verdicts"], topics["dlq"],
                         self.models_dir, extra={"TOLLGATE_BATCH__MAX_EVENTS": str(batch[0]),
                                                 "TOLLGATE_BATCH__MAX_WAIT_MS": str(batch[1]), **(env or {})})
        n = self.args.saturation_events if rate is None else int(rate * (duration or self.args.duration))
        events = self.events(u, n)
        # the history's payments whose outcome is still to come, for LiveOutcomes
        pending = self.workdir / f"pending-{wenv.key_prefix}.json"
        recorded = None
        try:  # whatever happens from here (a failure, SIGTERM), this run's topics and keys go
            # The month before the run: up to now for paced events (stamped when sent), up to
            # the pre-filled backlog's first event time for saturation.
            end_ms = int(time.time() * 1000) if rate is not None else BASE_TIME_MS
            wrote_history = history and self._write_history(wenv.key_prefix, end_ms, tree, pending)
            if rate is None:  # pre-fill: the worker starts with a full backlog
                produce_backlog(self.bootstrap, topics["events"], events, self.codec)
            where = {} if tree is None else {"command": _common.tree_cli(tree), "cwd": tree}
            worker = WorkerProcess(wenv, label.replace(" ", "_"), self.workdir, "--model",
                                   str(self.model_dir), "--no-hot-swap", "--pipeline", pipeline, **where)
            reader = VerdictReader(self.bootstrap, topics["verdicts"], n)
            outcomes: LiveOutcomes | None = None
            try:
                worker.wait_for("worker ready", timeout=180)
                if wrote_history and not self.args.no_live_outcomes:
                    outcomes = LiveOutcomes(self.redis_url, wenv.key_prefix, pending, tree or REPO, reader)
                port = worker.health_port
                before = scrape(port)
                machine_before, t_before = machine_cpu(worker.proc.pid), time.monotonic()
                before[("cpu_seconds", "")] = machine_before["worker"]  # with its model process
                before[("cpu_main", "")], before[("cpu_model", "")] = machine_before["worker_main"], machine_before["worker_model"]
                reader.start()
                if outcomes is not None:
                    outcomes.start()
                if rate is not None:
                    produce_timed(self.bootstrap, topics["events"], events, self.codec, rate)
                reader.join(timeout=self.args.timeout)
                after = scrape(port)
                machine_after, span = machine_cpu(worker.proc.pid), time.monotonic() - t_before
                after[("cpu_seconds", "")] = machine_after["worker"]
                after[("cpu_main", "")], after[("cpu_model", "")] = machine_after["worker_main"], machine_after["worker_model"]
            finally:
                recorded = outcomes.stop() if outcomes is not None else None
                worker.terminate()
                reader.stop()
        finally:
            self._delete_topics(topics)
            self._delete_keys(wenv.key_prefix)
            pending.unlink(missing_ok=True)
        if recorded is not None:
            print(f"{label}: outcomes recorded during the run: {json.dumps(recorded)}", flush=True)
        result = worker_result(label, rate, n, reader.received, before, after)
        result.machine_pct = core_shares(machine_before, machine_after, span)
        return result

    def _write_history(self, prefix: str, end_ms: int, tree: Path | None, pending: Path) -> bool:
        """``--history-events`` payments (and their outcomes) of the returning customers at
        the shops over the month before ``end_ms``, through ``tree``'s own feature store
        (``ops/bench/engine_history.py``); the payments whose outcome is still to come go to
        ``pending``. False: this run writes no history."""
        import subprocess
        import tempfile

        if not self.args.history_events or self.args.event_mix != "users":
            return False
        history = history_events("h", self.args.history_events, end_ms, days=self.args.history_days)
        # engine_history.py records the outcomes that arrived by the history's end; the
        # rest come during the run (LiveOutcomes)
        last = max((e.event_time_ms for e in history), default=0)
        due = int(LABEL_DELAY_DAYS * DAY_MS)
        pending.write_text(json.dumps([e.to_dict() for e in history if e.event_time_ms + due > last]))
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=self.workdir) as f:
            json.dump([e.to_dict() for e in history], f)
            f.flush()
            where = tree or REPO
            out = subprocess.run([sys.executable, str(Path(__file__).with_name("engine_history.py")),
                                  "--redis-url", self.redis_url, "--prefix", prefix, "--events", f.name,
                                  "--tree", str(where)], cwd=str(where), capture_output=True, text=True,
                                 timeout=1800, check=False)
        if out.returncode:
            raise RuntimeError(f"writing the history failed:\n{out.stderr[-3000:]}")
        if not self._history_said:
            print(f"history: {out.stdout.strip()} ({self.args.history_days} days, written before each run)", flush=True)
            self._history_said = True
        return True

    def _create_topics(self, u: str) -> dict[str, str]:
        """This run's own events, verdicts and dead-letter topics."""
        topics = {k: f"bench.{k}.{u}" for k in ("events", "verdicts", "dlq")}
        for f in self.admin.create_topics([NewTopic(t, self.args.partitions, 1) for t in topics.values()]).values():
            f.result(30)
        return topics

    def _delete_keys(self, prefix: str) -> None:
        """This run's Redis state (context, decision log, re-send claims): left behind, a
        session of runs grew the server by gigabytes and later runs read a bigger one."""
        import redis

        r = redis.Redis.from_url(self.redis_url)
        batch: list[bytes] = []
        for key in r.scan_iter(f"{prefix}:*", count=5000):
            batch.append(key)
            if len(batch) >= 5000:
                r.unlink(*batch)
                batch.clear()
        if batch:
            r.unlink(*batch)
        r.close()

    def _delete_topics(self, topics: dict[str, str]) -> None:
        for f in self.admin.delete_topics(list(topics.values())).values():
            try:
                f.result(30)
            except Exception:  # noqa: BLE001 - cleanup only
                pass

    def run_relay(self, rate: float, label: str = "", env: dict[str, str] | None = None,
                  relay_args: Sequence[str] = ()) -> RunResult:
        """The floor: ``ops.bench.engine_relay`` (consume → one transaction per poll,
        nothing decided) at ``rate``, with the same load generator and reader as ``run``."""
        import subprocess

        from tests.support.worker_support import WorkerEnv

        u = uuid.uuid4().hex[:8]
        topics = self._create_topics(u)
        wenv = WorkerEnv(self.bootstrap, self.redis_url, u, topics["events"], topics["verdicts"], topics["dlq"],
                         self.models_dir, extra=env or {})
        n = int(rate * self.args.duration)
        events = self.events(u, n)
        relay = subprocess.Popen([sys.executable, "-m", "ops.bench.engine_relay", *relay_args], env=wenv.env(),
                                 cwd=str(REPO), stdout=subprocess.PIPE, text=True)
        reader = VerdictReader(self.bootstrap, topics["verdicts"], n, relayed=True)
        try:
            if relay.stdout.readline().strip() != "relay ready":
                raise RuntimeError("the relay did not start")
            time.sleep(3.0)  # joins the group (as the worker has by the time it says ready)
            machine_before, t_before = machine_cpu(relay.pid), time.monotonic()
            reader.start()
            produce_timed(self.bootstrap, topics["events"], events, self.codec, rate)
            reader.join(timeout=self.args.timeout)
            machine_after, span = machine_cpu(relay.pid), time.monotonic() - t_before
        finally:
            relay.terminate()
            relay.wait(30)
            reader.stop()
            self._delete_topics(topics)
        got = reader.received
        lat, throughput = latencies_and_throughput(got, fixed_rate=True)
        if len(got) < n:
            print(f"  ! relay: only {len(got)} of {n} events arrived", file=sys.stderr)
        cpu_s = machine_after["worker"] - machine_before["worker"]
        result = RunResult(label or RELAY, rate, len(got), throughput, lat, dict.fromkeys(STAGES, float("nan")),
                           float("nan"),
                           cpu_us_per_event=cpu_s * 1e6 / len(got) if got else float("nan"),
                           cpu_us_main=cpu_s * 1e6 / len(got) if got else float("nan"), cpu_us_model=0.0)
        result.machine_pct = core_shares(machine_before, machine_after, span)
        return result


#: ``--sweep``: the (B, W) candidates, besides the default. B matters once batches fill (a
#: backlog); W when they do not. Larger B amortises what every batch costs whatever its
#: size (a transaction, two Redis round trips, a model call, Python's per-batch work).
SWEEP = ((128, 5.0), (256, 5.0), (512, 5.0), (1024, 5.0), (512, 2.0), (512, 10.0))


class LiveOutcomes:
    """``ops/bench/engine_outcomes.py`` as a child in the measured tree, told every 50 ms
    how many verdicts the reader has received (and the newest one's event time), so it
    records one outcome per verdict while the worker decides. Every wait is bounded: the
    child answers within ``_WAIT_S`` or is killed."""

    _WAIT_S = 60.0

    def __init__(self, redis_url: str, prefix: str, pending: Path, tree: Path, reader: VerdictReader):
        self.reader = reader
        self._halt = threading.Event()
        self._feeder = threading.Thread(target=self._feed, name="live-outcomes", daemon=True)
        self.child = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("engine_outcomes.py")), "--redis-url", redis_url,
             "--prefix", prefix, "--payments", str(pending), "--tree", str(tree)],
            cwd=str(tree), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.child.stdout is not None
        if self._line(self.child.stdout) != "ready":
            self.child.kill()
            raise RuntimeError("engine_outcomes.py did not start")

    def _line(self, stream) -> str:
        got: list[str] = []
        t = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
        t.start()
        t.join(self._WAIT_S)
        return got[0].strip() if got else ""

    def start(self) -> None:
        self._feeder.start()

    def _tell(self) -> int:
        """Writes the child how many verdicts the reader has received and the newest one's
        event time; returns the count (0, and nothing written, before the first)."""
        assert self.child.stdin is not None
        received = self.reader.received
        n = len(received)
        if n:
            self.child.stdin.write(f"{n} {int(received[n - 1][1])}\n")
            self.child.stdin.flush()
        return n

    def _feed(self) -> None:
        told = 0
        while not self._halt.wait(0.05):
            if len(self.reader.received) > told:
                try:
                    told = self._tell()
                except OSError:  # the child is gone: stop() says so
                    return

    def stop(self) -> dict | None:
        """Stops the child; what it recorded (outcomes, batches, seconds), or None."""
        self._halt.set()
        if self._feeder.is_alive():
            self._feeder.join(self._WAIT_S)
        try:
            assert self.child.stdin is not None and self.child.stdout is not None
            self._tell()  # the verdicts that came after the feeder's last line
            self.child.stdin.write("0 0\n")
            self.child.stdin.close()
            said = self._line(self.child.stdout)
            self.child.wait(timeout=self._WAIT_S)
            return json.loads(said) if said else None
        except (OSError, ValueError, subprocess.TimeoutExpired):
            self.child.kill()
            return None


def _sweep(bench: Bench, model: str, default: tuple[int, float], rounds: int) -> list[RunResult]:
    """Every candidate at 1,000 events/s and at saturation, ``rounds`` times, interleaved
    (the order reverses every round), so that a noisy neighbour hits all of them alike."""
    candidates = list(dict.fromkeys([default, *SWEEP]))
    results = []
    for i in range(rounds):
        for b, w in candidates if i % 2 == 0 else candidates[::-1]:
            for rate in (1000.0, None):
                results.append(bench.run(f"sweep B={b} W={w:g}", model, (b, w), rate))
                print_table(results[-1:])
    return results


#: ``--floor-ab``: the relay's transaction as the worker commits it against the order and
#: retry backoff it used before (``engine.stages.emit``): (label, environment, relay arguments).
FLOOR_AB = (("floor: offsets 1st, 1 ms", {}, ()),
            ("floor: records 1st, 5 ms", {"TOLLGATE_KAFKA__PRODUCER_RETRY_BACKOFF_MS": "5"}, ("--records-first",)))


def _floor_ab(bench: Bench, rate: float, rounds: int) -> list[RunResult]:
    """``FLOOR_AB`` at ``rate``, ``rounds`` times, interleaved (the order reverses every
    round); prints each run and the medians."""
    results = []
    for i in range(rounds):
        for label, env, relay_args in FLOOR_AB if i % 2 == 0 else FLOOR_AB[::-1]:
            results.append(bench.run_relay(rate, label, env, relay_args))
            print_table(results[-1:])
    print(f"\nrelay at {rate:g} events/s, medians of {rounds} interleaved rounds:")
    for label, _, _ in FLOOR_AB:
        runs = [r for r in results if r.label == label]
        print(f"  {label:26} p50 {statistics.median(r.pct(50) for r in runs):6.1f}  "
              f"p95 {statistics.median(r.pct(95) for r in runs):6.1f}  p99 {statistics.median(r.pct(99) for r in runs):6.1f} ms"
              f"  [p99 per run: {', '.join(f'{r.pct(99):.1f}' for r in runs)}]")
    return results


def add_event_arguments(ap: argparse.ArgumentParser) -> None:
    """The events ``Bench.events`` sends (``--event-mix``, ``--json-share``, ``--no-descriptors``)."""
    ap.add_argument("--event-mix", default="users", choices=("users", "legacy"),
                    help="users: JSON and Avro, ~5 %% memos, returning and new customers "
                         "(ops/bench/engine_events.py); legacy: the test factory's events, as before #19")
    ap.add_argument("--json-share", type=float, default=0.5, help="--event-mix users: share of JSON events")
    ap.add_argument("--no-descriptors", action="store_true",
                    help="--event-mix users: no merchant descriptors (the mix before 2026-12-07); by default "
                         "every card payment carries its shop's statement line")
    ap.add_argument("--history-events", type=int, default=100_000,
                    help="--event-mix users: payments (with outcomes) written before each run, so windows "
                         "hold a month as in a running system (0: none, every window starts empty)")
    ap.add_argument("--history-days", type=int, default=30, help="the span of --history-events")
    ap.add_argument("--no-live-outcomes", action="store_true",
                    help="record no outcomes during the run (by default one per verdict, for the history's "
                         "payments of its last week, as the feedback worker would: ops/bench/engine_outcomes.py)")


def add_model_arguments(ap: argparse.ArgumentParser) -> None:
    """The model ``Bench`` serves (``--model-source``, ``--model-dir``)."""
    ap.add_argument("--model-source", default="bootstrap", choices=("bootstrap", "fresh"),
                    help="bootstrap: `tollgate model bootstrap` (what users run); fresh: an untrained model")
    ap.add_argument("--model-dir", default=None, help="serve this model directory instead")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=float, nargs="*", default=[250, 500, 1000])
    ap.add_argument("--duration", type=float, default=15.0, help="seconds per fixed-rate run")
    ap.add_argument("--saturation-events", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--batch", type=str, default=None, help="B,W (default: settings.batch)")
    ap.add_argument("--sweep", action="store_true", help="also compare other (B, W) at 1000 ev/s and saturation")
    ap.add_argument("--rounds", type=int, default=2, help="--sweep: interleaved rounds per candidate")
    ap.add_argument("--modes", nargs="*", default=None, metavar="MODE",
                    help="also compare the worker's modes (all, or those named) at --mode-rates and "
                         "saturation: batches closed only at B or W (fixed-W); batches under 64 rows in "
                         "the worker (split-64); the model in the worker's own process, on the main thread "
                         "or on a thread of its own (one-process, one-process-infer-thread); PyTorch's "
                         "default threads (torch-threads-per-core); OpenBLAS's default threads in the worker "
                         "(blas-threads-per-core); one backlog batch on the threads "
                         "(backlog-depth-1); the garbage collector at Python's default thresholds "
                         "(gc-python-default); the PyTorch runtime for an ONNX --model-dir (torch-runtime); the "
                         "detector without its sentence encoder (detector-screen-only); the encoder as numpy code or "
                         "with int8 products (detector-numpy, detector-int8); the descriptor without its own head "
                         "(detector-no-descriptor-head)")
    ap.add_argument("--mode-rates", type=float, nargs="*", default=[1000.0],
                    help="--modes: the fixed rates each mode runs at (and saturation)")
    ap.add_argument("--no-model-baseline", dest="baseline", action="store_false")
    add_event_arguments(ap)
    add_model_arguments(ap)
    ap.add_argument("--old-first", action="store_true",
                    help="run --old-pipeline before the default at each rate: the first of the two runs "
                         "faster (an A/A control, docs/performance.md), so compare a pair run both ways")
    ap.add_argument("--old-pipeline", default=None, metavar="MODULE:FUNCTION",
                    help="also run this pipeline factory (the path before a change) at every rate and at "
                         "saturation, interleaved with the default, and print new / old")
    ap.add_argument("--floor-ab", type=int, default=0, metavar="ROUNDS",
                    help="only compare the relay's transaction as the worker commits it (offsets first, "
                         "1 ms retry backoff) with the order and backoff before (records first, 5 ms) at "
                         "the first of --rates, in ROUNDS interleaved rounds")
    ap.add_argument("--no-floor", dest="floor", action="store_false",
                    help="skip the exactly-once relay that decides nothing (ops/bench/engine_relay.py) "
                         "at each fixed rate")
    ap.add_argument("--warmup", type=float, default=30.0,
                    help="seconds at 1,000 events/s through the broker first, discarded (0: none)")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--workdir", default=str(REPO / ".tollgate" / "bench"))
    ap.add_argument("--json", default=None, help="also write the results here")
    ap.add_argument("--plot", default=str(REPO / ".tollgate" / "reports" / "engine_latency.png"),
                    help="latency histogram (PNG) of the fixed-rate runs")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made

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
    if args.floor_ab:
        _floor_ab(bench, args.rates[0] if args.rates else 1000.0, args.floor_ab)
        return
    if args.warmup:
        # A broker that has just started runs its request paths in the JVM's interpreter
        # and first compilers, and its CPU per event falls over its first runs (the
        # "where the cores went" table shows it). A broker in service is warm; so is the
        # one measured here.
        warm = bench.run("broker warm-up", model, default, 1000.0, duration=args.warmup, history=False)
        print(f"broker warm-up, discarded: {args.warmup:g} s at 1,000 events/s, broker "
              f"{warm.machine_pct.get('broker', float('nan')):.0f} % of a core")
    old_label = f"old {tag}"
    for rate in [*args.rates, None]:
        pair = [(f"model {tag}", model)]
        if args.old_pipeline:
            pair.append((old_label, args.old_pipeline))
        for label, pipeline in (reversed(pair) if args.old_first else pair):
            results.append(bench.run(label, pipeline, default, rate))
            print_table(results[-1:])
        if args.floor and rate is not None:
            results.append(bench.run_relay(rate))
            print_table(results[-1:])
    if args.baseline:
        nm = "ops.bench.engine:no_model_pipeline"
        base_rate = max(args.rates) if args.rates else None
        if base_rate:
            results.append(bench.run(f"no-model {tag}", nm, default, base_rate))
        results.append(bench.run(f"no-model {tag}", nm, default, None))
    if args.modes is not None:
        for name, env in MODES.items():
            if args.modes and name not in args.modes:
                continue
            for rate in (*args.mode_rates, None):
                results.append(bench.run(f"model {tag} {name}", model, default, rate, env))
                print_table(results[-1:])
    if args.sweep:
        results += _sweep(bench, model, default, args.rounds)
    print()
    print(LEGEND)
    print_table(results)
    print_machine(results)
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
    if f"model {tag}" in fixed and RELAY in fixed:
        print(f"at 1000 ev/s: p99 model {fixed[f'model {tag}'].pct(99):.1f} ms vs "
              f"{fixed[RELAY].pct(99):.1f} ms for a relay that decides nothing (the floor)")
    if args.sweep:
        recommend(results)
    if args.floor:
        print_targets(results, f"model {tag}", RELAY)
    if args.old_pipeline:
        print_targets(results, old_label, RELAY)
        print_old_vs_new(results, f"model {tag}", old_label)
    fixed_runs = [r for r in results if r.offered is not None and r.latencies_ms]
    if args.plot and fixed_runs:  # none with --rates and nothing after it: saturation only
        plot(fixed_runs, Path(args.plot))
        print(f"latency histogram: {args.plot}")
    if args.json:
        Path(args.json).write_text(json.dumps([{
            "label": r.label, "offered": r.offered, "events": r.events, "throughput": r.throughput,
            "cpu_us_per_event": r.cpu_us_per_event, "cpu_us_main": r.cpu_us_main, "cpu_us_model": r.cpu_us_model,
            "p50": r.pct(50), "p95": r.pct(95), "p99": r.pct(99), "mean_batch": r.mean_batch,
            "stage_ms_per_batch": r.stage_ms_per_batch} for r in results], indent=2))


if __name__ == "__main__":
    main()
