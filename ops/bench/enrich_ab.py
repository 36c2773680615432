"""Enrich through Redis, two source trees interleaved batch by batch, on the events users send.

    eval "$(ops/stack up)"
    python ops/bench/enrich_ab.py --before DIR [--after DIR] [--events 40000] [--batch 512]

Each tree runs in its own process with its own key namespace on the stack's Redis, over
the same ``ops/bench/engine_events.realistic_events`` (returning and new customers at
shops of skewed trade), made here and handed to both sides as JSON (a side importing
them from its own tree would get that tree's mix). First each side writes the same month
of history (``--history-events``, as ``ops/bench/engine.py`` does: returning customers'
rows, busy shops in the day layout) with its own code; then the batches alternate between the two,
and which goes first alternates too, so a noisy neighbour hits both alike. Printed per
event after ``--warm-batches``: the client's thread CPU in ``RedisFeatureStore.enrich``,
the Redis server's time in the store's scripts (``INFO commandstats`` around each batch,
so run it on a Redis nothing else uses), each after ÷ before, and the median over batches
of the paired ratio of the two together. ``ops/bench/stage_ab.py`` times every stage but
only the client; ``ops/bench/busy_terminals.py`` does busy terminals.
Get a before tree with ``git archive REV | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import REPO, redis_script_usec, stop_on_sigterm

from ops.bench.engine_history import BAD_EVERY, DAY_MS, LABEL_DELAY_DAYS, outcomes, replay


def child(tree: str, events_file: str) -> None:
    """Write the history, then enrich the batches the parent names on stdin, answering
    [client µs, Redis µs] each."""
    sys.path.insert(0, tree)
    # local: imported here, after the tree being measured is first on sys.path
    assert "engine" not in sys.modules, "the engine was imported before the tree being measured"
    from engine.features.redis_store import RedisFeatureStore
    from engine.features.store import LabelArrival
    from engine.records import TransactionEvent
    from engine.settings import Settings

    given = json.loads(Path(events_file).read_text())
    events = [TransactionEvent.from_dict(d) for d in given["live"]]
    history = [TransactionEvent.from_dict(d) for d in given["history"]]
    store = RedisFeatureStore(settings=Settings(), namespace=f"enrich-ab-{uuid.uuid4().hex[:8]}")
    replay(store, history, outcomes(history, given["label_delay_ms"], given["bad_every"], LabelArrival), 512)
    del history
    gc.collect()
    print("ready", flush=True)
    try:
        for line in sys.stdin:
            first, size = map(int, line.split())
            if size == 0:
                break
            before = redis_script_usec(store.client)
            t0 = time.thread_time()
            store.enrich(events[first:first + size])
            cpu = time.thread_time() - t0
            print(json.dumps([cpu * 1e6, redis_script_usec(store.client) - before]), flush=True)
    finally:
        for key in store.client.scan_iter(f"{store.prefix}:*", count=10_000):
            store.client.unlink(key)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:  # one side: tree, events file
        child(sys.argv[2], sys.argv[3])
        return
    # local: the events import the engine, which a child must import from its own tree
    from ops.bench.engine_events import BASE_TIME_MS, history_events, realistic_events

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the tree before the change")
    ap.add_argument("--after", default=str(REPO), help="the tree after it (default: this one)")
    ap.add_argument("--events", type=int, default=40_000)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--warm-batches", type=int, default=10, help="batches run first on both sides and not counted")
    ap.add_argument("--history-events", type=int, default=100_000,
                    help="payments (with outcomes) of the month before, written first (0: none)")
    args = ap.parse_args()
    stop_on_sigterm()  # a killed run still deletes what it made
    unique = uuid.uuid4().hex[:6]
    trees = {"before": str(Path(args.before).resolve()), "after": str(Path(args.after).resolve())}
    events_file = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    with events_file:
        json.dump({"live": [b.event.to_dict() for b in realistic_events(unique, args.events)],
                   "history": [e.to_dict() for e in history_events(unique, args.history_events, BASE_TIME_MS)],
                   "label_delay_ms": int(LABEL_DELAY_DAYS * DAY_MS), "bad_every": BAD_EVERY}, events_file)
    kids = {name: subprocess.Popen([sys.executable, __file__, "--child", tree, events_file.name],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for name, tree in trees.items()}
    try:
        for kid in kids.values():
            if kid.stdout is None or kid.stdout.readline().strip() != "ready":
                raise SystemExit("a side failed to start")
        totals = {name: [0.0, 0.0] for name in kids}
        ratios, counted = [], 0
        for i, first in enumerate(range(0, args.events, args.batch)):
            size = min(args.batch, args.events - first)
            got = {}
            for name in (list(kids) if i % 2 else list(kids)[::-1]):
                kid = kids[name]
                assert kid.stdin is not None and kid.stdout is not None
                kid.stdin.write(f"{first} {size}\n")
                kid.stdin.flush()
                got[name] = json.loads(kid.stdout.readline())
            if i < args.warm_batches:
                continue
            counted += size
            for name, (cpu, script) in got.items():
                totals[name][0] += cpu
                totals[name][1] += script
            ratios.append(sum(got["after"]) / sum(got["before"]))
    finally:
        for kid in kids.values():
            try:
                if kid.stdin is not None:
                    kid.stdin.write("0 0\n")
                    kid.stdin.close()
            except BrokenPipeError:  # that side has already stopped
                pass
            kid.wait(timeout=300)
        Path(events_file.name).unlink()
    print(f"{counted} events in batches of {args.batch} (after {args.warm_batches} warm), interleaved; "
          f"µs per event")
    for name, (cpu, script) in totals.items():
        print(f"  {name:6s} client {cpu / counted:6.1f}  Redis scripts {script / counted:6.1f}")
    (bc, bs), (ac, as_) = totals["before"], totals["after"]
    print(f"  after / before: client {ac / bc:.3f}, Redis {as_ / bs:.3f}, both {(ac + as_) / (bc + bs):.3f}; "
          f"per-batch paired ratio of both: median {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
