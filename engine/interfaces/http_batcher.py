"""The HTTP service's batcher: micro-batches across connections, fair between clients,
with a bounded queue that says no at once instead of letting every caller wait.

- **Admission.** ``submit`` first checks two bounds, synchronously: the events one
  client has waiting or being scored (``max_client_events``, else ``Overloaded(429)``)
  and the events waiting from all clients together (``max_queued_events``, else
  ``Overloaded(503)``). A refused request costs nothing and waits for nothing.
- **Fairness.** A request is cut into chunks of at most ``max_events`` events and at
  most ``CHUNK_TEXT_CHARS`` characters of user text (memos and descriptors are what
  make an event slow to score). Each client has its own queue of chunks; the batcher
  takes chunks round-robin across clients, so a client's single event waits for at
  most one chunk of each other client, never for the whole of another's backlog.
- **Batching.** A batch closes at ``max_events`` events, ``CHUNK_TEXT_CHARS`` of text
  (always at least one chunk), or ``max_wait_ms`` after its first chunk, and runs one
  ``decide_batch`` on the single decide thread. If a batch fails, each chunk in it is
  retried alone, so one bad request cannot fail its neighbours.

Measured by ``python ops/bench/serve_fairness.py`` (a healthy client's latency while
others loop large memo batches).
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from engine.pipeline import DecisionPipeline
from engine.records import TransactionEvent, Verdict

#: User-text characters per chunk and per batch (``settings.http.turn_text_chars``): a
#: chunk of long memos is scored in about the time of a full batch of short ones.
CHUNK_TEXT_CHARS = 16_384


class Overloaded(Exception):
    """The request was refused before it queued: ``status`` 429 (this client is over its
    share) or 503 (the service as a whole is full)."""

    def __init__(self, status: int, detail: str):
        super().__init__(detail)
        self.status = status
        self.detail = detail


@dataclass(slots=True)
class _Chunk:
    client: str
    events: list[TransactionEvent]
    arrival_ms: list[float]
    text_chars: int
    future: asyncio.Future = field(repr=False)


def _text_chars(event: TransactionEvent) -> int:
    return len(event.memo or "") + len(event.merchant_descriptor or "")


def split_chunks(events: list[TransactionEvent], max_events: int,
                 max_text_chars: int = CHUNK_TEXT_CHARS) -> list[tuple[list[TransactionEvent], int]]:
    """Consecutive runs of ``events`` of at most ``max_events`` events and (unless one event
    alone is longer) at most ``max_text_chars`` of user text, with their text size.

    >>> from engine.records import TransactionEvent as E
    >>> evs = [E(str(i), 0, "c", "a", "t", "m", 1.0, "EUR", "x", "BE", memo="m" * 40) for i in range(5)]
    >>> [(len(c), n) for c, n in split_chunks(evs, 2)]
    [(2, 80), (2, 80), (1, 40)]
    >>> [(len(c), n) for c, n in split_chunks(evs, 10, max_text_chars=100)]
    [(2, 80), (2, 80), (1, 40)]
    """
    chunks: list[tuple[list[TransactionEvent], int]] = []
    current: list[TransactionEvent] = []
    chars = 0
    for event in events:
        n = _text_chars(event)
        if current and (len(current) >= max_events or chars + n > max_text_chars):
            chunks.append((current, chars))
            current, chars = [], 0
        current.append(event)
        chars += n
    if current:
        chunks.append((current, chars))
    return chunks


class FairBatcher:
    """Batches events from concurrent requests, round-robin across clients."""

    def __init__(self, pipeline: DecisionPipeline, max_events: int, max_wait_ms: float, *,
                 max_queued_events: int, max_client_events: int, max_text_chars: int = CHUNK_TEXT_CHARS):
        self.pipeline = pipeline
        self.max_events = max_events
        self.max_wait_s = max_wait_ms / 1000.0
        self.max_queued_events = max_queued_events
        self.max_client_events = max_client_events
        self.max_text_chars = max_text_chars
        #: client -> its chunks, in arrival order; dict order is the round-robin ring.
        self._queues: dict[str, deque[_Chunk]] = {}
        self._queued = 0
        #: client -> events waiting or being scored (released when its request ends).
        self._load: Counter[str] = Counter()
        self._wakeup: asyncio.Event | None = None
        # One thread: batches run one at a time anyway (enrich must see arrival order).
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tollgate-decide")
        self._task: asyncio.Task | None = None

    @property
    def queued_events(self) -> int:
        return self._queued

    def start(self) -> None:
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="tollgate-batcher")

    async def run_in_decide_thread(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` on the thread that runs batches: the pipeline is used from one thread
        only, and ``stop`` waits for it like for a batch."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        for queue in self._queues.values():
            for chunk in queue:
                chunk.future.cancel()
        self._queues.clear()
        self._executor.shutdown(wait=True)

    def admit(self, client: str, n_events: int) -> None:
        """Raise ``Overloaded`` if ``n_events`` more from ``client`` would pass a bound."""
        if n_events > self.max_client_events:
            raise Overloaded(429, f"this request has {n_events} events, more than one client may have waiting or "
                                  f"being scored (at most {self.max_client_events}); send smaller requests")
        if self._load[client] + n_events > self.max_client_events:
            raise Overloaded(429, f"too many events in flight from this client ({self._load[client]} waiting or "
                                  f"being scored, at most {self.max_client_events}); retry when they are answered")
        if self._queued + n_events > self.max_queued_events:
            raise Overloaded(503, f"the service is at capacity ({self._queued} events queued, at most "
                                  f"{self.max_queued_events}); retry shortly")

    async def submit(self, events: list[TransactionEvent], arrival_ms: float, client: str = "") -> list[Verdict]:
        if not events:
            return []
        self.admit(client, len(events))
        if self._wakeup is None:
            raise RuntimeError("the batcher is not started")
        loop = asyncio.get_running_loop()
        queue = self._queues.setdefault(client, deque())
        futures = []
        for chunk_events, chars in split_chunks(events, self.max_events, self.max_text_chars):
            future = loop.create_future()
            queue.append(_Chunk(client, chunk_events, [arrival_ms] * len(chunk_events), chars, future))
            futures.append(future)
        self._queued += len(events)
        self._load[client] += len(events)
        self._wakeup.set()
        try:
            parts = await asyncio.gather(*futures)
        finally:
            self._load[client] -= len(events)
            if self._load[client] <= 0:
                del self._load[client]
            for future in futures:  # a caller that went away: its chunks are skipped
                future.cancel()
        return [v for part in parts for v in part]

    def _next_chunk(self, room_events: int, room_chars: int, first: bool) -> _Chunk | None:
        """The next client's oldest chunk if it fits (the first chunk of a batch always
        does); that client then goes to the end of the ring."""
        while self._queues:
            client = next(iter(self._queues))
            queue = self._queues[client]
            chunk = queue[0]
            if chunk.future.done():  # its request was cancelled
                queue.popleft()
                self._queued -= len(chunk.events)
                if not queue:
                    del self._queues[client]
                continue
            if not first and (len(chunk.events) > room_events or chunk.text_chars > room_chars):
                return None
            queue.popleft()
            self._queued -= len(chunk.events)
            del self._queues[client]
            if queue:
                self._queues[client] = queue  # re-inserted: last in the ring
            return chunk
        return None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        wakeup = self._wakeup
        assert wakeup is not None
        while True:
            batch: list[_Chunk] = []
            events = chars = 0
            deadline = None
            while events < self.max_events:
                chunk = self._next_chunk(self.max_events - events, self.max_text_chars - chars, not batch)
                if chunk is not None:
                    batch.append(chunk)
                    events += len(chunk.events)
                    chars += chunk.text_chars
                    if deadline is None:
                        deadline = loop.time() + self.max_wait_s
                    continue
                if batch and self._queues:
                    break  # the next chunk does not fit this batch: it starts the next one
                wakeup.clear()
                if deadline is None:
                    await wakeup.wait()
                    continue
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    await asyncio.wait_for(wakeup.wait(), remaining)
                except TimeoutError:
                    break
            if batch:
                await self._decide(batch)

    async def _decide(self, batch: list[_Chunk]) -> None:
        loop = asyncio.get_running_loop()
        events = [e for c in batch for e in c.events]
        arrivals = [a for c in batch for a in c.arrival_ms]
        try:
            verdicts = await loop.run_in_executor(self._executor, self.pipeline.decide_batch, events, arrivals)
        except Exception as exc:  # noqa: BLE001 - isolate the failing chunk below
            if len(batch) == 1:
                if not batch[0].future.done():
                    batch[0].future.set_exception(exc)
                return
            for c in batch:  # retry alone: one bad request must not fail its neighbours
                await self._decide([c])
            return
        start = 0
        for c in batch:
            if not c.future.done():
                c.future.set_result(verdicts[start:start + len(c.events)])
            start += len(c.events)


__all__ = ["CHUNK_TEXT_CHARS", "FairBatcher", "Overloaded", "split_chunks"]
