"""The engine benchmark's users' mix carries what card payments carry: a merchant
descriptor on every card payment (none on a transfer), repeating per shop except where a
shop adds an order reference, and nothing else in the event changes with it."""

from __future__ import annotations

import dataclasses
from collections import Counter

from ops.bench.engine_events import descriptor_for, realistic_events, statement_line


def test_every_card_payment_has_its_shops_statement_line_and_a_transfer_none():
    events = [b.event for b in realistic_events("t", 4000)]
    for e in events:
        terminal = int(e.terminal_id[1:])
        if e.channel == "transfer":
            assert e.merchant_descriptor is None
        else:
            line, per_order = statement_line(terminal)
            assert e.merchant_descriptor == (descriptor_for(terminal, e.event_id, e.channel) if per_order else line)
    share = sum(e.merchant_descriptor is not None for e in events) / len(events)
    assert 0.6 < share < 0.9


def test_order_references_never_repeat_and_plain_lines_do():
    events = [b.event for b in realistic_events("t", 4000)]
    lines = Counter(e.merchant_descriptor for e in events if e.merchant_descriptor)
    per_order = [e.merchant_descriptor for e in events
                 if e.merchant_descriptor and statement_line(int(e.terminal_id[1:]))[1]]
    assert per_order and len(set(per_order)) == len(per_order)
    assert max(lines.values()) > 20  # the busy shops' own lines
    assert all(len(line) <= 22 for line in lines)  # a statement line's name field


def test_descriptors_change_nothing_else_in_the_events():
    with_lines = realistic_events("t", 500)
    without = realistic_events("t", 500, descriptors=False)
    assert all(b.event.merchant_descriptor is None for b in without)
    assert [dataclasses.replace(b.event, merchant_descriptor=None) for b in with_lines] == [b.event for b in without]
    assert [b.json for b in with_lines] == [b.json for b in without]
