"""The one event factory of the test suite: a valid ``TransactionEvent`` with plain
defaults, any field overridden by name. Tests say only what matters to them.

>>> e = event(3, amount=120.0, memo="rent")
>>> (e.event_id, e.event_time_ms - T0, e.amount, e.memo, e.channel)
('e3', 3, 120.0, 'rent', 'ecommerce')
"""

from __future__ import annotations

from typing import Any

from engine.records import TransactionEvent

#: Event time of event 0 (2023-11-14T22:13:20Z); event i is i ms later unless overridden.
T0 = 1_700_000_000_000


def event(i: int = 0, **overrides: Any) -> TransactionEvent:
    fields: dict[str, Any] = dict(event_id=f"e{i}", event_time_ms=T0 + i, customer_id="c1", account_id="a1",
                                  terminal_id="t1", merchant_category="5411", amount=10.0, currency="EUR",
                                  channel="ecommerce", country="BE")
    fields.update(overrides)
    return TransactionEvent(**fields)
