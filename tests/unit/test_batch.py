"""MicroBatcher: closes at B records or W ms after the first record, whichever first."""

from __future__ import annotations

import pytest

from engine.stages.batch import MicroBatcher


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_closes_when_full_before_the_wait_bound():
    clock = Clock()
    b = MicroBatcher(max_events=4, max_wait_ms=50, clock=clock)
    b.add([1, 2, 3])
    assert not b.ready() and b.room() == 1
    b.add([4])
    assert b.ready() and b.room() == 0
    assert b.take() == [1, 2, 3, 4]
    assert len(b) == 0 and not b.ready()


def test_wait_bound_counts_from_the_first_record_not_from_take():
    clock = Clock()
    b = MicroBatcher(max_events=100, max_wait_ms=10, clock=clock)
    clock.t += 5.0  # a long idle spell before anything arrives must not count
    b.add(["a"])
    assert b.remaining_s() == pytest.approx(0.010)
    clock.t += 0.004
    b.add(["b"])  # a later record does not restart the clock
    assert b.remaining_s() == pytest.approx(0.006)
    assert not b.ready()
    clock.t += 0.0061
    assert b.ready() and b.remaining_s() == 0.0
    assert b.take() == ["a", "b"]
    assert b.remaining_s() == float("inf")


def test_empty_batcher_is_never_ready_even_after_the_wait():
    clock = Clock()
    b = MicroBatcher(max_events=2, max_wait_ms=0, clock=clock)
    assert not b.ready()
    b.add([])
    assert not b.ready()
    b.add(["x"])
    assert b.ready()  # W = 0: every record closes its own batch


def test_drop_removes_revoked_records_and_resets_clock_when_empty():
    clock = Clock()
    b = MicroBatcher(max_events=10, max_wait_ms=10, clock=clock)
    b.add([("p0", 1), ("p1", 1), ("p0", 2)])
    assert b.drop(lambda r: r[0] != "p0") == 2
    assert b.take() == [("p1", 1)]
    b.add([("p0", 3)])
    assert b.drop(lambda r: False) == 1
    assert b.remaining_s() == float("inf")


@pytest.mark.parametrize("bad", [dict(max_events=0, max_wait_ms=1), dict(max_events=1, max_wait_ms=-1)])
def test_rejects_nonsense_bounds(bad):
    with pytest.raises(ValueError):
        MicroBatcher(**bad)
