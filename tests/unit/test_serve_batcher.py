"""The HTTP service's batcher (engine/interfaces/http_batcher.py) on a fake pipeline that records
its batches and can be held: fairness between clients, and a bounded queue that refuses
at once (issue #20, item 8)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from engine.interfaces.http_batcher import FairBatcher, Overloaded
from engine.records import TransactionEvent
from tests.support.events import event


def ev(client: str, i: int, memo: str | None = None) -> TransactionEvent:
    return event(i, event_id=f"{client}-{i}", customer_id=client, account_id="a", terminal_id="t", amount=1.0,
                 memo=memo)


class HeldPipeline:
    """Records the event ids of every batch; each batch waits for ``release``."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.release = threading.Event()
        self.entered = threading.Event()

    def decide_batch(self, events, arrivals=None):
        self.entered.set()
        if not self.release.wait(30):
            raise TimeoutError("the test never released the pipeline")
        self.batches.append([e.event_id for e in events])
        return [e.event_id for e in events]


def batcher(pipe, **kw) -> FairBatcher:
    opts = dict(max_events=4, max_wait_ms=1.0, max_queued_events=100, max_client_events=50)
    opts.update(kw)
    return FairBatcher(pipe, **opts)


async def _wait(flag: threading.Event) -> None:
    for _ in range(3000):  # bounded: 30 s of 10 ms polls
        if flag.is_set():
            return
        await asyncio.sleep(0.01)
    raise TimeoutError("the batch never started")


def test_a_single_event_is_not_stuck_behind_another_clients_backlog():
    async def scenario():
        pipe = HeldPipeline()
        b = batcher(pipe)
        b.start()
        blocker = asyncio.create_task(b.submit([ev("heavy", 0)], 0.0, client="heavy"))
        await _wait(pipe.entered)  # the first batch holds the decide thread
        heavy = asyncio.create_task(b.submit([ev("heavy", i) for i in range(1, 13)], 0.0, client="heavy"))
        await asyncio.sleep(0)
        light = asyncio.create_task(b.submit([ev("light", 0)], 0.0, client="light"))
        await asyncio.sleep(0)
        pipe.release.set()
        assert await light == ["light-0"]
        await asyncio.gather(blocker, heavy)
        await b.stop()
        return pipe.batches

    batches = asyncio.run(scenario())
    # heavy's 12 waiting events are 3 chunks of max_events; light's event waits for one
    # of them (heavy queued first), not for all three as in one FIFO queue.
    light_batch = next(i for i, batch in enumerate(batches) if "light-0" in batch)
    assert light_batch == 2, batches
    assert sum(len(b) for b in batches) == 14
    assert [e for b in batches for e in b if e.startswith("heavy")] == [f"heavy-{i}" for i in range(13)]


def test_over_its_share_a_client_gets_429_and_others_still_get_in():
    async def scenario():
        pipe = HeldPipeline()
        b = batcher(pipe, max_client_events=6)
        b.start()
        first = asyncio.create_task(b.submit([ev("a", i) for i in range(6)], 0.0, client="a"))
        await _wait(pipe.entered)
        with pytest.raises(Overloaded) as info:
            await b.submit([ev("a", 99)], 0.0, client="a")  # refused at once, while a's batch is held
        other = asyncio.create_task(b.submit([ev("b", 0)], 0.0, client="b"))
        pipe.release.set()
        await asyncio.gather(first, other)
        await b.stop()
        return info.value

    refused = asyncio.run(scenario())
    assert refused.status == 429 and "at most 6" in refused.detail


def test_a_full_queue_answers_503_at_once():
    async def scenario():
        pipe = HeldPipeline()
        b = batcher(pipe, max_queued_events=5)
        b.start()
        running = asyncio.create_task(b.submit([ev("a", 0)], 0.0, client="a"))
        await _wait(pipe.entered)  # taken off the queue: the queue is empty again
        waiting = asyncio.create_task(b.submit([ev("b", i) for i in range(5)], 0.0, client="b"))
        await asyncio.sleep(0)
        assert b.queued_events == 5
        with pytest.raises(Overloaded) as info:
            await b.submit([ev("c", 0)], 0.0, client="c")
        pipe.release.set()
        await asyncio.gather(running, waiting)
        assert await b.submit([ev("c", 1)], 0.0, client="c") == ["c-1"]  # room again
        await b.stop()
        return info.value

    refused = asyncio.run(scenario())
    assert refused.status == 503 and "at capacity" in refused.detail


def test_a_cancelled_request_is_not_scored():
    async def scenario():
        pipe = HeldPipeline()
        b = batcher(pipe)
        b.start()
        running = asyncio.create_task(b.submit([ev("a", 0)], 0.0, client="a"))
        await _wait(pipe.entered)
        gone = asyncio.create_task(b.submit([ev("gone", 0)], 0.0, client="gone"))
        await asyncio.sleep(0)
        gone.cancel()
        await asyncio.sleep(0)
        pipe.release.set()
        await running
        assert await b.submit([ev("b", 0)], 0.0, client="b") == ["b-0"]
        await b.stop()
        return pipe.batches

    assert all("gone-0" not in batch for batch in asyncio.run(scenario()))


def test_long_memos_are_cut_into_short_turns():
    from engine.interfaces.http_batcher import split_chunks

    events = [ev("m", i, memo="x" * 4_096) for i in range(10)]
    chunks = split_chunks(events, max_events=512, max_text_chars=16_384)
    assert [len(c) for c, _ in chunks] == [4, 4, 2]
    assert [len(c) for c, _ in split_chunks(events, max_events=3, max_text_chars=16_384)] == [3, 3, 3, 1]
