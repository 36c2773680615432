"""``InFlight``: one micro-batch on its way from poll to commit, and what its
transaction holds.

The worker (``engine.worker.loop``) keeps several batches in flight — being prepared and
scored on its threads (``Started``), finished on its main thread, in a Kafka
transaction on the commit thread — and commits them strictly in order. This module is the
bookkeeping that makes that safe: which records a batch holds, which of its
partitions were revoked while it was in flight (their records are then neither
emitted nor committed by it: the new owner re-reads them from the committed offset),
and where to rewind when a batch and everything after it must be redone.

>>> from engine.stages.consume import RawRecord
>>> from engine.stages.decode import Decoded
>>> recs = [RawRecord("t", p, o, None, b"", (), 0, 0.0) for p, o in ((0, 5), (1, 7), (0, 6))]
>>> b = InFlight(recs, Decoded([], [], []))
>>> b.next_offsets()
{('t', 0): 7, ('t', 1): 8}
>>> b.revoked.add(("t", 1)); b.next_offsets()
{('t', 0): 7}
>>> first_offsets([recs[1:], recs[:1]])
{('t', 1): 7, ('t', 0): 5}
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

from engine.records import Verdict, VerdictBatch
from engine.stages.consume import RawRecord
from engine.stages.decode import Decoded
from engine.wire.codec import DeadLetter

Partition = tuple[str, int]


@dataclass(slots=True, eq=False)
class InFlight:
    records: list[RawRecord]
    decoded: Decoded
    #: ``DecisionPipeline.prepare`` running on the prepare thread (a backlog's batch).
    preparing: Future[Any] | None = None
    #: The batch's ``ScoredBatch``: ``DecisionPipeline.score`` on the infer thread, or done
    #: in line (``run_now``); None when there is nothing to finish.
    scoring: Future[Any] | None = None
    verdicts: VerdictBatch = field(default_factory=lambda: VerdictBatch.of(()))
    #: Arrival time of each verdict's event, and its source partition (aligned with ``verdicts``).
    arrivals: list[float] = field(default_factory=list)
    sources: list[Partition] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    #: Partitions taken from this worker while the batch was in flight.
    revoked: set[Partition] = field(default_factory=set)
    #: ``TransactionalEmitter.commit_batch`` running on the commit thread (or done in line).
    committing: Future[Any] | None = None
    #: Commit on the commit thread while the next batch is decided (records were still
    #: arriving when this batch closed); otherwise in line, at once.
    overlap_commit: bool = False
    #: ``TransactionalEmitter.open_transaction`` for this batch's offsets, begun on the
    #: commit thread while the batch is decided (``BatchCommitter.open_early``), and the
    #: offsets it added; None when the transaction opens at commit time.
    opening: Future[Any] | None = None
    opened_offsets: dict[Partition, int] | None = None

    @property
    def scored(self) -> bool:
        return self.scoring is None or self.scoring.done()

    def decided(self, verdicts: Sequence[Verdict], events: Sequence[Any], arrivals: Sequence[float],
                failed: Sequence[DeadLetter] = ()) -> None:
        """Record the verdicts of ``events`` (aligned) and the events that failed."""
        self.verdicts = VerdictBatch.of(verdicts)
        self.arrivals = list(arrivals)
        self.sources = [(e.source.topic, e.source.partition) if e.source is not None else ("", -1) for e in events]
        self.dead_letters = list(self.decoded.dead_letters) + list(failed)

    def to_commit(self) -> tuple[VerdictBatch, list[float], list[DeadLetter], dict[Partition, int]]:
        """Verdicts (with arrival times), dead letters and next offsets of the partitions
        this worker still owns."""
        gone = self.revoked
        keep = [i for i, src in enumerate(self.sources) if src not in gone]
        dead = [d for d in self.dead_letters if (d.source_topic, d.source_partition) not in gone]
        if len(keep) == len(self.sources):  # the usual case: every partition still ours
            return self.verdicts, list(self.arrivals), dead, self.next_offsets()
        return self.verdicts.take(keep), [self.arrivals[i] for i in keep], dead, self.next_offsets()

    def next_offsets(self) -> dict[Partition, int]:
        """Last offset + 1 of every owned partition in the batch, dead-lettered records included."""
        out: dict[Partition, int] = {}
        for r in self.records:
            key = (r.topic, r.partition)
            if key not in self.revoked and r.offset + 1 > out.get(key, -1):
                out[key] = r.offset + 1
        return out


class Started:
    """The batches started and not yet finished, oldest first: a backlog's are being
    prepared or scored on the worker's threads meanwhile."""

    def __init__(self) -> None:
        self._batches: deque[InFlight] = deque()

    def __len__(self) -> int:
        return len(self._batches)

    def __iter__(self) -> Iterator[InFlight]:
        return iter(self._batches)

    def append(self, batch: InFlight) -> None:
        self._batches.append(batch)

    def wait_for_prepares(self) -> None:
        """Until no batch is being prepared on the prepare thread (it runs them in order,
        so the newest is the last): an in-line prepare must not overtake one there."""
        if self._batches and self._batches[-1].preparing is not None:
            wait([self._batches[-1].preparing])

    def pop_oldest(self) -> InFlight:
        """The oldest batch, once its forward pass is done (or failed)."""
        batch = self._batches.popleft()
        if batch.scoring is not None:
            wait([batch.scoring])
        return batch

    def take_all(self) -> list[InFlight]:
        """Every batch (to be redone), once the threads are done with them."""
        batches, self._batches = list(self._batches), deque()
        wait([b.scoring for b in batches if b.scoring is not None])
        return batches


def first_offsets(record_lists: Iterable[Sequence[RawRecord]]) -> dict[Partition, int]:
    """The earliest offset per partition over several batches: where a redo starts."""
    out: dict[Partition, int] = {}
    for records in record_lists:
        for r in records:
            key = (r.topic, r.partition)
            if key not in out or r.offset < out[key]:
                out[key] = r.offset
    return out


def run_now(fn: Callable[[Any], Any], arg: Any) -> Future[Any]:
    """``fn(arg)`` on this thread, as a finished future: a batch scored in line takes the
    same path (and error path, at ``result()``) as one scored on the infer thread."""
    future: Future[Any] = Future()
    try:
        future.set_result(fn(arg))
    except Exception as exc:  # noqa: BLE001 - re-raised by result(), as the thread's would be
        future.set_exception(exc)
    return future


def score_when_prepared(pipeline: Any, preparing: Future[Any]) -> Any:
    """The infer thread's task for a backlog's batch: its forward pass once the prepare
    thread has enriched and encoded it (a prepare error is raised from here)."""
    return pipeline.score(preparing.result())


#: A quiet stream's batch of fewer rows is scored in line, and committed at once: the main
#: thread waits for the model process (without the GIL) as long as the infer thread would,
#: while a batch handed to that thread stays pending until later batches push it out
#: (p50 at 250 events/s: ``python ops/bench/engine.py --rates 250 --modes split-64
#: --mode-rates 250``; figures in docs/performance-worker.md).
THREAD_MIN_ROWS = 64


def worth_a_thread(prepared: Any) -> bool:
    """Whether the infer thread should score this quiet-stream batch (a backlog's batches
    always go there): when it is large enough for the overlap with the next batch to pay,
    or, for a ``SplitInference``, when it goes to the model process at all (a hand-off
    of a batch scored here would only add the thread's wait for the GIL)."""
    inference = getattr(getattr(prepared, "components", None), "inference", None)
    encoded = getattr(prepared, "encoded", None)
    rows = len(encoded) if encoded is not None else 0
    runs_remote = getattr(inference, "runs_remote", None)
    return runs_remote(rows) if runs_remote is not None else rows >= THREAD_MIN_ROWS
