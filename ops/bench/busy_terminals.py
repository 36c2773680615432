"""Enrich's cost per event when the batch's terminals are busy, against quiet ones.

A merchant terminal that takes a payment every hour holds 744 hourly activity buckets
(31 days, ``TERMINAL_KEEP_BUCKETS``) in Redis, and ``RedisFeatureStore`` reads and parses
the whole hash, and the terminal's label hash, for every batch that touches it: unlike
customers (``engine.features.customer_cache``), no copy of a terminal's state is kept.
This measures what that costs as the history grows.

    eval "$(ops/stack up)"
    python ops/bench/busy_terminals.py [--terminals 64] [--hours 1 168 744] [--batches 20]

For each history length: ``--terminals`` terminals get one payment per hour for that many
hours (recorded through the store, from many customers), then ``--batches`` batches of
512 payments from new customers spread evenly over the same terminals are enriched, and
the client's thread CPU per event is printed (the Redis server's own time is not in it).
Each run uses its own key namespace, deleted afterwards.
"""

from __future__ import annotations

import argparse
import time
import uuid

import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)

from engine.features.redis_store import RedisFeatureStore  # noqa: E402
from engine.features.spec import DAY_MS, HOUR_MS  # noqa: E402
from engine.records import TransactionEvent  # noqa: E402
from engine.settings import Settings  # noqa: E402

T0 = 1_700_000_000_000 - (1_700_000_000_000 % DAY_MS)
BATCH = 512


def payment(i: int, t: int, customer: str, terminal: str) -> TransactionEvent:
    return TransactionEvent(f"bt-{i}", t, customer, "a-" + customer, terminal, "5411", 12.5, "EUR",
                            "card_present", "BE")


def enrich_cpu_per_event(settings: Settings, hours: int, terminals: int, batches: int) -> tuple[float, int]:
    """(client CPU µs per event over the measured batches, activity buckets per terminal)."""
    store = RedisFeatureStore(settings=settings, namespace=f"bt-{uuid.uuid4().hex[:8]}")
    try:
        history = [payment(k, T0 + h * HOUR_MS + t, f"old{k % 5000}", f"t{t}")
                   for k, (h, t) in enumerate((h, t) for h in range(hours) for t in range(terminals))]
        for i in range(0, len(history), 2048):
            store.enrich(history[i:i + 2048])
        buckets = store.client.hlen(store._k("tact", "t0"))
        now, k, cpu, n = T0 + hours * HOUR_MS, len(history), 0.0, 0
        for b in range(batches):
            batch = [payment(k + j, now + b * 1000 + j, f"new{k + j}", f"t{j % terminals}") for j in range(BATCH)]
            k += BATCH
            t0 = time.thread_time()
            store.enrich(batch)
            cpu += time.thread_time() - t0
            n += BATCH
        return cpu / n * 1e6, int(buckets)
    finally:
        for key in store.client.scan_iter(f"{store.prefix}:*", count=10_000):
            store.client.unlink(key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--terminals", type=int, default=64)
    ap.add_argument("--hours", type=int, nargs="+", default=[1, 168, 744])
    ap.add_argument("--batches", type=int, default=20)
    args = ap.parse_args()
    settings = Settings()
    print(f"enrich, batches of {BATCH} payments over {args.terminals} terminals "
          f"({BATCH // args.terminals} per terminal per batch); client thread CPU per event")
    base = None
    for hours in args.hours:
        us, buckets = enrich_cpu_per_event(settings, hours, args.terminals, args.batches)
        base = base or us
        print(f"  {hours:5d} h of hourly history ({buckets:4d} buckets per terminal): {us:7.1f} µs/event "
              f"({us / base:.2f}x the first)")


if __name__ == "__main__":
    main()
