"""Enrich's cost per event when the batch's terminals are busy, against quiet ones.

A merchant terminal that takes a payment every hour holds 744 hourly activity buckets
(31 days, ``TERMINAL_KEEP_BUCKETS``) in Redis, and ``RedisFeatureStore`` reads the
terminal for every batch that touches it: unlike customers
(``engine.features.customer_cache``), no copy of a terminal's state is kept, since every
worker writes every terminal. This measures what that costs as the history grows.

    eval "$(ops/stack up)"
    python ops/bench/busy_terminals.py [--terminals 64] [--hours 1 168 744] [--batches 20] [--before DIR]

For each history length: ``--terminals`` terminals get one payment per hour for that many
hours (recorded through the store, from many customers), then ``--batches`` batches of
512 payments from new customers spread evenly over the same terminals are enriched
(``--outcome-share``: that share of the history's payments also get an outcome a day
later, recorded through the store, so the terminals' label hashes fill up too). It
prints per event: the client's thread CPU, the Redis server's time in the store's scripts
(``INFO commandstats``, so run it on a Redis nothing else uses), and the wall time; and
the fields and bytes (``MEMORY USAGE``) of the first terminal's two hashes after the
history. Each run uses its own key namespace, deleted afterwards.

Since terminals keep day sums (``engine.features.terminal_days``), a batch reads a few
days of a busy terminal's hours and a sum for each other day, not all 744 hours. ``--before DIR`` runs the same measurement
on another checkout's store (``git archive REV | tar -x -C DIR``), in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from _common import REPO, redis_script_usec, stop_on_sigterm

DAY_MS, HOUR_MS = 86_400_000, 3_600_000
T0 = 1_700_000_000_000 - (1_700_000_000_000 % DAY_MS)
BATCH = 512


def measure(hours: int, terminals: int, batches: int, outcome_share: float) -> dict[str, Any]:
    """Per event over the measured batches: client thread CPU, the Redis server's time in
    scripts, wall time (µs); and the terminal's activity fields in Redis."""
    # local: imported here, after main() has put the tree being measured first on sys.path
    from engine.features.redis_store import RedisFeatureStore
    from engine.features.store import LabelArrival
    from engine.records import TransactionEvent
    from engine.settings import Settings

    def payment(i: int, t: int, customer: str, terminal: str) -> TransactionEvent:
        return TransactionEvent(f"bt-{i}", t, customer, "a-" + customer, terminal, "5411", 12.5, "EUR",
                                "card_present", "BE")

    store = RedisFeatureStore(settings=Settings(), namespace=f"bt-{uuid.uuid4().hex[:8]}")
    try:
        history = [payment(k, T0 + h * HOUR_MS + t, f"old{k % 5000}", f"t{t}")
                   for k, (h, t) in enumerate((h, t) for h in range(hours) for t in range(terminals))]
        for i in range(0, len(history), 2048):
            store.enrich(history[i:i + 2048])
            # an outcome a day after the payment, for a share of them (every k-th)
            every = round(1 / outcome_share) if outcome_share else 0
            store.record_outcomes([LabelArrival(e.event_id, e.terminal_id, e.event_time_ms, e.event_time_ms + DAY_MS,
                                                j % 50 == 0) for j, e in enumerate(history[i:i + 2048], i)
                                   if every and j % every == 0])
        keys = (store._k("tact", "t0"), store._k("tlab", "t0"))
        fields = sum(int(store.client.hlen(key)) for key in keys)
        memory = sum(int(store.client.memory_usage(key) or 0) for key in keys)
        now, k, cpu, n = T0 + hours * HOUR_MS, len(history), 0.0, 0
        del history  # its objects would make the collector's passes over the batches longer
        gc.collect()
        store.client.config_resetstat()
        wall0 = time.perf_counter()
        for b in range(batches):
            batch = [payment(k + j, now + b * 1000 + j, f"new{k + j}", f"t{j % terminals}") for j in range(BATCH)]
            k += BATCH
            t0 = time.thread_time()
            store.enrich(batch)
            cpu += time.thread_time() - t0
            n += BATCH
        wall = time.perf_counter() - wall0
        script_us = redis_script_usec(store.client)
        return {"client": cpu / n * 1e6, "redis": script_us / n, "wall": wall / n * 1e6, "fields": fields,
                "bytes": memory}
    finally:
        for key in store.client.scan_iter(f"{store.prefix}:*", count=10_000):
            store.client.unlink(key)


def _side(tree: Path, hours: int, terminals: int, batches: int, outcome_share: float) -> dict[str, Any]:
    run = subprocess.run([sys.executable, __file__, "--tree", str(tree), "--hours", str(hours),
                          "--terminals", str(terminals), "--batches", str(batches),
                          "--outcome-share", str(outcome_share)],
                         capture_output=True, text=True, timeout=1800)
    if run.returncode:
        raise SystemExit(f"measuring {tree} failed:\n{run.stderr}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--terminals", type=int, default=64)
    ap.add_argument("--hours", type=int, nargs="+", default=[1, 168, 744])
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--outcome-share", type=float, default=0.0,
                    help="the share of the history's payments whose outcome arrives (a day later)")
    ap.add_argument("--before", help="another checkout, measured in the same run (git archive REV | tar -x -C DIR)")
    ap.add_argument("--tree", help=argparse.SUPPRESS)  # one measurement of that tree, as JSON
    args = ap.parse_args()
    stop_on_sigterm()  # a killed run still deletes what it made
    if args.tree:
        sys.path.insert(0, str(Path(args.tree).resolve()))
        print(json.dumps(measure(args.hours[0], args.terminals, args.batches, args.outcome_share)))
        return
    trees = {"this tree": REPO} | ({"before": Path(args.before).resolve()} if args.before else {})
    print(f"enrich, batches of {BATCH} payments over {args.terminals} terminals "
          f"({BATCH // args.terminals} per terminal per batch), outcomes for {args.outcome_share:.0%} of the "
          f"history's payments; per event: client thread CPU, "
          f"Redis time in scripts, wall (µs)")
    for hours in args.hours:
        # each side in its own process; the order alternates with the history length
        order = list(trees.items()) if hours % 2 else list(trees.items())[::-1]
        got = {name: _side(tree, hours, args.terminals, args.batches, args.outcome_share) for name, tree in order}
        for name in trees:
            r = got[name]
            print(f"  {hours:5d} h of hourly history, {name:9s} (t0's hashes: {r['fields']:4d} fields, "
                  f"{r['bytes'] / 1024:5.1f} KiB): client "
                  f"{r['client']:6.1f}, Redis {r['redis']:6.1f}, wall {r['wall']:6.1f}")
        if args.before:
            a, b = got["this tree"], got["before"]
            print(f"        this tree / before: client {a['client'] / b['client']:.2f}, "
                  f"Redis {a['redis'] / b['redis']:.2f}, wall {a['wall'] / b['wall']:.2f}")


if __name__ == "__main__":
    main()
