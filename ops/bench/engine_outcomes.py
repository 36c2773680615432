"""Record outcomes while a benchmark run's worker decides, as the feedback worker would.

    python ops/bench/engine_outcomes.py --redis-url URL --prefix P --payments FILE [--tree DIR]

In a running system the outcome of every payment (settled, or charged back) reaches the
feature store about a week after the payment, through the feedback worker
(``FeatureStore.record_outcomes``): Redis records about one outcome for each payment a
worker decides, on the same server, while the worker reads and writes its state. The
month of history (``ops/bench/engine_history.py``) leaves the outcomes of its last week
still to come; this child records them during the measured run.

``ops/bench/engine.py`` starts it in the tree whose worker it measures (``--tree``, as for
the history) once the worker is ready, and writes ``"<verdicts> <event time ms>"`` lines on
its stdin as its reader receives verdicts. The child records outcomes until it has
recorded one for each verdict, in batches of at most ``--batch`` (the feedback worker's
batch), arriving at that event time: the history's payments whose outcome is still to come,
in event-time order, and once those are used up the same shops and times under new
event ids. One in ``--bad-every`` is a fraud. ``0 0`` or the end of stdin stops it; it
prints one JSON line: outcomes, batches, seconds spent recording.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

try:
    import _common  # noqa: F401,I001  (first: the repository, not this folder, on sys.path)
except ModuleNotFoundError:  # imported as ops.bench.engine_outcomes (the tests)
    pass
from ops.bench.engine_history import BAD_EVERY, tree_engine  # noqa: E402  (it imports no engine: --tree's comes first)


def arrivals(payments: Sequence[Any], bad_every: int, label: Callable[..., Any]) -> Iterator[Callable[[int], Any]]:
    """Each next outcome, as a function of its arrival time: the ``payments`` in order, then
    again under new ids (``<id>~1``, ``<id>~2``...), so the run never runs out. ``label``
    is the tree's ``LabelArrival``."""
    if not payments:
        return
    k = 0
    while True:
        p = payments[k % len(payments)]
        event_id = p.event_id if k < len(payments) else f"{p.event_id}~{k // len(payments)}"
        yield (lambda at, e=event_id, p=p, bad=(k % bad_every == 0):
               label(e, p.terminal_id, p.event_time_ms, max(at, p.event_time_ms), bad))
        k += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--redis-url", required=True)
    ap.add_argument("--prefix", required=True, help="the worker's TOLLGATE_REDIS__KEY_PREFIX")
    ap.add_argument("--payments", required=True,
                    help="JSON list of TransactionEvent dicts whose outcome is still to come, in event-time order")
    ap.add_argument("--tree", default=None, help="import the engine from this source tree")
    ap.add_argument("--batch", type=int, default=500, help="most outcomes per record_outcomes call")
    ap.add_argument("--bad-every", type=int, default=BAD_EVERY, help="one outcome in N is a fraud")
    args = ap.parse_args()
    store, LabelArrival, TransactionEvent = tree_engine(args.tree, args.redis_url, args.prefix)
    payments = [TransactionEvent.from_dict(d) for d in json.loads(Path(args.payments).read_text())]
    upcoming = arrivals(payments, args.bad_every, LabelArrival)
    recorded = batches = 0
    busy = 0.0
    print("ready", flush=True)
    for line in sys.stdin:
        verdicts, at = (int(x) for x in line.split())
        if verdicts == 0 and at == 0:
            break
        while payments and recorded < verdicts:
            n = min(args.batch, verdicts - recorded)
            t0 = time.perf_counter()
            store.record_outcomes([next(upcoming)(at) for _ in range(n)])
            busy += time.perf_counter() - t0
            recorded += n
            batches += 1
    print(json.dumps({"outcomes": recorded, "batches": batches, "seconds": round(busy, 2)}), flush=True)


if __name__ == "__main__":
    main()
