"""Outcomes cannot poison the model: stamping, trusted held-out, caps, label-shift alarm."""

from __future__ import annotations

import numpy as np
import pandas as pd

from engine.settings import TrustSettings
from feedback.trust import (
    flip_labels,
    influence_weights,
    label_shift,
    recent_past,
    split_trusted,
    stamp_source,
)


def _rows(n, bad_rate, source="issuer_chargeback", customers=None, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "event_id": [f"{source}-{seed}-{i}" for i in range(n)],
        "customer_id": customers if customers is not None else [f"c{i}" for i in range(n)],
        "outcome_source": [source] * n,
        "is_bad": (rng.random(n) < bad_rate).astype(int),
    })


def test_a_trusted_source_is_only_believed_on_the_trusted_topic():
    trusted = ("review_queue",)
    assert stamp_source({"source": "review_queue"}, from_trusted_topic=True, trusted_sources=trusted)["source"] \
        == "review_queue"
    forged = stamp_source({"source": "review_queue"}, from_trusted_topic=False, trusted_sources=trusted)
    assert forged["source"] == "untrusted:review_queue"
    rows = pd.DataFrame({"outcome_source": ["review_queue", forged["source"], "issuer_chargeback"]})
    train, held = split_trusted(rows, trusted)
    assert held.tolist() == [True, False, False] and train.tolist() == [False, True, True]


def test_poisoned_rows_never_reach_the_trusted_held_out_set():
    rows = pd.concat([_rows(500, 0.2), _rows(100, 0.3, source="review_queue", seed=1)], ignore_index=True)
    poisoned = flip_labels(1.0, ("review_queue",))(rows)
    _, held = split_trusted(poisoned, ("review_queue",))
    assert (poisoned.loc[held, "is_bad"].to_numpy() == rows.loc[held, "is_bad"].to_numpy()).all()
    assert (poisoned.loc[~held, "is_bad"].to_numpy() != rows.loc[~held, "is_bad"].to_numpy()).all()


def test_influence_caps_per_customer_and_per_source():
    cfg = TrustSettings(max_customer_examples=5, max_source_share=0.5)
    one_customer = _rows(40, 0.5, customers=["mallory"] * 40, source="partner_api")
    others = _rows(60, 0.2, seed=2)
    w = influence_weights(pd.concat([one_customer, others], ignore_index=True), cfg)
    assert np.isclose(w[:40].sum(), 5.0)  # mallory weighs five examples, not forty
    cfg_src = TrustSettings(max_customer_examples=1e9, max_source_share=0.5)
    flood = pd.concat([_rows(900, 0.9, source="partner_api", seed=3), _rows(100, 0.1, seed=4)], ignore_index=True)
    w = influence_weights(flood, cfg_src)
    share = w[:900].sum() / w.sum()
    assert share <= 0.5 + 1e-6, share


def test_label_shift_alarm_fires_on_a_flip_not_on_noise():
    cfg = TrustSettings()
    past = _rows(400, 0.3, seed=5)
    same = _rows(300, 0.3, seed=6)
    assert label_shift(same, past, cfg) == []
    flipped = flip_labels(1.0)(same)
    alarms = label_shift(flipped, past, cfg)
    assert alarms and alarms[0].scope == "all" and "label shift" in str(alarms[0])
    few = flipped.head(10)  # too few labels to tell: no alarm
    assert label_shift(few, past, cfg) == []


def test_label_shift_names_the_source_that_moved():
    cfg = TrustSettings()
    past = pd.concat([_rows(300, 0.3, seed=7), _rows(300, 0.1, source="fraud_desk", seed=8)], ignore_index=True)
    new = pd.concat([_rows(300, 0.3, seed=9), flip_labels(1.0)(_rows(100, 0.1, source="fraud_desk", seed=10))],
                    ignore_index=True)
    scopes = [a.scope for a in label_shift(new, past, cfg)]
    assert "fraud_desk" in scopes and "issuer_chargeback" not in scopes


def _mix(n_bad_source, n_good_source, seed):
    return pd.concat([_rows(n_bad_source, 1.0, source="issuer_chargeback", seed=seed),
                      _rows(n_good_source, 0.0, source="customer_confirmation", seed=seed)], ignore_index=True)


def test_the_default_alarm_catches_a_ten_percent_flip_of_pure_sources():
    """Issue #21: a 30 % flip was promoted with the defaults. Sources are nearly pure by
    kind, so a flip moves each source's bad rate by the flip share itself; the default
    per-source bound catches 10 % (``ops/bench/label_shift.py`` measures where it ends)."""
    cfg = TrustSettings()
    past, new = _mix(200, 600, seed=1), _mix(60, 200, seed=2)
    assert label_shift(new, past, cfg) == []
    alarms = label_shift(flip_labels(0.1)(new), past, cfg)
    assert {a.scope for a in alarms} >= {"customer_confirmation"}, alarms


def test_the_recent_past_is_a_fixed_span_before_the_window():
    """Not the previous training window, which is empty on a first cycle: the alarm
    would have nothing to compare with."""
    asked = []
    recent_past(lambda lo, hi: asked.append((lo, hi)), 20 * 86_400_000, TrustSettings(shift_past_days=14))
    assert asked == [(6 * 86_400_000, 20 * 86_400_000)]


def test_the_default_held_out_set_is_trusted_reviews_on_their_own_topic():
    from engine.settings import Settings
    from engine.wire.topics import outcome_topic, topic_specs

    s = Settings()
    assert s.feedback.trust.trusted_sources and not s.feedback.trust.allow_untrusted_heldout
    assert outcome_topic(s, "review_queue") == s.feedback.trust.trusted_topic
    assert outcome_topic(s, "issuer_chargeback") == s.topics.outcomes
    assert s.feedback.trust.trusted_topic in {t.name for t in topic_specs(s)}


def test_an_outcome_written_without_a_source_decodes_as_unknown():
    """Schema evolution: a record from a writer whose schema had no ``source`` field
    reads with the current schema, its source ``unknown``."""
    import io
    import json
    from pathlib import Path

    import fastavro

    current = json.loads((Path(__file__).parents[2] / "schemas" / "outcome.avsc").read_text())
    old = dict(current, fields=[f for f in current["fields"] if f["name"] != "source"])
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(old), {
        "event_id": "e1", "kind": "chargeback", "outcome_time_ms": 1, "customer_id": None, "terminal_id": None})
    buf.seek(0)
    record = fastavro.schemaless_reader(buf, fastavro.parse_schema(old), fastavro.parse_schema(current))
    assert record["source"] == "unknown"
