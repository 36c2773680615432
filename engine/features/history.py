"""Which of a customer's past events fill the history window the encoder reads.

Two orders, chosen with the feature schema (``FeatureSchema.history_order``) because a
model learns the order it was trained on:

* ``recent`` (the default): the last ``HISTORY_LEN`` events, most recent first.
* ``relevance``: the window reads the whole 30-day state the store already holds for the
  customer. A pre-filter keeps the few most recent events (they carry the card's current
  pace) and, of the older ones, only those with a signal: an amount far from the card's
  30-day mean, or the same terminal as the event being decided. The survivors are ordered
  by signal strength times a time decay, so the first positions (each has its own
  position embedding) hold the informative past; slots left over take the next most
  recent events, so a card with little history sees what ``recent`` would show.

Both read only trusted fields already in the customer's state: no extra Redis read.

The ``recent`` window is a reversed slice of the state (``compute.context_for``);
``relevant_history`` picks the ``relevance`` one:

>>> times = [d * 86_400_000 for d in range(20)]
>>> amounts = [10.0] * 20
>>> amounts[2] = 90.0                     # day 2: nine times the card's usual amount
>>> terminals = ["t1"] * 20
>>> relevant_history(times, amounts, terminals, 20, 20 * 86_400_000, "t9", 14.0, 6)
[19, 18, 17, 16, 2, 15]
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from typing import Literal

from engine.features.spec import DAY_MS, STATE_HORIZON_MS
from engine.settings import get_settings

HistoryOrder = Literal["recent", "relevance"]
HISTORY_ORDERS: tuple[HistoryOrder, ...] = ("recent", "relevance")

#: ``relevance``: the most recent events always kept first, in time order.
KEEP_RECENT = 4
#: ``relevance``: an older event passes the pre-filter when its amount is at least this
#: factor away from the card's 30-day mean (either way), or it was at the same terminal.
AMOUNT_FACTOR = 2.0
#: ``relevance``: the time decay's scale; a signal 7 days old weighs 1/e of a fresh one.
DECAY_MS = 7 * DAY_MS
#: ``relevance``: the same terminal counts as a signal of this strength (an amount factor
#: of e^1 ~ 2.7 counts as 1.0).
SAME_TERMINAL_STRENGTH = 1.0
_MIN_LOG_FACTOR = math.log(AMOUNT_FACTOR)


def resolve_history_order(order: str | None) -> HistoryOrder:
    """``order``, or the deployment's (``settings.features.history_order``) when None;
    ValueError for a name that is not an order."""
    resolved = order or get_settings().features.history_order
    if resolved not in HISTORY_ORDERS:
        raise ValueError(f"history order must be one of {HISTORY_ORDERS}, got {resolved!r}")
    return resolved


def relevant_history(times: Sequence[int], amounts: Sequence[float], terminals: Sequence[str],
                     before: int, now_ms: int, own_terminal: str, mean_amount: float, n: int) -> list[int]:
    """The ``relevance`` window of ``n``: indices into the customer's time-sorted state
    (``times[:before]`` are the events before the one decided at ``now_ms``), in window
    order."""
    if before <= n:  # everything fits: the recent order loses nothing and keeps time order
        return list(range(before - 1, -1, -1))
    head = list(range(before - 1, before - 1 - KEEP_RECENT, -1))
    oldest = bisect_left(times, now_ms - STATE_HORIZON_MS, 0, before)
    log_mean = math.log1p(max(mean_amount, 0.0))
    scored: list[tuple[float, int]] = []
    for j in range(before - 1 - KEEP_RECENT, oldest - 1, -1):
        strength = abs(math.log1p(max(amounts[j], 0.0)) - log_mean)
        strength = strength if strength >= _MIN_LOG_FACTOR else 0.0
        if terminals[j] == own_terminal:
            strength = max(strength, SAME_TERMINAL_STRENGTH)
        if strength > 0.0:
            scored.append((strength * math.exp(-(now_ms - times[j]) / DECAY_MS), j))
    scored.sort(key=lambda s: (-s[0], -s[1]))
    picked = head + [j for _, j in scored[:n - KEEP_RECENT]]
    if len(picked) < n:  # fill with the next most recent events not yet in the window
        taken = set(picked)
        for j in range(before - 1 - KEEP_RECENT, -1, -1):
            if j not in taken:
                picked.append(j)
                if len(picked) == n:
                    break
    return picked
