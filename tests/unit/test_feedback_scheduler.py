"""The fine-tune scheduler's wall-clock loop survives a failing cycle (the cycle itself
is exercised end to end in tests/integration/test_feedback_e2e.py)."""

from __future__ import annotations

import logging

from engine.settings import Settings
from feedback.learn.scheduler import FineTuneScheduler


class _FlakyScheduler(FineTuneScheduler):
    """The real loop; ``tick`` raises on its first call (as a cycle does when Redis is
    away), then records the times it was called with."""

    def __init__(self) -> None:
        super().__init__(Settings(), redis=None, registry=object(), labels=object(), decisions=object(),
                         progress=False)
        self.ticks: list[int] = []

    def tick(self, now_ms: int):  # noqa: ANN201
        self.ticks.append(now_ms)
        if len(self.ticks) == 1:
            raise ConnectionError("redis away")
        return None


def test_a_failing_cycle_is_logged_and_retried_later_not_fatal(caplog) -> None:
    sched, slept = _FlakyScheduler(), []
    clock = iter(range(1_000, 100_000, 1_000))
    with caplog.at_level(logging.ERROR, logger="feedback.learn.scheduler"):
        sched.run_forever(clock=lambda: next(clock), poll_s=30.0, retry_after_s=900.0,
                          sleep=slept.append, stop=lambda: len(sched.ticks) >= 3)
    assert sched.ticks == [1_000, 2_000, 3_000]  # kept ticking after the failure
    assert slept == [900.0, 30.0, 30.0]  # back-off after the failure, then the normal poll
    assert any("fine-tune cycle failed" in r.getMessage() for r in caplog.records)
