"""The faust app keeps its files under the settings' state dir, never in the working
directory (the repo root in tests, a read-only /app in the container image)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.settings import PathSettings, Settings
from feedback.stream.app import build_app


def test_faust_data_dir_is_under_the_state_dir_not_the_working_directory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    state = tmp_path / "state"
    settings = Settings(paths=PathSettings(state_dir=state))
    app = build_app(settings, processor=None, app_id="tollgate-feedback-unit")  # type: ignore[arg-type]
    assert Path(app.conf.datadir) == state / "faust" / "tollgate-feedback-unit"
    # What faust does when a worker starts: create its data, app and table directories.
    asyncio.run(app.on_first_start())
    assert (state / "faust" / "tollgate-feedback-unit").is_dir()
    assert Path(app.conf.tabledir).is_relative_to(state)
    assert list(cwd.iterdir()) == [], "faust wrote into the working directory"


def test_a_batch_is_retried_then_the_worker_exits_unacked_rather_than_fail_batch_after_batch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from feedback.stream import app as feedback_app

    waits: list[float] = []
    calls: list[int] = []
    flaky = iter([RuntimeError("redis away"), RuntimeError("still away"), None])

    def once() -> str:
        calls.append(1)
        exc = next(flaky)
        if exc is not None:
            raise exc
        return "applied"

    assert feedback_app.apply_with_retries(once, sleep=waits.append) == "applied"
    assert waits == [0.5, 1.0] and len(calls) == 3

    # Failing every time: the agent tries BATCH_ATTEMPTS times, then ends the process
    # (not the agent, which faust would restart in place) before the batch is acked.
    monkeypatch.setattr(feedback_app.time, "sleep", waits.append)
    exits: list[int] = []
    monkeypatch.setattr(feedback_app, "_exit", exits.append)
    tries: list[str] = []

    class Failing:
        def on_batch(self, kind: str, payloads: list) -> list:
            tries.append(kind)
            raise RuntimeError("CROSSSLOT")

    class Codec:
        def decode(self, value: bytes, headers: list, key: bytes | None = None) -> SimpleNamespace:
            return SimpleNamespace(to_dict=lambda: {"event_id": value.decode()})

    message = SimpleNamespace(value=b"e1", headers=[], key=None, topic="tx.verdicts", partition=0, offset=7)
    consumed: list[str] = []

    class Stream:
        async def take_events(self, n: int, within: float):
            for _ in range(2):  # a second batch is never reached
                consumed.append("batch")
                yield [SimpleNamespace(message=message)]

    agent = feedback_app._make_agent("verdict", Codec(), Failing(), 10, 0.1, None)
    asyncio.run(agent(Stream()))
    assert exits == [feedback_app.EXIT_CANNOT_PROGRESS]
    assert len(tries) == feedback_app.BATCH_ATTEMPTS and consumed == ["batch"]


def test_a_flush_that_keeps_failing_ends_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from prometheus_client import CollectorRegistry

    from feedback.stream import app as feedback_app
    from feedback.stream.feedback_metrics import FeedbackMetrics
    from feedback.stream.process import FlushStats

    monkeypatch.setattr(feedback_app.time, "sleep", lambda s: None)
    exits: list[int] = []
    monkeypatch.setattr(feedback_app, "_exit", exits.append)
    outcomes = iter([OSError("disk full"), FlushStats(decisions_written=3, oldest_decision_ms=1)])

    class Flaky:
        def flush(self):
            out = next(outcomes)
            if isinstance(out, Exception):
                raise out
            return out

        def backlog(self):
            return {"decisions": 0, "labels": 2, "awaiting_verdict": 5}

    metrics = FeedbackMetrics(CollectorRegistry())
    asyncio.run(feedback_app.flush_once(Flaky(), metrics))  # one failure, then it flushes
    assert exits == [] and metrics.decisions_written._value.get() == 3
    assert metrics.awaiting_verdict._value.get() == 5 and metrics.pending.labels("labels")._value.get() == 2

    class Broken:
        calls = 0

        def flush(self):
            Broken.calls += 1
            raise OSError("disk full")

    asyncio.run(feedback_app.flush_once(Broken(), metrics))
    assert exits == [feedback_app.EXIT_CANNOT_PROGRESS] and Broken.calls == feedback_app.BATCH_ATTEMPTS
