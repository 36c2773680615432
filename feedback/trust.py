"""Outcomes cannot poison the model: trusted held-out, influence caps, a label-shift alarm.

Anyone who can write to ``tx.outcomes`` can steer a model fine-tuned on it. Four lines
of defence, each a pure function of stored rows, so the cycle and the drill share them:

1. **Trust comes from the topic, not the record.** ``stamp_source`` demotes an outcome
   that claims a trusted source (``feedback.trust.trusted_sources``) but did not arrive
   on the trusted topic (``feedback.trust.trusted_topic``, writable only by that
   source's principal through Kafka ACLs: ``docs/feedback.md``). Its source becomes
   ``untrusted:<claimed>``.
2. **The held-out set is trusted.** With trusted sources configured, the gate's
   held-out outcomes are exactly the rows from those sources (``split_trusted``) and
   are never trained on; without, the old hash share of event ids, and the gate
   report says the yardstick is untrusted.
3. **Influence is capped** (``influence_weights``): one customer's rows weigh at most
   ``max_customer_examples`` examples, one source at most ``max_source_share`` of the
   cycle's total weight.
4. **Label shift stops the cycle** (``label_shift``): when the new window's bad rate,
   or one source's, moves more than ``max_bad_rate_shift`` from the recent past (and
   the move is beyond noise: a two-proportion z above ``min_z``), the cycle does not
   train and says why.

>>> import pandas as pd
>>> rows = pd.DataFrame({"customer_id": ["a"] * 4 + ["b"], "outcome_source": ["x"] * 5, "is_bad": [1] * 5})
>>> influence_weights(rows, TrustSettings(max_customer_examples=2, max_source_share=1.0)).tolist()
[0.5, 0.5, 0.5, 0.5, 1.0]
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from engine.settings import TrustSettings

UNTRUSTED_PREFIX = "untrusted:"


def stamp_source(outcome: Mapping[str, Any], *, from_trusted_topic: bool, trusted_sources: tuple[str, ...]
                 ) -> dict[str, Any]:
    """The outcome with the source it may claim: a trusted source's name only on the
    trusted topic.

    >>> stamp_source({"source": "review_queue"}, from_trusted_topic=False, trusted_sources=("review_queue",))
    {'source': 'untrusted:review_queue'}
    """
    out = dict(outcome)
    source = str(out.get("source") or "unknown")
    if source in trusted_sources and not from_trusted_topic:
        source = UNTRUSTED_PREFIX + source
    out["source"] = source
    return out


def split_trusted(rows: pd.DataFrame, trusted_sources: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(train mask, held-out mask): trusted-source rows are held out and never trained on."""
    held = rows["outcome_source"].isin(list(trusted_sources)).to_numpy() if len(rows) else np.zeros(0, bool)
    return ~held, held


def influence_weights(rows: pd.DataFrame, cfg: TrustSettings) -> np.ndarray:
    """Per-row training weight: at most ``max_customer_examples`` examples' worth per
    customer, at most ``max_source_share`` of the total per source (one pass of each)."""
    n = len(rows)
    w = np.ones(n, dtype=float)
    if n == 0:
        return w
    per_customer = rows.groupby("customer_id")["customer_id"].transform("size").to_numpy(dtype=float)
    w = np.minimum(1.0, cfg.max_customer_examples / per_customer)
    sources = rows["outcome_source"].to_numpy()
    if len(set(sources)) > 1 and cfg.max_source_share < 1.0:
        for _ in range(3):  # capping one source raises the others' shares; a few passes settle it
            total = w.sum()
            for s in set(sources):
                m = sources == s
                own = w[m].sum()
                others = total - own
                cap = cfg.max_source_share / (1.0 - cfg.max_source_share) * others
                if own > cap > 0:
                    w[m] *= cap / own
    return w


@dataclass(slots=True, frozen=True)
class ShiftAlarm:
    scope: str  # "all" or the source's name
    past_rate: float
    new_rate: float
    past_n: int
    new_n: int
    z: float

    def __str__(self) -> str:
        return (f"label shift in {self.scope}: bad rate {self.past_rate:.3f} over {self.past_n} recent-past labels "
                f"-> {self.new_rate:.3f} over {self.new_n} new (z={self.z:.1f})")


def label_shift(new: pd.DataFrame, past: pd.DataFrame, cfg: TrustSettings) -> list[ShiftAlarm]:
    """Alarms for the new window's labels against the recent past: overall, then per source."""
    alarms: list[ShiftAlarm] = []
    scopes: list[tuple[str, pd.DataFrame, pd.DataFrame]] = [("all", new, past)]
    if len(new):
        for source in sorted(set(new["outcome_source"])):
            scopes.append((str(source), new[new["outcome_source"] == source],
                           past[past["outcome_source"] == source] if len(past) else past))
    for scope, a, b in scopes:
        if len(a) < cfg.shift_min_examples or len(b) < cfg.shift_min_examples:
            continue
        p_new, p_past = float(a["is_bad"].mean()), float(b["is_bad"].mean())
        pooled = (p_new * len(a) + p_past * len(b)) / (len(a) + len(b))
        se = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / len(a) + 1 / len(b)))
        z = abs(p_new - p_past) / se
        bound = cfg.max_bad_rate_shift if scope == "all" else cfg.max_source_shift
        if abs(p_new - p_past) > bound and z > cfg.min_z:
            alarms.append(ShiftAlarm(scope, p_past, p_new, len(b), len(a), z))
    return alarms


def recent_past(read: Callable[[int, int], pd.DataFrame], since_ms: int, cfg: TrustSettings) -> pd.DataFrame:
    """The labels the new window is judged against: those that arrived in the
    ``shift_past_days`` before it. Fixed in length, not the previous training window:
    after a refused cycle, or on the first one, that window is short or empty, and an
    alarm with nothing to compare stays quiet (issue #21: a 30 % flip was promoted)."""
    return read(since_ms - int(cfg.shift_past_days * 86_400_000), since_ms)


def flip_labels(share: float, trusted_sources: tuple[str, ...] = (), salt: str = "drill"
                ) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """A poisoning, for drills: flip ``is_bad`` on a fixed ``share`` of the rows from
    untrusted sources (chosen by a hash of the event id, so every read of the store
    flips the same rows). Trusted sources' rows are left alone: the attacker cannot
    write their topic.

    >>> rows = pd.DataFrame({"event_id": [f"e{i}" for i in range(1000)], "is_bad": [0] * 1000,
    ...                      "outcome_source": ["issuer"] * 999 + ["review_queue"]})
    >>> out = flip_labels(0.3, ("review_queue",))(rows)
    >>> bool(0.25 < out["is_bad"].mean() < 0.35), int(out["is_bad"].iloc[-1])
    (True, 0)
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError("share must lie in [0, 1]")
    cut = int(round(share * 10_000))

    def poison(rows: pd.DataFrame) -> pd.DataFrame:
        if rows.empty:
            return rows
        chosen = np.array([zlib.crc32(f"{salt}:{e}".encode()) % 10_000 < cut for e in rows["event_id"]])
        chosen &= ~rows["outcome_source"].isin(list(trusted_sources)).to_numpy()
        out = rows.copy()
        out.loc[chosen, "is_bad"] = 1 - out.loc[chosen, "is_bad"]
        return out

    return poison
