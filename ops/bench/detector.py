"""Detector latency benchmark: per text and per event, p50/p95/p99, on this CPU.

Targets (issue 17): p99 <= 2 ms for a 256-character text at batch 1, and >= 5,000
texts/s batched (one ``score_texts`` call per micro-batch, as the engine calls it). The
headline is the **cold** path: every call gets a memo the detector has never seen
(distinct realistic 256-character memos built from the generated corpora), so the memo
cache never hits. Batched throughput at 64 and 256 texts per call, cached repeats,
short memos, attacks, events and bad input follow, then where the time of a cold
256-character memo goes (views / network / sentence encoder). Each case also prints
the share of views the screen sent on to the sentence encoder; the cold memo is timed
again with every view judged (screen bar 0) and with the screen alone (the
``detector.sentence_encoder=false`` setting). Wall time and this thread's CPU time are
both printed: on a shared, oversubscribed machine the wall tail is the scheduler's, the
CPU time is the code's own. NumPy's BLAS threads are capped as a worker caps them
(``settings.batch.blas_threads``) unless ``--blas-threads`` says otherwise.

The detector serves at the ``detector.encoder_runtime`` setting's default; the last
section times the sentence encoder's runtimes side by side (``--encoder-runtimes``):
batch-1 latency of a cold 256-character memo with the screen and with every view judged,
batched throughput, and one view through the encoder alone, in interleaved rounds.

    python ops/bench/detector.py --n 3000
    python ops/bench/detector.py --n 1000 --encoder-runtimes numpy onnx-fp32 onnx-int8
    python ops/bench/detector.py --n 500 --png .tollgate/reports/detector_latency.png
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import time
from collections.abc import Callable
from dataclasses import replace

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
import numpy as np  # noqa: E402

from engine.detector.sentence import SentenceEncoder, shared_encoder  # noqa: E402
from engine.detector.sentence_graph import ENCODER_RUNTIMES, EncoderRuntime  # noqa: E402
from engine.detector.views import field_input  # noqa: E402
from engine.offline.detector_corpus.corpus import benign_memos  # noqa: E402
from engine.records import TransactionEvent  # noqa: E402
from engine.settings import Settings  # noqa: E402
from engine.stages.detect import InjectionDetector  # noqa: E402
from engine.text.textproc import clean_user_text  # noqa: E402
from engine.worker.main import limit_blas_threads  # noqa: E402

TARGET_MS = 2.0
TARGET_BATCHED_PER_S = 5000
_BASE = ("Rent for June and the utilities split with Anna, thanks for sorting the internet bill last month. "
         "Also paying back the 20 for pizza 🍕 and the concert tickets; see you on Friday at the station near the bakery. ")
MEMO_256 = (_BASE * 3)[:256]
MULTILINE_256 = "\n".join(MEMO_256[i:i + 64] for i in range(0, 256, 64))


def distinct_memos(n: int, length: int = 256, seed: int = 11, attack_every: int = 0) -> list[str]:
    """``n`` distinct memos of exactly ``length`` characters, glued from generated benign
    memos and business sentences (mixed languages, emoji); with ``attack_every`` = k, a
    generated attack is inserted into every text at a random place (k is ignored
    otherwise)."""
    from engine.offline.detector_corpus.business import business_texts
    from engine.offline.detector_corpus.corpus import benign_memos, injection_memos

    rng = random.Random(seed)
    pool = benign_memos(4000, seed=seed) + business_texts(2000, seed=seed)
    attacks = [t for t, _ in injection_memos(max(n, 1), seed=seed)]
    out: dict[str, None] = {}
    while len(out) < n:
        parts: list[str] = []
        while sum(map(len, parts)) + len(parts) < length:
            parts.append(rng.choice(pool))
        if attack_every:
            parts.insert(rng.randrange(len(parts) + 1), attacks[len(out) % len(attacks)])
        out[" ".join(parts)[:length]] = None
    return list(out)


def _time(fn, args: list, warm: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Wall and thread-CPU milliseconds of ``fn(a)`` for each ``a`` in ``args`` (GC off)."""
    for a in args[:warm]:
        fn(a)
    gc.disable()
    try:
        wall, cpu = np.empty(len(args)), np.empty(len(args))
        for i, a in enumerate(args):
            c0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            fn(a)
            wall[i], cpu[i] = time.perf_counter_ns() - t0, time.thread_time_ns() - c0
    finally:
        gc.enable()
    return wall / 1e6, cpu / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=3000, help="timed calls per case")
    parser.add_argument("--png", default=None, help="write a latency histogram here")
    parser.add_argument("--encoder-runtimes", nargs="*", default=list(ENCODER_RUNTIMES), choices=ENCODER_RUNTIMES,
                        help="sentence-encoder runtimes timed side by side at the end (none: skip)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the runtime comparison")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="NumPy's BLAS threads (default: settings.batch.blas_threads, as a worker runs; "
                             "0: the library's default)")
    args = parser.parse_args()
    n = args.n
    blas_threads = Settings().batch.blas_threads if args.blas_threads is None else args.blas_threads
    limit_blas_threads(blas_threads)
    det = InjectionDetector.default()
    counter = _CountingEncoder(shared_encoder(runtime=det.network.encoder_runtime))
    det.network.encoder = counter
    fresh = InjectionDetector(det.network)  # its own (empty) memo cache
    uncached = InjectionDetector(det.network, cache_size=0)
    judge_all = InjectionDetector(replace(det.network, screen_bar=0.0), cache_size=0)
    screen_only = InjectionDetector(det.network.screen_only(), cache_size=0)
    warm = 200
    cold_256 = distinct_memos(n + warm)
    cold_attacks = distinct_memos(n + warm, attack_every=1, seed=12)
    # Generated memos at their own (short) lengths, made distinct by a counter.
    short = [f"{t} {i}" for i, t in enumerate(benign_memos(n + warm, seed=13))]
    events = [TransactionEvent(event_id=f"e{i}", event_time_ms=1_700_000_000_000, customer_id="c1",
                               account_id="a1", terminal_id="t1", merchant_category="5411", amount=42.0,
                               currency="EUR", channel="transfer", country="BE", memo=m,
                               merchant_descriptor=f"SQ *PHIL'S BAKERY {i} Portland OR")
              for i, m in enumerate(distinct_memos(n + warm, seed=14))]
    # Cases whose detector never counts on the shared encoder counter: their column says why.
    judged_label = {"cold 256-char memo, every view judged": "all",
                    "cold 256-char memo, screen only (setting)": "none"}
    cases = {
        "COLD 256-char memo, new text every call": (lambda t: fresh.score_text(t, "memo"), cold_256),
        "cold 256-char memo, every view judged": (lambda t: judge_all.score_text(t, "memo"), cold_256),
        "cold 256-char memo, screen only (setting)": (lambda t: screen_only.score_text(t, "memo"), cold_256),
        "cold 256-char memo with an attack inside": (lambda t: fresh.score_text(t, "memo"), cold_attacks),
        "cold short memo (generated, ~5-60 chars)": (lambda t: fresh.score_text(t, "memo"), short),
        "cold screen_event (256 memo + descriptor)": (lambda e: fresh.screen_event(e), events),
        "repeated 256-char memo (cache hit)": (lambda t: det.score_text(t, "memo"), [MEMO_256] * (n + warm)),
        "repeated 'rent June' (cache hit)": (lambda t: det.score_text(t, "memo"), ["rent June"] * (n + warm)),
        "uncached 256 chars on 4 lines": (lambda t: uncached.score_text(t, "memo"), [MULTILINE_256] * (n + warm)),
        "uncached 16 KiB binary junk": (lambda t: uncached.score_text(t, "memo"), [b"\xff\x00A" * 5461] * min(n, 500)),
    }
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"detector {det.version} on {platform.processor() or platform.machine()} ({os.cpu_count()} CPUs, "
          f"load {load:.1f}), python {platform.python_version()}, n={n} per case; target p99 < {TARGET_MS} ms "
          f"for a 256-character memo; BLAS threads {blas_threads or 'library default'}")
    print(f"screen bar {det.network.screen_bar:g}, threshold {det.threshold:g}, "
          f"encoder runtime {det.network.encoder_runtime}")
    print(f"{'case':44} {'wall p50':>8} {'p95':>7} {'p99':>7} {'cpu p50':>8} {'p95':>7} {'p99':>7} {'p99/target':>10} "
          f"{'judged':>7}  (ms)")
    timings = {}
    for name, (fn, items) in cases.items():
        counter.texts = 0
        wall, cpu = _time(fn, items, warm=warm if len(items) > warm else 20)
        timings[name] = wall
        w = np.percentile(wall, [50, 95, 99])
        c = np.percentile(cpu, [50, 95, 99])
        judged = judged_label.get(name, f"{counter.texts / len(items):.0%}")
        print(f"{name:44} {w[0]:8.3f} {w[1]:7.3f} {w[2]:7.3f} {c[0]:8.3f} {c[1]:7.3f} {c[2]:7.3f} {w[2] / TARGET_MS:10.2f} "
              f"{judged:>7}")
    _batched(uncached, cold_256, cold_attacks)
    _batched(screen_only, cold_256, cold_attacks, label="screen only (detector.sentence_encoder=false)")
    _breakdown(uncached, cold_256[:n])
    if args.png:
        _histogram(timings, args.png)
    if args.encoder_runtimes:
        _runtimes(args.encoder_runtimes, cold_256, cold_attacks, n, args.rounds)


def _runtimes(runtimes: list[EncoderRuntime], benign: list[str], attacks: list[str], n: int, rounds: int) -> None:
    """The encoder's runtimes side by side: each case timed for every runtime in turn,
    ``rounds`` times, so a change in the machine's load reaches all of them."""
    base = InjectionDetector.default(encoder_runtime="numpy").network
    served = {r: InjectionDetector(base.with_encoder_runtime(r), cache_size=0) for r in runtimes}
    judged = {r: InjectionDetector(replace(d.network, screen_bar=0.0), cache_size=0) for r, d in served.items()}
    encoders = {r: shared_encoder(runtime=r) for r in runtimes}
    batch = _mixed(benign, attacks)
    views = [field_text for m in benign[:n] for field_text in field_input(m).texts[:1]]
    cases: dict[str, Callable[[EncoderRuntime], float]] = {
        "cold 256-char memo, p99 wall ms": lambda r: float(np.percentile(
            _time(lambda t: served[r].score_text(t, "memo"), benign[:n], warm=50)[0], 99)),
        "  every view judged, p99 wall ms": lambda r: float(np.percentile(
            _time(lambda t: judged[r].score_text(t, "memo"), benign[:n], warm=50)[0], 99)),
        "  every view judged, p50 wall ms": lambda r: float(np.percentile(
            _time(lambda t: judged[r].score_text(t, "memo"), benign[:n], warm=50)[0], 50)),
        "encoder alone, one view, p50 CPU ms": lambda r: float(np.percentile(
            _time(lambda v: encoders[r].encode([v]), views, warm=50)[1], 50)),
        "batched 64 per call, texts/s wall": lambda r: _throughput(served[r], batch, 64),
        "batched 64 every view judged, texts/s": lambda r: _throughput(judged[r], batch, 64),
    }
    results: dict[str, dict[str, list[float]]] = {c: {r: [] for r in runtimes} for c in cases}
    for k in range(rounds):
        for r in (runtimes if k % 2 == 0 else runtimes[::-1]):
            for case, fn in cases.items():
                results[case][r].append(fn(r))
    print(f"sentence-encoder runtimes side by side (median of {rounds} interleaved rounds; "
          f"thresholds {', '.join(f'{r} {d.threshold:.4f}' for r, d in served.items())}):")
    print(f"  {'case':40}" + "".join(f"{r:>12}" for r in runtimes) + f"{'/ first':>18}")
    for case, per in results.items():
        values = {r: float(np.median(v)) for r, v in per.items()}
        first = values[runtimes[0]]
        ratios = " ".join(f"{values[r] / first:.2f}" for r in runtimes[1:])
        print(f"  {case:40}" + "".join(f"{values[r]:12.3f}" for r in runtimes) + f"{ratios:>18}")


def _throughput(det: InjectionDetector, texts: list[str], size: int) -> float:
    done, _, wall, _ = _timed_batches(det, texts, size)
    return done / wall


def _mixed(benign: list[str], attacks: list[str]) -> list[str]:
    """The batched cases' texts: benign, with every twentieth an attack."""
    return [attacks[i] if i % 20 == 0 else t for i, t in enumerate(benign)]


def _timed_batches(det: InjectionDetector, texts: list[str], size: int) -> tuple[int, int, float, float]:
    """``texts`` scored ``size`` per call after one warm call: texts scored, calls, wall
    seconds and process CPU seconds."""
    batches = [texts[i:i + size] for i in range(0, len(texts) - size + 1, size)]
    det.score_texts(batches[0])
    c0, t0 = time.process_time(), time.perf_counter()
    for b in batches:
        det.score_texts(b)
    return len(batches) * size, len(batches), time.perf_counter() - t0, time.process_time() - c0


class _CountingEncoder:
    """The real encoder, counting the texts (views) that reach it; ``texts`` per item
    is the judged share (most items have one view)."""

    def __init__(self, encoder: SentenceEncoder) -> None:
        self.encoder, self.texts = encoder, 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.encoder.encode(texts)


def _batched(det: InjectionDetector, benign: list[str], attacks: list[str], label: str = "default") -> None:
    """Texts per second when a micro-batch's texts are scored in one call (uncached, 256
    characters each, 1 in 20 holding an attack), wall clock and process CPU."""
    texts = _mixed(benign, attacks)
    print(f"batched, cold 256-character texts, {label} (target >= {TARGET_BATCHED_PER_S} texts/s):")
    for size in (16, 64, 256):
        done, calls, wall, cpu = _timed_batches(det, texts, size)
        print(f"  batch {size:4}: {done / wall:8.0f} texts/s wall, {done / cpu:8.0f} per CPU-second, "
              f"{wall / calls * 1e3:7.2f} ms per call  (x{done / wall / TARGET_BATCHED_PER_S:.2f} of target)")


def _breakdown(det: InjectionDetector, memos: list[str]) -> None:
    """Median CPU time of each step for cold 256-character memos, and its share."""
    inputs = [field_input(m) for m in memos]
    steps = {
        "clean_user_text (NFKC, invisibles, caps)": (lambda m: clean_user_text(m), memos),
        "views (cleaning, measures, pieces)": (lambda m: field_input(m), memos),
        "network (hash, gather, layers, pool)": (lambda f: det.network.logits(f.texts, f.dense), inputs),
        "  of which the screen head alone": (lambda f: det.network.screen_logits(f.texts, f.dense), inputs),
        "sentence encoder, one view (when judged)": (
            lambda f: shared_encoder(runtime=det.network.encoder_runtime).encode(f.texts[:1]), inputs),
        "whole score_text, uncached": (lambda m: det.score_text(m, "memo"), memos),
    }
    medians = {name: float(np.percentile(_time(fn, items, warm=50)[1], 50)) for name, (fn, items) in steps.items()}
    total = medians["whole score_text, uncached"]
    print("where a cold 256-character memo's time goes (CPU p50):")
    for name, ms in medians.items():
        print(f"  {name:44} {ms * 1000:7.1f} µs  {ms / total:5.0%}")


def _histogram(timings: dict[str, np.ndarray], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name in list(timings)[:4]:
        ax.hist(timings[name], bins=80, range=(0, 3.0), histtype="step", label=name)
    ax.axvline(TARGET_MS, color="k", linestyle="--", label="target p99")
    ax.set_xlabel("ms per call")
    ax.set_ylabel("calls")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"histogram written to {path}")


if __name__ == "__main__":
    main()
