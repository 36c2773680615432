"""Write a month of history into a benchmark run's Redis prefix before its worker starts.

    python ops/bench/engine_history.py --redis-url URL --prefix P --events FILE [--tree DIR]

``ops/bench/engine.py`` runs this as a child, in the source tree whose worker it is about
to measure (``--tree``, for ``ops/bench/engine_ab.py``): each tree writes its own layout
of the state, so the history reads back the way that tree's workers would have left it.
It imports only names that every tree since the redesign has (``RedisFeatureStore``,
``LabelArrival``, ``TransactionEvent``, ``Settings``), and takes the events as a JSON
file (``engine_events.history_events``, written by the parent), so nothing from this
tree's ``ops/bench`` is needed on the other side.

The events go through the store's own ``enrich`` in event-time order, in batches as the
worker sends them; each payment's outcome arrives ``--label-delay-days`` after it, in
arrival order, for those whose outcome is known by the end of the history (one in
``--bad-every`` a fraud), recorded between the batches as it arrives (``replay``). It
prints one JSON line: events, labels, seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

DAY_MS = 86_400_000
#: An outcome reaches the feature store this long after its payment (about a week, as
#: chargebacks and settlements do): the history records those that arrived by its end,
#: ``engine_outcomes.py`` the rest during the run.
LABEL_DELAY_DAYS = 7.0
#: One outcome in this many is a fraud, in the history and during the run alike.
BAD_EVERY = 500


def outcomes(events: Sequence[Any], delay_ms: int, bad_every: int, label: Callable[..., Any]) -> list[Any]:
    """Each payment's outcome, arriving ``delay_ms`` after it, for those known by the end of
    the history (one in ``bad_every`` a fraud), in arrival order. ``label`` is the tree's
    ``LabelArrival``."""
    end = max((e.event_time_ms for e in events), default=0)
    return [label(e.event_id, e.terminal_id, e.event_time_ms, e.event_time_ms + delay_ms, i % bad_every == 0)
            for i, e in enumerate(events) if e.event_time_ms + delay_ms <= end]


def replay(store: Any, events: Sequence[Any], labels: Sequence[Any], batch: int) -> None:
    """``events`` through ``store.enrich`` in batches, each batch after the outcomes that
    arrived before its first payment, as a worker and the feedback worker would have
    recorded them."""
    li = 0
    for i in range(0, len(events), batch):
        chunk = events[i:i + batch]
        arrived = li
        while arrived < len(labels) and labels[arrived].arrival_time_ms <= chunk[0].event_time_ms:
            arrived += 1
        if arrived > li:
            store.record_outcomes(labels[li:arrived])
            li = arrived
        store.enrich(chunk)
    if li < len(labels):
        store.record_outcomes(labels[li:])


def tree_engine(tree: str | None, redis_url: str, prefix: str) -> tuple[Any, Any, Any]:
    """The feature store of ``tree``'s engine on the worker's key prefix, and that tree's
    ``LabelArrival`` and ``TransactionEvent`` (``engine_outcomes.py`` opens the same)."""
    if tree:
        sys.path.insert(0, str(Path(tree).resolve()))
    # local: the engine of --tree, found only once sys.path names it
    from engine.features.redis_store import RedisFeatureStore
    from engine.features.store import LabelArrival
    from engine.records import TransactionEvent
    from engine.settings import Settings

    store = RedisFeatureStore(settings=Settings(redis={"url": redis_url, "key_prefix": prefix,
                                                       "socket_timeout_s": 30}))
    return store, LabelArrival, TransactionEvent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis-url", required=True)
    ap.add_argument("--prefix", required=True, help="the worker's TOLLGATE_REDIS__KEY_PREFIX")
    ap.add_argument("--events", required=True, help="JSON list of TransactionEvent dicts, in event-time order")
    ap.add_argument("--tree", default=None, help="import the engine from this source tree")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--label-delay-days", type=float, default=LABEL_DELAY_DAYS)
    ap.add_argument("--bad-every", type=int, default=BAD_EVERY, help="one outcome in N is a fraud")
    args = ap.parse_args()
    store, LabelArrival, TransactionEvent = tree_engine(args.tree, args.redis_url, args.prefix)
    events = [TransactionEvent.from_dict(d) for d in json.loads(Path(args.events).read_text())]
    labels = outcomes(events, int(args.label_delay_days * DAY_MS), args.bad_every, LabelArrival)
    t0 = time.perf_counter()
    replay(store, events, labels, args.batch)
    print(json.dumps({"events": len(events), "labels": len(labels), "seconds": round(time.perf_counter() - t0, 1)}))


if __name__ == "__main__":
    main()
