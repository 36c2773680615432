"""The worker's commit step: one Kafka transaction per batch, one at a time, in batch order.

``BatchCommitter`` holds the transaction in flight, if any. The worker calls
``begin`` for a decided batch only after ``reap(block=True)`` has settled the
previous one, so transactions never overlap and commit in the order the batches were
read (``engine.worker.loop`` describes the whole protocol; ``engine.stages.emit`` one transaction).

A batch that closed while records were still arriving (``InFlight.overlap_commit``)
commits on the commit thread, which mostly waits for the broker, while the main thread
decides the next batch. Otherwise it commits in line: on a quiet stream there is nothing
to overlap, and the hand-off would only add that thread's wait for the GIL (a worse p95
at 250 and 500 events/s: ``python ops/bench/engine.py --rates 250 500``). Its first
half, begin and send offsets, can still run on the commit thread while the batch is
decided (``open_early``): those wait for the broker, not for the GIL.

A transaction that fails with an abortable error surfaces from ``reap`` as
``TransactionFailed``; the worker then rewinds that batch and every later one. Every
wait for the commit thread is bounded by ``TransactionalEmitter.longest_commit_s``
(its own calls are bounded by a watchdog); past it ``CallOverran`` is raised and the
worker exits to be restarted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from engine.observe.metrics import EngineMetrics
from engine.records import Verdict
from engine.stages.emit import BatchAborted, OutgoingRecord, TransactionalEmitter
from engine.wire.codec import DeadLetter
from engine.worker.inflight import InFlight, run_now
from engine.worker.watchdog import CallOverran


class TransactionFailed(Exception):
    """``batch``'s transaction was aborted (``error``); nothing of it is visible."""

    def __init__(self, batch: InFlight, error: BatchAborted):
        super().__init__(str(error))
        self.batch, self.error = batch, error


class BatchCommitter:
    """Begins, and accounts for, the transaction of one batch at a time."""

    def __init__(self, emitter: TransactionalEmitter, metrics: EngineMetrics):
        self.emitter = emitter
        self.metrics = metrics
        self.in_flight: InFlight | None = None  # its transaction has begun, not yet reaped
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tollgate-commit")

    def open_early(self, batch: InFlight, group_metadata: Any) -> None:
        """Open ``batch``'s transaction on the commit thread now, before the batch is
        decided: begin it and add the offsets the batch will commit. Those are round
        trips to the coordinator (slower right after the previous commit, while the
        coordinator writes its markers) that a quiet stream's batch otherwise waits for
        after its decision. Only for a batch that will be committed next, in line,
        within the same loop step: no transaction is in flight and no poll (so no
        revocation) comes between. ``begin`` finishes it;
        ``abandon`` aborts it when the batch is redone instead.
        (``python ops/bench/engine.py --rates 250 500 --modes no-early-open --mode-rates 250 500``)"""
        assert self.in_flight is None and batch.opening is None, "one open transaction at a time"
        offsets = batch.next_offsets()
        if not offsets:
            return
        batch.opened_offsets = offsets
        batch.opening = self._thread.submit(self.emitter.open_transaction, offsets, group_metadata)

    def abandon(self, batch: InFlight) -> None:
        """``batch`` will be redone: abort the transaction ``open_early`` began for it, if
        any (bounded like a commit; an opening that failed has aborted itself)."""
        opening, batch.opening, batch.opened_offsets = batch.opening, None, None
        if opening is None:
            return
        try:
            self._result(opening)
        except BatchAborted:
            return
        self.emitter.abort()

    def begin(self, batch: InFlight, group_metadata: Callable[[], Any]) -> bool:
        """Start ``batch``'s transaction: its verdicts, dead letters and next offsets, with
        the consumer's group metadata (asked for only here: a transaction ``open_early``
        began already has it, and this finishes that one). False when nothing of it is
        ours any more (every partition was revoked while it was in flight)."""
        assert self.in_flight is None, "reap the previous transaction first"
        verdicts, arrivals, dead_letters, offsets = batch.to_commit()
        if batch.opening is not None and batch.opened_offsets != offsets:
            self.abandon(batch)  # not reached by the loop: an early batch never loses a partition
        if not offsets:
            return False
        encoded = self.emitter.encode(verdicts, dead_letters)
        batch.verdicts, batch.arrivals, batch.dead_letters = verdicts, arrivals, dead_letters
        meta = group_metadata() if batch.opening is None else None
        args = (verdicts, dead_letters, offsets, meta, encoded, batch.opening)
        batch.opening = batch.opened_offsets = None
        self.in_flight = batch
        batch.committing = (self._thread.submit(self._commit, *args) if batch.overlap_commit
                            else run_now(lambda a: self._commit(*a), args))
        return True

    def reap(self, block: bool) -> bool:
        """Account for the transaction in flight once it is done (waiting for it when
        ``block``). True when one committed just now; raises ``TransactionFailed`` when it
        was aborted."""
        batch = self.in_flight
        if batch is None or batch.committing is None:
            return False
        if not block and not batch.committing.done():
            return False
        self.in_flight = None
        try:
            seconds, committed_ms = self._result(batch.committing)
        except BatchAborted as exc:
            raise TransactionFailed(batch, exc) from exc
        self._account(batch, seconds, committed_ms)
        return True

    def settle_before(self, failed: InFlight) -> InFlight | None:
        """Before ``failed`` is redone: wait for a transaction still committing ahead of it.
        Returns that batch when its transaction failed too (it must be redone as well)."""
        earlier = self.in_flight
        if earlier is None or earlier is failed:
            return None
        self.in_flight = None
        try:
            seconds, committed_ms = self._result(earlier.committing)  # type: ignore[arg-type]
        except BatchAborted:
            return earlier
        self._account(earlier, seconds, committed_ms)  # committed: its verdicts count
        return None

    def settle(self) -> None:
        """Wait for the transaction in flight to end (a rebalance must not move partitions
        while their offsets are being committed); ``reap`` still accounts for it."""
        if self.in_flight is not None and self.in_flight.committing is not None:
            try:
                self._result(self.in_flight.committing)
            except CallOverran:
                raise
            except Exception:  # noqa: BLE001 - reap reports how it ended
                pass

    def shutdown(self) -> None:
        self._thread.shutdown(wait=True)

    def _result(self, committing: Future[Any]) -> Any:
        """The commit thread's answer, waited for at most as long as a transaction can take."""
        bound_s = self.emitter.longest_commit_s
        try:
            return committing.result(timeout=bound_s)
        except FutureTimeout as exc:
            raise CallOverran(f"the commit thread gave no answer within {bound_s:g} s") from exc

    def _account(self, batch: InFlight, seconds: float, committed_ms: float) -> None:
        self.metrics.observe_stage("emit", seconds)
        self.metrics.transactions.labels("committed").inc()
        self.metrics.observe_committed(batch.verdicts, batch.arrivals, committed_ms)
        for dl in batch.dead_letters:
            self.metrics.dead_letters.labels(dl.stage, dl.error_class).inc()

    def _commit(self, verdicts: Sequence[Verdict], dead_letters: Sequence[DeadLetter],
                offsets: Mapping[tuple[str, int], int], meta: Any,
                encoded: Sequence[OutgoingRecord], opening: Future[Any] | None) -> tuple[float, float]:
        """One transaction (on the commit thread, or in line), or the rest of the one
        ``opening`` began. Returns (its seconds from here, commit wall-clock ms)."""
        t0 = time.perf_counter()
        if opening is None:
            self.emitter.commit_batch(verdicts, dead_letters, offsets, meta, encoded)
        else:
            self._result(opening)  # raises BatchAborted if it failed (and aborted itself)
            self.emitter.finish_transaction(encoded)
        return time.perf_counter() - t0, time.time() * 1000.0
