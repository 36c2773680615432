"""Where a worker's CPU goes per event, stage by stage, in one process (no broker).

    python ops/bench/engine_profile.py [--model-dir DIR] [--events 6000] [--batch 512]
                                       [--mix users|legacy] [--no-descriptors] [--context memory|redis]
                                       [--cprofile 25]

The worker's per-batch work on the benchmark's events (``ops/bench/engine_events.py``),
as Kafka hands it over (Avro and JSON bytes with their headers): decode
(``engine.stages.decode``), enrich, encode, infer (in this process, one thread), detect,
decide, guard, and the verdicts' Avro encoding that emit does. Each stage's CPU time
(``time.thread_time``) is summed over all batches and printed per event, so the table
says which stage to make faster; ``--cprofile N`` also prints the N functions with the
most time of their own. ``--context redis`` enriches from ``TOLLGATE_REDIS_URL`` (a private
key prefix, deleted after) instead of the in-memory store: the round trips then count.

Not measured here: consume and the Kafka transaction (``ops/bench/engine.py`` measures the
whole worker, and the exactly-once floor, through the real broker).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections import defaultdict
from contextlib import contextmanager

import _common  # noqa: F401  (first: the repository, not this folder, on sys.path)

#: The pipeline's phases and the stages each one times (``engine.pipeline``).
PHASES = (("enrich", "encode"), ("infer",), ("detect", "decide", "guard"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", default=None, help="a model directory (default: a fresh model)")
    ap.add_argument("--events", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--warm-batches", type=int, default=2, help="batches run first and not counted")
    ap.add_argument("--mix", default="users", choices=("users", "legacy"))
    ap.add_argument("--no-descriptors", action="store_true",
                    help="--mix users without merchant descriptors (the mix before 2026-12-07)")
    ap.add_argument("--context", default="memory", choices=("memory", "redis"))
    ap.add_argument("--compare-old", action="store_true",
                    help="also finish every batch with the guard row by row (before #19), interleaved")
    ap.add_argument("--gc-freeze", action="store_true", help="gc.freeze() once the pipeline is built")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N", help="also print the top N functions")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made

    import tempfile
    from pathlib import Path

    import torch

    from engine.assemble import build_pipeline
    from engine.settings import RedisSettings, Settings
    from engine.stages.consume import RawRecord
    from engine.stages.decode import DecodeStage
    from engine.wire.codec import JSON_HEADERS, Codec
    from ops.bench.engine_events import describe, make_bench_events
    from tests.support.worker_support import save_fresh_model

    torch.set_num_threads(1)
    model_dir = args.model_dir or str(save_fresh_model(Path(tempfile.mkdtemp(prefix="tollgate-prof-")), "prof"))
    u = uuid.uuid4().hex[:8]
    settings = Settings()
    if args.context == "redis":
        settings = settings.model_copy(update={"redis": RedisSettings(url=settings.redis.url, key_prefix=f"tg-prof-{u}")})
    pipeline = build_pipeline(settings, model=model_dir, context=args.context, record=args.context == "redis")
    codec = Codec()
    events = make_bench_events(args.mix, u, args.events, descriptors=not args.no_descriptors)
    print(describe(events))
    records = [RawRecord("tx.events", i % 6, i, e.event.customer_id.encode(),
                         codec.events.encode_json(e.event) if e.json else codec.encode_event(e.event),
                         list(JSON_HEADERS) if e.json else [], 0, time.time() * 1000.0)
               for i, e in enumerate(events)]
    decode = DecodeStage(codec)
    if args.gc_freeze:
        import gc

        gc.collect()
        gc.freeze()
    cpu: dict[str, float] = defaultdict(float)

    @contextmanager
    def stage(name: str, counted: bool):
        t0 = time.thread_time()
        yield
        if counted:
            cpu[name] += time.thread_time() - t0

    from engine.stages.guard import Guard
    from ops.bench.engine_old import rows_apply_batch

    columns_apply_batch = Guard.apply_batch
    finish_cpu: dict[str, float] = defaultdict(float)
    profiler = None
    if args.cprofile:
        import cProfile

        profiler = cProfile.Profile()
    counted_events = 0
    for k, start in enumerate(range(0, len(records), args.batch)):
        counted = k >= args.warm_batches
        if counted and profiler is not None and k == args.warm_batches:
            profiler.enable()
        chunk = records[start:start + args.batch]
        with stage("decode", counted):
            decoded = decode(chunk)
        phase_cpu = []
        for phase in ("prepare", "score", "finish"):
            t0 = time.thread_time()
            if phase == "prepare":
                prepared = pipeline.prepare(decoded.events, decoded.arrival_ms)
            elif phase == "score":
                scored = pipeline.score(prepared)
            else:
                verdicts = pipeline.finish(scored)
            phase_cpu.append(time.thread_time() - t0)
        if args.compare_old and counted:
            # The same scored batch finished again with the guard row by row (the path
            # before #19), in alternating order; finish records nothing but metrics.
            order = (("old", rows_apply_batch), ("new", columns_apply_batch))
            for name, apply_batch in order if k % 2 else order[::-1]:
                Guard.apply_batch = apply_batch
                t0 = time.thread_time()
                pipeline.finish(scored)
                finish_cpu[name] += time.thread_time() - t0
            Guard.apply_batch = columns_apply_batch
        with stage("emit (encode verdicts)", counted):
            codec.encode_verdicts(verdicts)
        if counted:
            counted_events += len(chunk)
            # The pipeline times its stages in wall time; on a shared machine that counts
            # other processes' turns, so each phase's thread CPU is split by those shares.
            wall = prepared.timings.stage_ms
            for phase_s, names in zip(phase_cpu, PHASES):
                phase_wall = sum(wall[n] for n in names) or 1.0
                for n in names:
                    cpu[n] += phase_s * wall[n] / phase_wall
    if profiler is not None:
        profiler.disable()
    total = sum(cpu.values())
    print(f"{counted_events} events in batches of {args.batch}, context {args.context}, torch threads 1; "
          "thread CPU µs per event")
    for name, seconds in cpu.items():
        print(f"  {name:24s} {seconds * 1e6 / counted_events:8.1f}  {100 * seconds / total:5.1f} %")
    print(f"  {'total':24s} {total * 1e6 / counted_events:8.1f}   -> {counted_events / total:,.0f} events/s per core")
    if args.compare_old:
        old, new = finish_cpu["old"] * 1e6 / counted_events, finish_cpu["new"] * 1e6 / counted_events
        print(f"detect + decide + guard, the same batches finished twice, alternating: guard as columns "
              f"{new:.1f} µs/event, row by row (before) {old:.1f} µs/event ({old / new:.2f}x); the total above "
              f"would be {(total * 1e6 / counted_events) - new + old:.1f} µs/event row by row "
              f"({((total * 1e6 / counted_events) - new + old) / (total * 1e6 / counted_events):.2f}x)")
    if profiler is not None:
        import pstats

        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)
    if args.context == "redis":
        import redis

        r = redis.Redis.from_url(settings.redis.url)
        for key in r.scan_iter(f"tg-prof-{u}*", count=1000):
            r.delete(key)


if __name__ == "__main__":
    main()
