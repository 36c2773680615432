"""The feature list: names, windows and how the encoder scales each one.

This is the single place that says *what* the context features are. Both stores
(memory and Redis) fill a ``ContextSnapshot`` whose ``values`` follow
``CONTEXT_FEATURES`` in order, the rules read them under the same names
(``ctx.velocity_1h_count``), and the encoder scales them with ``FEATURE_SCALING``.
Changing anything here changes ``SPEC_FINGERPRINT`` and therefore every model's
feature-schema hash, so an old model is refused instead of silently misreading inputs.

Definitions (all in event time, from the event stream alone):

* ``velocity_<w>_count`` / ``velocity_<w>_amount``: the customer's events (count, sum of
  amounts) with ``event_time - w <= t < event_time``; exact, not bucketed.
* ``customer_mean_amount_30d``: mean amount of those 30-day events (0 when none);
  ``amount_to_mean_ratio``: this amount over that mean (1 when there is no history).
* ``seconds_since_prev``: seconds since the customer's latest earlier event, capped at
  30 days (the cap also when there is none); ``customer_is_new``: no earlier event kept.
* ``country_changed``: the country differs from the customer's previous event's.
* ``device_is_new``: the device was never seen for this customer before; ``device_age_days``:
  days since the customer first used it (0 when new or missing); ``device_missing``.
* ``terminal_count_<w>``: events at the terminal recorded in the event's UTC hour and
  the ``w/1h - 1`` hours before it (hour buckets keep memory bounded, see ``compute``).
* ``terminal_risk_<w>``: among the terminal's outcomes that ARRIVED in the ``w`` before
  the start of the event's hour, the share that were bad (0 when none arrived);
  ``terminal_labelled_<w>``: how many arrived. Windowing by arrival time is the
  handbook's delayed TERMINAL_ID_RISK (window of ``w`` days shifted back by the delay)
  generalised to outcomes that arrive after varying delays, and it can never leak an
  outcome that had not arrived yet.

>>> CONTEXT_FEATURES.index("velocity_1h_count")
0
>>> "terminal_risk_7d" in CONTEXT_FEATURES
True
>>> len(SPEC_FINGERPRINT)
16
"""

from __future__ import annotations

import hashlib
import json

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS

#: Customer velocity windows (name, length in ms).
VELOCITY_WINDOWS: tuple[tuple[str, int], ...] = (
    ("1h", HOUR_MS), ("1d", DAY_MS), ("7d", 7 * DAY_MS), ("30d", 30 * DAY_MS),
)
#: Terminal activity and delayed-label risk windows (name, length in ms).
TERMINAL_WINDOWS: tuple[tuple[str, int], ...] = (("1d", DAY_MS), ("7d", 7 * DAY_MS), ("30d", 30 * DAY_MS))
#: How far back any per-key state must reach; older state is dropped (and expires in Redis).
STATE_HORIZON_MS = 30 * DAY_MS
#: Per-key state untouched for this long is forgotten: Redis keys expire this long after
#: their last write, and the memory store (when asked to) forgets state idle this long in
#: event time. The extra day beyond the horizon tolerates late (out-of-order) events.
IDLE_STATE_TTL_MS = STATE_HORIZON_MS + DAY_MS
#: Terminal counters are kept per hour bucket.
BUCKET_MS = HOUR_MS
#: The customer's last N events form the history window the encoder turns into a sequence.
HISTORY_LEN = 16
#: Devices remembered per customer (oldest first-seen dropped beyond this).
MAX_DEVICES_PER_CUSTOMER = 64
#: Customer events remembered (beyond the 30-day horizon cut) so a burst cannot grow state.
MAX_CUSTOMER_EVENTS = 2_000
#: ``seconds_since_prev`` when there is no previous event (and its cap).
NO_PREVIOUS_SECONDS = STATE_HORIZON_MS / 1000.0

_velocity = tuple(
    name for w, _ in VELOCITY_WINDOWS for name in (f"velocity_{w}_count", f"velocity_{w}_amount")
)
_terminal = tuple(f"terminal_count_{w}" for w, _ in TERMINAL_WINDOWS) + tuple(
    name for w, _ in TERMINAL_WINDOWS for name in (f"terminal_risk_{w}", f"terminal_labelled_{w}")
)

#: Every context feature, in the order of ``ContextSnapshot.values``. These are also the
#: names rules see (``ctx.<name>``); all are finite floats.
CONTEXT_FEATURES: tuple[str, ...] = _velocity + (
    "customer_mean_amount_30d",
    "amount_to_mean_ratio",
    "seconds_since_prev",
    "customer_is_new",
    "country_changed",
    "device_is_new",
    "device_age_days",
    "device_missing",
) + _terminal

#: How the encoder maps each raw value to a model input: ``log1p`` for counts, sums and
#: durations (heavy-tailed), ``logratio`` for ratios (log, clipped to [-8, 8]),
#: ``unit`` for values already in [0, 1] (flags, shares).
FEATURE_SCALING: dict[str, str] = {
    name: (
        "unit" if name.startswith("terminal_risk") or name in {
            "customer_is_new", "country_changed", "device_is_new", "device_missing"}
        else "logratio" if name == "amount_to_mean_ratio"
        else "log1p"
    )
    for name in CONTEXT_FEATURES
}

#: Values a snapshot carries for the customer's history window (oldest dropped first).
HISTORY_FIELDS: tuple[str, ...] = ("amount", "event_time_ms", "terminal_id")

SPEC_FINGERPRINT: str = hashlib.sha256(json.dumps({
    "features": CONTEXT_FEATURES, "scaling": FEATURE_SCALING,
    "velocity": VELOCITY_WINDOWS, "terminal": TERMINAL_WINDOWS, "bucket": BUCKET_MS,
    "history_len": HISTORY_LEN, "history": HISTORY_FIELDS, "version": 1,
}, sort_keys=True).encode()).hexdigest()[:16]
