"""Does redis-py's C reply parser (hiredis) make the context store cheaper? Exactly A/B.

    pip install hiredis   # not a dependency of Tollgate: this measures whether it should be
    python ops/bench/redis_parser.py [--events 12000] [--batch 512]

Two ``RedisFeatureStore`` on ``TOLLGATE_REDIS_URL`` (each its own key prefix, deleted after),
one client with redis-py's Python RESP3 parser and one with ``_HiredisParser``, enrich
the same batches of ``ops/bench/engine_events.py`` events, alternating batch by batch
and which goes first, in one process; printed is each one's thread CPU per event. Sequential
runs on this VM differ by more than the effect (``ops/bench/stage_ab.py`` says why).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=12000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--warm-batches", type=int, default=2)
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made

    from redis._parsers import _HiredisParser, _RESP3Parser
    from redis.utils import HIREDIS_AVAILABLE

    from engine.features.redis_store import RedisFeatureStore
    from engine.wire.redisconn import connect
    from ops.bench.engine_events import make_bench_events

    if not HIREDIS_AVAILABLE:
        raise SystemExit("hiredis is not installed: pip install hiredis, then run this again")
    url = os.environ.get("TOLLGATE_REDIS_URL", "redis://127.0.0.1:6379/0")
    unique = uuid.uuid4().hex[:8]
    events = [b.event for b in make_bench_events("users", unique, args.events)]
    stores = {name: RedisFeatureStore(connect(url, socket_timeout_s=10, parser_class=parser),
                                      namespace=f"parser-ab-{unique}-{name}")
              for name, parser in (("python", _RESP3Parser), ("hiredis", _HiredisParser))}
    cpu, counted = dict.fromkeys(stores, 0.0), 0
    try:
        for k, start in enumerate(range(0, len(events), args.batch)):
            chunk = events[start:start + args.batch]
            for name in (list(stores) if k % 2 else list(stores)[::-1]):
                t0 = time.thread_time()
                stores[name].enrich(chunk)
                if k >= args.warm_batches:
                    cpu[name] += time.thread_time() - t0
            if k >= args.warm_batches:
                counted += len(chunk)
    finally:
        r = connect(url)
        for key in r.scan_iter(f"*parser-ab-{unique}-*", count=1000):
            r.delete(key)
    for name, seconds in cpu.items():
        print(f"{name:8s} enrich {seconds * 1e6 / counted:6.1f} µs/event (thread CPU, {counted} events, interleaved)")


if __name__ == "__main__":
    main()
