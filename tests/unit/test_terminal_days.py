"""``engine.features.terminal_days``: a terminal read as day sums plus the stretches its
plan names gives every event of the batch the totals that all its hours give, for its
activity and for its labels.

The read script is played here in Python over dicts of hours (the integration contract
tests run the real one, on a server and a cluster); what is checked is the plan: that no
stretch it sums holds a window edge, or the floor the state is pruned at.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.features.compute import TERMINAL_KEEP_BUCKETS, BucketCounter, TerminalState, enrich_batch
from engine.features.spec import BUCKET_MS
from engine.features.terminal_days import HOURS_PER_DAY, read_plans, terminal_state, wire_plan
from tests.support.events import event

NOW_HOUR = 490_000  # about 2025-11: hours since the epoch, as the store keys them


def _summed(hours: dict[int, int], plan) -> dict[str, list[int]]:
    """What the read script sums for one kind of field holding ``hours``, step by step as
    its Lua does, from the plan as the client sends it (``wire_plan``: whole days, the
    split days' hours, the stretches)."""
    *_, whole, hour_names, stretches = wire_plan(plan)
    days: dict[int, int] = {}
    for h, n in hours.items():
        days[h // HOURS_PER_DAY] = days.get(h // HOURS_PER_DAY, 0) + n
    d_out = [x for d in map(int, whole) if d in days for x in (d, days[d])]
    counts = [hours.get(int(h), 0) for h in hour_names]
    s_out, at = [], 0
    for first, length in stretches:
        total = sum(counts[at:at + length])
        at += length
        if total:
            s_out += [int(first), total]
    assert at == len(counts)
    return {"d": d_out, "s": s_out}


def _replies(activity: dict[int, int], known: dict[int, int], bad: dict[int, int], plans):
    if plans[0] is None:
        act: list | dict = [x for h in sorted(activity) for x in (h, activity[h])]
    else:
        act = {"n": max(activity, default=0), **_summed(activity, plans[0])}
    if plans[1] is None:
        # as the script joins a hash of hours only: in its own order, a bad label's hour negated
        labels: list | dict = [x for sign, table in ((1, known), (-1, bad)) for h, n in table.items()
                               for x in (sign * h, n)]
    else:
        labels = {"k": _summed(known, plans[1]), "b": _summed(bad, plans[1])}
    return act, labels


span = st.integers(NOW_HOUR - TERMINAL_KEEP_BUCKETS, NOW_HOUR)
histories = st.dictionaries(span, st.integers(1, 5), max_size=TERMINAL_KEEP_BUCKETS)
batch_hours = st.lists(st.integers(NOW_HOUR - 40 * HOURS_PER_DAY, NOW_HOUR + 3 * HOURS_PER_DAY),
                       min_size=1, max_size=40)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(activity=histories, known=histories, bad_share=st.floats(0, 1), batch=batch_hours, busy=st.booleans())
def test_day_sums_give_every_event_the_totals_of_every_hour(activity, known, bad_share, batch, busy):
    if busy:  # every hour of the kept span
        activity = {h: activity.get(h, 1) for h in range(NOW_HOUR - TERMINAL_KEEP_BUCKETS, NOW_HOUR + 1)}
        known = {h: known.get(h, 2) for h in range(NOW_HOUR - TERMINAL_KEEP_BUCKETS, NOW_HOUR + 1)}
    bad = {h: n for h, n in known.items() if (h * 7919 % 100) < bad_share * 100}
    full = TerminalState()
    full.activity = BucketCounter.from_items(activity.items())
    full.known, full.bad = BucketCounter.from_items(known.items()), BucketCounter.from_items(bad.items())
    plans = read_plans(set(batch))
    rebuilt = terminal_state(*_replies(activity, known, bad, plans)).state
    for plan, table in zip(plans, (rebuilt.activity, rebuilt.known)):
        if plan is not None:  # at most a bucket per day, and one more per edge
            lo, hi, edges, fields = plan
            assert len(table) <= (hi - lo + 1) + len(edges)
            split = {p // HOURS_PER_DAY for p in edges}
            assert fields == HOURS_PER_DAY * len(split) + (hi - lo + 1 - len(split))
    events = [event(i, event_id=f"e{i}", event_time_ms=h * BUCKET_MS + i, customer_id=f"c{i}")
              for i, h in enumerate(batch)]
    by_hours = enrich_batch(events, {}, {"t1": copy.deepcopy(full)}, {})
    by_days = enrich_batch(events, {}, {"t1": rebuilt}, {})
    assert [s.values for s in by_days] == [s.values for s in by_hours]


def test_a_real_time_batch_splits_four_days_at_most():
    for plan in read_plans({NOW_HOUR + k for k in range(5)}):  # five hours of one day
        assert plan is not None
        lo, hi, edges, fields = plan
        assert hi - lo + 1 == 31 and len({p // HOURS_PER_DAY for p in edges}) <= 4 and fields <= 4 * 24 + 27


def test_a_batch_spanning_weeks_reads_every_hour():
    assert read_plans({NOW_HOUR - 24 * k - 5 for k in range(40)}) == [None, None]


def test_hashes_read_whole_name_their_stale_hours_and_day_sums_leave_it_to_the_script():
    old, new = NOW_HOUR - TERMINAL_KEEP_BUCKETS - 1, NOW_HOUR
    read = terminal_state([new, 3, old, 2], [old, 4, -old, 1, new, 1])
    t = read.state
    assert list(t.activity.items()) == [(old, 2), (new, 3)]
    assert list(t.known.items()) == [(old, 4), (new, 1)] and list(t.bad.items()) == [(old, 1)]
    stale_activity, stale_labels, floor, labels_as_days, size_read = read.write_args()
    assert (stale_activity, sorted(stale_labels), floor, labels_as_days, size_read) == (
        [str(old)], [f"b:{old}", f"k:{old}"], new - TERMINAL_KEEP_BUCKETS, 0, 2)
    summed = terminal_state({"n": new + 5, "d": [], "s": [old, 2]}, {"k": {"d": [], "s": []}, "b": {"d": [], "s": []}})
    assert summed.write_args() == [[], [], new + 5 - TERMINAL_KEEP_BUCKETS, 1, -1]
