"""``engine.features.terminal_days``: a terminal read as day sums plus the hours its plan
names gives every event of the batch the totals that all its hours give.

The read script is played here in Python over a dict of hours (the integration contract
tests run the real one, on a server and a cluster); what is checked is the plan: that no
stretch it sums holds a window edge, or the floor the state is pruned at.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.features.compute import TERMINAL_KEEP_BUCKETS, BucketCounter, TerminalState, enrich_batch
from engine.features.spec import BUCKET_MS
from engine.features.terminal_days import HOURS_PER_DAY, activity_from_reply, read_plan, terminal_state
from tests.support.events import event

NOW_HOUR = 490_000  # about 2025-11: hours since the epoch, as the store keys them


def _reply(hours: dict[int, int], plan) -> list[int] | dict:
    """What the read script answers for a hash holding ``hours`` (and their day sums)."""
    if plan is None:
        return [x for h in sorted(hours) for x in (h, hours[h])]
    lo, hi, edges = plan
    days: dict[int, int] = {}
    for h, n in hours.items():
        days[h // HOURS_PER_DAY] = days.get(h // HOURS_PER_DAY, 0) + n
    split = {p // HOURS_PER_DAY for p in edges}
    d_out = [x for d in range(lo, hi + 1) if d not in split and d in days for x in (d, days[d])]
    s_out = []
    for d in sorted(split):
        starts = [d * HOURS_PER_DAY] + sorted(p for p in edges if p // HOURS_PER_DAY == d)
        for first, after in zip(starts, starts[1:] + [(d + 1) * HOURS_PER_DAY]):
            total = sum(hours.get(h, 0) for h in range(first, after))
            if total:
                s_out += [first, total]
    return {"n": max(hours) if hours else 0, "d": d_out, "s": s_out}


histories = st.dictionaries(st.integers(NOW_HOUR - TERMINAL_KEEP_BUCKETS, NOW_HOUR), st.integers(1, 5),
                            max_size=TERMINAL_KEEP_BUCKETS)
batch_hours = st.lists(st.integers(NOW_HOUR - 40 * HOURS_PER_DAY, NOW_HOUR + 3 * HOURS_PER_DAY),
                       min_size=1, max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hours=histories, batch=batch_hours, busy=st.booleans())
def test_day_sums_give_every_event_the_totals_of_every_hour(hours, batch, busy):
    if busy:  # every hour of the kept span: large enough for compute to prune mid-batch
        hours = {h: hours.get(h, 1) for h in range(NOW_HOUR - TERMINAL_KEEP_BUCKETS, NOW_HOUR + 1)}
    full = TerminalState()
    full.activity = BucketCounter.from_items(hours.items())
    plan = read_plan(set(batch))
    rebuilt, newest = terminal_state(_reply(hours, plan), [])
    if plan is not None:  # at most a bucket per day, and one more per edge
        lo, hi, edges = plan
        assert len(rebuilt.activity) <= (hi - lo + 1) + len(edges)
        assert newest == (max(hours) if hours else 0)
    events = [event(i, event_id=f"e{i}", event_time_ms=h * BUCKET_MS + i, customer_id=f"c{i}")
              for i, h in enumerate(batch)]
    by_hours = enrich_batch(events, {}, {"t1": copy.deepcopy(full)}, {})
    by_days = enrich_batch(events, {}, {"t1": rebuilt}, {})
    assert [s.values for s in by_days] == [s.values for s in by_hours]


def test_a_real_time_batch_reads_four_days_of_hours_at_most():
    plan = read_plan({NOW_HOUR + k for k in range(5)})  # five hours of one day
    assert plan is not None
    lo, hi, edges = plan
    assert hi - lo + 1 == 31 and len({p // HOURS_PER_DAY for p in edges}) <= 4


def test_a_batch_spanning_weeks_reads_every_hour():
    assert read_plan({NOW_HOUR - 24 * k - 5 for k in range(40)}) is None


def test_older_replies_are_every_hour():
    counter, newest = activity_from_reply([NOW_HOUR, 2, NOW_HOUR + 1, 3])
    assert list(counter.items()) == [(NOW_HOUR, 2), (NOW_HOUR + 1, 3)] and newest is None
