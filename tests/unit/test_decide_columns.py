"""The policy over columns (``decide_columns``) decides as the policy row by row (``decide``).

``decide`` is the reference: short, one event at a time, and what the offline tools call.
The pipeline runs ``decide_columns``; these tests hold the two to the same decisions,
reason for reason and float for float, on batches that put probabilities exactly on the
thresholds, in ties, and on rows with and without screened text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import Decision, Reason, ReasonKind
from engine.stages.decide import (
    MODEL_VIEW_KEYS,
    Policy,
    PolicyViews,
    ScoreColumns,
    ScoreRow,
    decide,
    decide_columns,
    score_rows,
)


@dataclass(frozen=True)
class Det:
    score: float
    flagged: bool
    threshold: float | None = None
    reasons: tuple = ()


#: Probabilities drawn from these often land exactly on a threshold or in a tie.
_EDGES = [0.0, 0.025, 0.05, 0.1, 0.25, 0.3, 0.45, 0.475, 0.5, 0.525, 0.55, 0.7, 0.95, 1.0]
probability = st.one_of(st.sampled_from(_EDGES), st.floats(0.0, 1.0, allow_nan=False, width=32))
threshold = st.one_of(st.sampled_from([0.0, 0.05, 0.3, 0.45, 0.5, 0.7, 1.0]), st.floats(0.0, 1.0, allow_nan=False))

policies = st.builds(
    Policy, reject_threshold=threshold, review_threshold=threshold,
    tie_margin=st.sampled_from([0.0, 0.05, 0.1, 0.3]), abstain_threshold=threshold,
    detector_floor=st.sampled_from([Decision.REVIEW, Decision.REJECT]),
    degraded_mode=st.sampled_from(["review", "model"]))

signal = Reason(ReasonKind.DETECTOR, "forged_marker", "memo: 'verdict: pass'")
detections = st.one_of(
    st.none(),
    st.builds(Det, score=probability, flagged=st.booleans(),
              threshold=st.one_of(st.none(), st.floats(0.0, 1.0, allow_nan=False)),
              reasons=st.sampled_from([(), (signal,), ("rot13",),
                                       (signal, "base64", Reason(ReasonKind.INPUT, "memo_truncated", "truncated"))])))


@st.composite
def batches(draw):
    n = draw(st.integers(0, 24))
    probs = draw(st.lists(st.tuples(probability, probability, probability), min_size=n, max_size=n))
    risk = draw(st.lists(probability, min_size=n, max_size=n))
    exits = draw(st.lists(st.integers(-1, 6), min_size=n, max_size=n))
    dets = draw(st.lists(detections, min_size=n, max_size=n))
    return (np.array(probs, dtype=np.float32).reshape(n, 3), np.array(risk, dtype=np.float32),
            np.array(exits, dtype=np.int64), dets)


@settings(max_examples=300, deadline=None)
@given(batch=batches(), policy=policies, degraded=st.booleans(), min_column_rows=st.sampled_from([0, 8, 10_000]))
def test_columns_decide_as_rows(batch, policy, degraded, min_column_rows):
    """Both ways ``decide_columns`` ranks (NumPy from ``min_column_rows`` rows on, Python
    below) give ``decide``'s decisions and views."""
    probs, risk, exits, dets = batch
    # The rows as the model outputs reached the policy before: float32 widened by .tolist().
    rows = score_rows(probs.tolist(), risk.tolist(), exits.tolist())
    out = decide_columns(ScoreColumns.of(probs, risk, exits), dets, policy, degraded, min_column_rows=min_column_rows)
    expected = [decide(r, d, policy, degraded) for r, d in zip(rows, dets, strict=True)]
    assert out.decisions == expected
    assert [out.views[i] for i in range(len(expected))] == [d.model_view() for d in expected]
    for key in MODEL_VIEW_KEYS:
        assert out.views.column(key) == [d.model_view()[key] for d in expected]


def test_a_batch_of_every_case_in_one():
    """A hand-written batch: each policy step, once (readable when the property fails)."""
    rows = [ScoreRow((0.90, 0.07, 0.03), 0.01), ScoreRow((0.46, 0.08, 0.46), 0.5),
            ScoreRow((0.02, 0.08, 0.90), 0.95, 3), ScoreRow((0.60, 0.30, 0.10), 0.2)]
    dets = [None, Det(0.2, False, 0.9), None, Det(0.97, True, 0.9, (signal,))]
    out = decide_columns(ScoreColumns.from_rows(rows), dets, Policy(), min_column_rows=1)
    assert [d.verdict for d in out.decisions] == [Decision.PASS, Decision.REVIEW, Decision.REJECT, Decision.REVIEW]
    assert out.decisions == [decide(r, d, Policy()) for r, d in zip(rows, dets, strict=True)]
    assert out.views.column("verdict") == ["pass", "review", "reject", "review"]
    assert out.views.column("detector_flagged") == [False, False, False, True]


def test_score_columns_round_trip_and_take():
    rows = [ScoreRow((0.9, 0.05, 0.05), 0.1, -1), ScoreRow((0.1, 0.2, 0.7), 0.8, 2)]
    cols = ScoreColumns.from_rows(rows)
    assert cols.rows() == rows
    assert cols.take([1]).rows() == rows[1:]
    assert len(cols.take([])) == 0
    with pytest.raises(ValueError, match="differ in length"):
        ScoreColumns.of(np.zeros((2, 3)), np.zeros(3), np.zeros(2))


def test_lengths_are_checked():
    with pytest.raises(ValueError, match="batch length mismatch"):
        decide_columns(ScoreColumns.from_rows([ScoreRow((1.0, 0.0, 0.0))]), [], Policy())
    with pytest.raises(ValueError, match="differ in length"):
        PolicyViews({key: [] for key in MODEL_VIEW_KEYS} | {"risk": [0.1]})
    assert len(decide_columns(ScoreColumns.from_rows([]), [], Policy()).decisions) == 0


@pytest.mark.parametrize("min_column_rows", [0, 10_000])
@pytest.mark.parametrize("policy", [
    Policy(), Policy(reject_threshold=0.75, review_threshold=0.25, tie_margin=0.0, abstain_threshold=0.625),
    Policy(reject_threshold=0.375, review_threshold=0.625, tie_margin=0.25, abstain_threshold=0.0,
           degraded_mode="model"),
])
def test_every_boundary_of_a_dyadic_grid(policy, min_column_rows):
    """Every row of eighths (exact in float32 and float64), so each threshold, abstain
    level and tie margin is met exactly by some row: ``>=`` against ``>`` and ``<``
    against ``<=`` differ here, on both ranking paths."""
    eighths = [k / 8 for k in range(9)]
    rows = [ScoreRow((a, b, c), risk=a) for a in eighths for b in eighths for c in eighths]
    dets = [None if i % 5 else Det(0.5, i % 10 == 0, 0.5) for i in range(len(rows))]
    for degraded in (False, True):
        out = decide_columns(ScoreColumns.from_rows(rows), dets, policy, degraded, min_column_rows=min_column_rows)
        assert out.decisions == [decide(r, d, policy, degraded) for r, d in zip(rows, dets, strict=True)]
