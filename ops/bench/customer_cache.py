"""Enrich with and without the worker's copies of customer states
(``engine.features.customer_cache``), batch by batch in one run, on the engine
benchmark's user events (``engine_events.realistic_events``: 5,000 returning customers,
Zipf-like, plus 10 % new ones; 50 ms apart).

    eval "$(ops/stack up)"
    python ops/bench/customer_cache.py --events 40000

Two ``RedisFeatureStore`` s in their own namespaces get the same batches of ``--batch``
events, alternately, so a noisy neighbour hits both alike: one keeps its copies
(``redis.customer_cache_events``), one reads every customer back (0). Per event: the
client's CPU in ``enrich`` (thread time), the Redis server's CPU (``INFO cpu`` around
each call: run it on a Redis nothing else uses), the reply's size; and the share of
customers answered from the copy. Both stores' snapshots are compared as they go.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

from engine.features.redis_store import RedisFeatureStore  # noqa: E402
from engine.settings import Settings  # noqa: E402
from ops.bench.engine_events import realistic_events  # noqa: E402


def _redis_cpu_s(store: RedisFeatureStore) -> float:
    info = store.client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--warm-batches", type=int, default=10, help="batches not counted (both stores fill)")
    args = ap.parse_args()
    _common.stop_on_sigterm()  # a killed run still deletes what it made
    stack = _common.stack_from_env()
    if stack is None:
        return 2
    _, redis_url = stack
    unique = uuid.uuid4().hex[:8]
    events = [b.event for b in realistic_events(unique, args.events)]
    stores = {
        "copies": RedisFeatureStore(settings=Settings(redis={"url": redis_url}), namespace=f"bcc-{unique}-on"),
        "read back": RedisFeatureStore(settings=Settings(redis={"url": redis_url, "customer_cache_events": 0}),
                                       namespace=f"bcc-{unique}-off"),
    }
    cpu: dict[str, list[float]] = {k: [] for k in stores}
    server: dict[str, list[float]] = {k: [] for k in stores}
    try:
        for i, start in enumerate(range(0, len(events), args.batch)):
            batch = events[start:start + args.batch]
            order = list(stores) if i % 2 == 0 else list(reversed(stores))
            out = {}
            for name in order:
                store = stores[name]
                r0, c0 = _redis_cpu_s(store), time.thread_time()
                out[name] = store.enrich(batch)
                c1, r1 = time.thread_time(), _redis_cpu_s(store)
                if i >= args.warm_batches:
                    cpu[name].append((c1 - c0) / len(batch) * 1e6)
                    server[name].append((r1 - r0) / len(batch) * 1e6)
            if out["copies"] != out["read back"]:
                print(f"batch {i}: the snapshots differ", file=sys.stderr)
                return 1
        on = stores["copies"]
        print(f"{len(events)} events in batches of {args.batch}, {len(cpu['copies'])} batches counted; "
              f"customers answered from the copy: {on.customer_hits / max(1, on.customer_hits + on.customer_reads):.1%} "
              f"({on.customer_hits} of {on.customer_hits + on.customer_reads}), {len(on.customers)} held")
        for name in stores:
            print(f"  {name:10s} enrich client CPU {statistics.median(cpu[name]):6.1f} us/event (median of batches)  "
                  f"Redis CPU {statistics.median(server[name]):6.1f} us/event")
        print(f"  copies / read back: client {statistics.median(cpu['copies']) / statistics.median(cpu['read back']):.2f}x"
              f"  Redis {statistics.median(server['copies']) / statistics.median(server['read back']):.2f}x")
    finally:
        for store in stores.values():
            keys = list(store.client.scan_iter(f"{store.prefix}:*", count=10_000))
            for k in range(0, len(keys), 1_000):
                store.client.unlink(*keys[k:k + 1_000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
