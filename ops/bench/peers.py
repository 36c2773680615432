"""Tollgate against the pass-throughs a team would build instead, in one run.

    python ops/bench/peers.py                                  # 250, 500, 1,000 events/s + saturation
    python ops/bench/peers.py --rates 250 --duration 10 --saturation-events 10000
    python ops/bench/peers.py --only relay kstreams-tuned      # a subset (labels below)

Every row goes through the same broker, the same load generator (``Bench.events`` paced by
``engine_io.produce_timed``) and the same read_committed reader (``engine_io.VerdictReader``)
as ``ops/bench/engine.py``, whose ``Bench`` this reuses (topics, the worker subprocess):

* ``relay``: ``ops/bench/engine_relay.py``, the exactly-once relay that decides nothing
  (the floor ``ops/bench/engine.py`` measures);
* ``kstreams-default`` / ``kstreams-tuned``: a Kafka Streams pass-through
  (``ops/bench/peers/kstreams``, Apache Kafka's own kafka-streams jar at the broker's
  version, ``processing.guarantee=exactly_once_v2``), at its default commit interval
  (100 ms under exactly-once) and tuned down (``--tuned-commit-ms``; fetch wait 5 ms, no
  linger, 1 ms retry backoff, as the relay). Built with Maven on first use into ``target/`` (ignored);
* ``quix-default`` / ``quix-tuned``: a quix-streams pass-through
  (``ops/bench/peers/quix/passthrough.py``, ``processing_guarantee="exactly-once"``) at its
  defaults (commit every 5 s) and tuned down (``--tuned-commit-ms``), in a virtual
  environment of its own made on first use (quixstreams pins pydantic and
  confluent-kafka below Tollgate's);
* ``tollgate``: ``tollgate run`` with its model (``Bench.run``), deciding every event.

The peers decide nothing and copy each event's bytes; Tollgate decodes, enriches from
Redis, runs the model, the detector and the rules, and emits a verdict. Latency is from
produce to the record being readable read_committed; events/s at saturation is N over
the span from the peer saying it is ready (Kafka Streams: RUNNING) to the last record
read, with the topic pre-filled before the application starts (Tollgate's row is
``Bench.run``'s: first to last verdict, which leaves out its join time). Each peer joins its group before any event is sent (the bench waits
for the group's assignment, bounded). Rows of one rate run back to back, in an order
that reverses from rate to rate, so a noisy neighbour does not favour one side.

Figures depend on the machine; docs/performance.md keeps each run with its command,
date and commit.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import _common
except ModuleNotFoundError:
    from ops.bench import _common
REPO = _common.REPO

import argparse
import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ops.bench.engine import Bench, add_event_arguments, add_model_arguments
from ops.bench.engine_io import VerdictReader, machine_cpu, produce_backlog, produce_timed
from ops.bench.engine_report import (
    STAGES,
    RunResult,
    core_shares,
    latencies_and_throughput,
    print_table,
)

PEERS_DIR = REPO / "ops" / "bench" / "peers"
KSTREAMS = PEERS_DIR / "kstreams"
QUIX = PEERS_DIR / "quix"
QUIX_VERSION = "3.28.1"
TOLLGATE = "tollgate"
MODEL_PIPELINE = "ops.bench.engine:model_pipeline"


@dataclass(frozen=True, slots=True)
class Topics:
    bootstrap: str
    events: str
    out: str
    group: str


@dataclass(frozen=True, slots=True)
class Peer:
    """A pass-through application: its command line for one run's topics and group, and
    the line it prints once it is about to consume."""

    label: str
    command: Callable[[Topics], list[str]]
    ready: str


def peers(tuned_commit_ms: int) -> dict[str, Peer]:
    java_cp = f"{KSTREAMS / 'target' / 'classes'}:{KSTREAMS / 'target' / 'lib'}/*"
    quix_py = str(QUIX / ".venv" / "bin" / "python")

    def kstreams(commit: str, tuned: bool) -> Callable[[Topics], list[str]]:
        return lambda t: ["java", "-Xmx512m", "-cp", java_cp, "dev.tollgate.bench.PassThrough", t.bootstrap,
                          t.events, t.out, t.group, commit, str(tuned).lower()]

    def quix(commit: str) -> Callable[[Topics], list[str]]:
        return lambda t: [quix_py, str(QUIX / "passthrough.py"), t.bootstrap, t.events, t.out, t.group, commit]

    return {
        "relay": Peer("relay", lambda t: [sys.executable, "-m", "ops.bench.engine_relay"], "relay ready"),
        "kstreams-default": Peer("kstreams-default", kstreams("default", False), "kstreams ready"),
        "kstreams-tuned": Peer("kstreams-tuned", kstreams(str(tuned_commit_ms), True), "kstreams ready"),
        "quix-default": Peer("quix-default", quix("default"), "quix ready"),
        "quix-tuned": Peer("quix-tuned", quix(str(tuned_commit_ms / 1000)), "quix ready"),
    }


# -- building the peers on first use ------------------------------------------------------

def ensure_kstreams() -> None:
    """``mvn package dependency:copy-dependencies`` (Maven Central) into target/, when
    target/ is missing or older than the sources."""
    built = KSTREAMS / "target" / "classes" / "dev" / "tollgate" / "bench" / "PassThrough.class"
    sources = [KSTREAMS / "pom.xml", *(KSTREAMS / "src").rglob("*.java")]
    if built.is_file() and any((KSTREAMS / "target" / "lib").glob("kafka-streams-*.jar")) and \
            built.stat().st_mtime >= max(p.stat().st_mtime for p in sources):
        return
    print("building the Kafka Streams peer with Maven (first use) ...", flush=True)
    subprocess.run(["mvn", "-q", "-B", "-f", str(KSTREAMS / "pom.xml"), "package", "dependency:copy-dependencies"],
                   check=True, timeout=900)


def ensure_quix() -> None:
    """A virtual environment of its own with quixstreams (first use)."""
    python = QUIX / ".venv" / "bin" / "python"
    if python.is_file() and subprocess.run([str(python), "-c", "import quixstreams"], capture_output=True,
                                           timeout=120, check=False).returncode == 0:
        return
    print(f"installing quixstreams {QUIX_VERSION} into {QUIX / '.venv'} (first use) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(QUIX / ".venv")], check=True, timeout=300)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"quixstreams=={QUIX_VERSION}"], check=True, timeout=900)


# -- one run ------------------------------------------------------------------------------

def wait_assigned(bench: Bench, group: str, topic: str, timeout_s: float) -> None:
    """Until every partition of ``topic`` is assigned to a member of ``group`` (bounded)."""
    want = bench.args.partitions
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            desc = bench.admin.describe_consumer_groups([group])[group].result(10)
            got = {tp.partition for m in desc.members for tp in (m.assignment.topic_partitions if m.assignment else [])
                   if tp.topic == topic}
            if len(got) == want:
                return
        except Exception as exc:  # noqa: BLE001 - the group does not exist yet: keep waiting
            last = exc
        time.sleep(0.2)
    raise TimeoutError(f"group {group} did not take all {want} partitions of {topic} in {timeout_s:g} s "
                       f"(last error: {last!r})")


def run_peer(bench: Bench, peer: Peer, rate: float | None) -> RunResult:
    """``peer`` at ``rate`` events/s (None: saturation over a pre-filled topic)."""
    from tests.support.worker_support import WorkerEnv

    u = uuid.uuid4().hex[:8]
    topics = bench._create_topics(u)
    wenv = WorkerEnv(bench.bootstrap, bench.redis_url, u, topics["events"], topics["verdicts"], topics["dlq"],
                     bench.models_dir)
    group = f"engine-{u}" if peer.label == "relay" else f"peer-{peer.label}-{u}"
    t = Topics(bench.bootstrap, topics["events"], topics["verdicts"], group)
    n = bench.args.saturation_events if rate is None else int(rate * bench.args.duration)
    events = bench.events(u, n)  # the events Tollgate's row gets: users' mix, JSON and Avro
    if rate is None:
        produce_backlog(bench.bootstrap, t.events, events, bench.codec)
    log = open(bench.workdir / f"peer-{peer.label}-{u}.log", "w")  # noqa: SIM115 - the peer writes it until terminated
    # The reader runs before the peer starts: over a pre-filled topic the peer commits
    # from its first second, and a reader started later would see those records at once.
    reader = VerdictReader(bench.bootstrap, t.out, n, relayed=True)
    reader.start()
    proc = subprocess.Popen(peer.command(t), env=wenv.env(), cwd=str(REPO), stdout=subprocess.PIPE,
                            stderr=log, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        if line != peer.ready:
            raise RuntimeError(f"{peer.label} did not start (said {line!r}; log {log.name})")
        ready_ms = time.time() * 1000.0
        machine_before, t_before = machine_cpu(proc.pid), time.monotonic()
        if rate is not None:
            wait_assigned(bench, group, t.events, 120.0)
            produce_timed(bench.bootstrap, t.events, events, bench.codec, rate)
        reader.join(timeout=bench.args.timeout)
        machine_after, span = machine_cpu(proc.pid), time.monotonic() - t_before
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        reader.stop()
        log.close()
        bench._delete_topics(topics)
    got = reader.received
    lat, throughput = latencies_and_throughput(got, fixed_rate=rate is not None)
    if rate is None and got:
        # From the moment the peer said ready to the last record read: a peer that commits
        # every few seconds makes its records readable in a few bursts, and first-to-last
        # would then measure the gap between bursts, not the processing.
        throughput = len(got) / max(1e-3, (max(r for r, _ in got) - ready_ms) / 1000.0)
    if len(got) < n:
        print(f"  ! {peer.label}: only {len(got)} of {n} events arrived", file=sys.stderr)
    cpu_s = machine_after["worker"] - machine_before["worker"]
    result = RunResult(peer.label, rate, len(got), throughput, lat, dict.fromkeys(STAGES, float("nan")),
                       float("nan"), cpu_us_per_event=cpu_s * 1e6 / len(got) if got else float("nan"))
    result.machine_pct = core_shares(machine_before, machine_after, span)
    return result


def run_tollgate(bench: Bench, rate: float | None) -> RunResult:
    from engine.settings import Settings

    s = Settings()
    result = bench.run(TOLLGATE, MODEL_PIPELINE, (s.batch.max_events, s.batch.max_wait_ms), rate)
    return result


# -- the report ---------------------------------------------------------------------------

def summary(results: list[RunResult], labels: list[str]) -> list[dict[str, object]]:
    """One row per (rate, application): p50, p99, events/s, and Tollgate's ratios to it."""
    rows = []
    for rate in dict.fromkeys(r.offered for r in results):
        at = {r.label: r for r in results if r.offered == rate}
        ours = at.get(TOLLGATE)
        for label in labels:
            r = at.get(label)
            if r is None:
                continue
            row = {"rate": "saturation" if rate is None else int(rate), "app": label,
                   "p50_ms": r.pct(50) if r.latencies_ms else float("nan"),
                   "p99_ms": r.pct(99) if r.latencies_ms else float("nan"),
                   "events_s": r.throughput, "cpu_us_per_event": r.cpu_us_per_event, "events": r.events}
            if ours is not None and label != TOLLGATE and r.latencies_ms and ours.latencies_ms and r.pct(50) > 0:
                row["tollgate_p50_ratio"] = ours.pct(50) / r.pct(50)
                row["tollgate_p99_ratio"] = ours.pct(99) / r.pct(99)
            if ours is not None and label != TOLLGATE and r.throughput:
                row["tollgate_events_s_ratio"] = ours.throughput / r.throughput
            rows.append(row)
    return rows


def print_summary(rows: list[dict[str, object]]) -> None:
    print("\nrate        app                p50 ms   p99 ms   events/s  cpu us/ev   Tollgate/app: p50   p99   events/s")
    for row in rows:
        ratio = "".join(f"  {row[k]:6.2f}" if k in row else "       -" for k in
                        ("tollgate_p50_ratio", "tollgate_p99_ratio", "tollgate_events_s_ratio"))
        print(f"{row['rate']!s:11} {row['app']:17} {row['p50_ms']:8.1f} {row['p99_ms']:8.1f} "
              f"{row['events_s']:10.0f} {row['cpu_us_per_event']:10.0f}               {ratio}")
    print("(fixed rates: events/s is what was delivered at the offered rate; saturation: N / span. "
          "Ratios < 1 on latency and > 1 on events/s favour Tollgate.)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", type=float, nargs="*", default=[250, 500, 1000])
    ap.add_argument("--no-saturation", dest="saturation", action="store_false")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds per fixed-rate run")
    ap.add_argument("--saturation-events", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--tuned-commit-ms", type=int, default=10,
                    help="the tuned-down peers' commit interval (Kafka Streams commit.interval.ms, quix commit_interval)")
    ap.add_argument("--only", nargs="*", default=None,
                    help="a subset of: relay kstreams-default kstreams-tuned quix-default quix-tuned tollgate")
    ap.add_argument("--warmup", type=float, default=30.0,
                    help="seconds at 1,000 events/s through the broker first (the relay), discarded (0: none)")
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--workdir", default=str(REPO / ".tollgate" / "bench"))
    # Every row's events and Tollgate's model, as ops/bench/engine.py makes them.
    add_event_arguments(ap)
    add_model_arguments(ap)
    ap.add_argument("--json", default=None, help="also write the summary rows here")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made

    apps = peers(args.tuned_commit_ms)
    labels = [*apps, TOLLGATE] if args.only is None else args.only
    unknown = set(labels) - {*apps, TOLLGATE}
    if unknown:
        ap.error(f"unknown --only {sorted(unknown)}: choose from {[*apps, TOLLGATE]}")
    if any(label.startswith("kstreams") for label in labels):
        ensure_kstreams()
    if any(label.startswith("quix") for label in labels):
        ensure_quix()
    bench = Bench(args)
    if args.warmup:
        # A broker that has just started is still compiling its hot paths (ops/bench/engine.py).
        saved = args.duration
        args.duration = args.warmup
        run_peer(bench, apps["relay"], 1000.0)
        args.duration = saved
        print(f"broker warm-up, discarded: {args.warmup:g} s at 1,000 events/s through the relay", flush=True)
    results: list[RunResult] = []
    rates: list[float | None] = [*args.rates, *([None] if args.saturation else [])]
    for i, rate in enumerate(rates):
        for label in labels if i % 2 == 0 else labels[::-1]:
            r = run_tollgate(bench, rate) if label == TOLLGATE else run_peer(bench, apps[label], rate)
            results.append(r)
            print_table([r])
    rows = summary(results, labels)
    print_summary(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
