"""The policy stage: every case, and the reason it leaves on the decision."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from engine.records import Decision, Reason, ReasonKind
from engine.settings import PolicySettings
from engine.stages.decide import Policy, PolicyDecision, ScoreRow, decide


@dataclass
class Det:
    score: float
    flagged: bool
    reasons: tuple = ()


def codes(d: PolicyDecision) -> list[tuple[ReasonKind, str]]:
    return [(r.kind, r.code) for r in d.reasons]


# Clear-cut rows: the top probability is far above abstain and tie.
CLEAR_PASS = ScoreRow((0.90, 0.07, 0.03), risk=0.01)
CLEAR_REVIEW = ScoreRow((0.10, 0.80, 0.10), risk=0.2)
CLEAR_REJECT = ScoreRow((0.02, 0.08, 0.90), risk=0.95)


@pytest.mark.parametrize("row, expected", [
    (CLEAR_PASS, Decision.PASS), (CLEAR_REVIEW, Decision.REVIEW), (CLEAR_REJECT, Decision.REJECT),
])
def test_thresholds_on_clear_rows(row, expected):
    d = decide(row, None, Policy())
    assert d.verdict is expected and d.model_verdict is expected
    assert codes(d) == [(ReasonKind.MODEL, f"threshold_{expected.value}")]
    assert d.confidence == pytest.approx(max(row.probs))
    assert d.probabilities == {"pass": row.probs[0], "review": row.probs[1], "reject": row.probs[2]}
    assert d.risk_score == row.risk and not d.degraded and not d.detector_flagged


def test_reject_threshold_is_configurable():
    row = ScoreRow((0.35, 0.0, 0.65))
    assert decide(row, None, Policy()).verdict is Decision.REJECT
    d = decide(row, None, Policy(reject_threshold=0.7))
    # not enough for reject, but the not-pass mass (0.65) reaches the review threshold
    assert d.verdict is Decision.REVIEW and codes(d)[0] == (ReasonKind.MODEL, "threshold_review")


def test_review_threshold_uses_not_pass_mass():
    # arg-max says pass (0.55), but a lower review threshold escalates on 0.45 of not-pass mass
    row = ScoreRow((0.55, 0.25, 0.20))
    assert decide(row, None, Policy(tie_margin=0.0, abstain_threshold=0.0)).verdict is Decision.PASS
    d = decide(row, None, Policy(review_threshold=0.4, tie_margin=0.0, abstain_threshold=0.0))
    assert d.verdict is Decision.REVIEW and d.model_verdict is Decision.REVIEW


def test_abstain_sends_low_confidence_to_review():
    row = ScoreRow((0.45, 0.15, 0.40))  # top 0.45 < 0.5; gap 0.05 is not a tie at m=0.04
    d = decide(row, None, Policy(tie_margin=0.04))
    assert d.verdict is Decision.REVIEW
    assert (ReasonKind.POLICY, "abstain") in codes(d)
    assert (ReasonKind.POLICY, "tie_margin") not in codes(d)


def test_abstain_softens_an_unsure_reject():
    row = ScoreRow((0.30, 0.22, 0.48))  # p(reject) 0.48 >= 0.45 threshold but top < 0.5
    d = decide(row, None, Policy(reject_threshold=0.45, tie_margin=0.0))
    assert d.model_verdict is Decision.REJECT and d.verdict is Decision.REVIEW
    assert codes(d) == [(ReasonKind.MODEL, "threshold_reject"), (ReasonKind.POLICY, "abstain")]


def test_tie_margin_sends_close_top_two_to_review():
    row = ScoreRow((0.52, 0.00, 0.48))  # top 0.52 not below abstain 0.5; gap 0.04 < 0.05
    d = decide(row, None, Policy())
    assert d.verdict is Decision.REVIEW
    assert codes(d) == [(ReasonKind.MODEL, "threshold_pass"), (ReasonKind.POLICY, "tie_margin")]
    assert "0.520" in d.reasons[1].detail and "0.480" in d.reasons[1].detail


def test_no_tie_when_margin_is_zero():
    d = decide(ScoreRow((0.51, 0.0, 0.49)), None, Policy(tie_margin=0.0))
    assert d.verdict is Decision.PASS


def test_detector_flag_floors_a_pass_to_review():
    signal = Reason(ReasonKind.DETECTOR, "instruction_override", "memo: 'ignore previous'")
    cleaned = Reason(ReasonKind.INPUT, "memo_truncated", "cut")
    d = decide(CLEAR_PASS, Det(0.97, True, (cleaned, signal)), Policy())
    assert d.verdict is Decision.REVIEW and d.model_verdict is Decision.PASS
    assert codes(d)[-2:] == [(ReasonKind.DETECTOR, "injection_flagged"), (ReasonKind.DETECTOR, "instruction_override")]
    assert "0.970" in d.reasons[-2].detail and "at least review" in d.reasons[-2].detail
    assert cleaned not in d.reasons  # input reasons are the pipeline's to place, not the policy's
    assert d.detector_flagged and d.detector_score == pytest.approx(0.97)


def test_detector_floor_never_lowers_a_reject():
    d = decide(CLEAR_REJECT, Det(0.9, True), Policy())
    assert d.verdict is Decision.REJECT


def test_detector_floor_is_configurable_but_never_below_review():
    assert decide(CLEAR_PASS, Det(0.9, True), Policy(detector_floor=Decision.REJECT)).verdict is Decision.REJECT
    assert decide(CLEAR_PASS, Det(0.9, True), Policy.coerce({"detector_floor": "reject"})).verdict is Decision.REJECT
    for waived in ("none", "pass", Decision.PASS, "maybe"):  # a flagged event never passes on the model alone
        with pytest.raises(ValueError, match="detector_floor must be review or reject"):
            Policy.coerce({"detector_floor": waived})


def test_unflagged_detector_puts_its_score_in_the_reasons_and_changes_nothing():
    d = decide(CLEAR_PASS, Det(0.12, False), Policy())
    assert d.verdict is Decision.PASS and d.detector_score == pytest.approx(0.12)
    screened = [r for r in d.reasons if r.kind is ReasonKind.DETECTOR]
    assert [r.code for r in screened] == ["injection_screened"] and "0.120" in screened[0].detail


def test_no_user_text_no_detector_reason():
    d = decide(CLEAR_PASS, None, Policy())
    assert all(r.kind is not ReasonKind.DETECTOR for r in d.reasons)


def test_degraded_review_mode_holds_everything_for_review():
    for row in (CLEAR_PASS, CLEAR_REJECT):
        d = decide(row, None, Policy(), degraded=True)
        assert d.verdict is Decision.REVIEW and d.degraded
        assert codes(d)[-1] == (ReasonKind.POLICY, "context_unavailable")


def test_degraded_review_mode_keeps_a_reject_detector_floor():
    d = decide(CLEAR_PASS, Det(0.9, True), Policy(detector_floor=Decision.REJECT), degraded=True)
    assert d.verdict is Decision.REJECT
    assert [c for _, c in codes(d)] == ["threshold_pass", "context_unavailable", "injection_flagged"]


def test_degraded_model_mode_decides_on_the_model():
    d = decide(CLEAR_REJECT, None, Policy(degraded_mode="model"), degraded=True)
    assert d.verdict is Decision.REJECT
    assert (ReasonKind.POLICY, "context_unavailable") in codes(d)
    assert "empty context" in d.reasons[-1].detail


def test_policy_from_settings_and_overrides():
    p = Policy.from_settings(PolicySettings(tie_margin=0.1, abstain_threshold=0.4,
                                            degraded_mode="model", detector_floor="reject"))
    assert (p.tie_margin, p.abstain_threshold, p.degraded_mode, p.detector_floor) == (0.1, 0.4, "model", Decision.REJECT)
    assert p.with_overrides({"tie_margin": 0.2}).tie_margin == 0.2
    assert p.with_overrides(None) is p


@pytest.mark.parametrize("bad", [
    {"tie_margin": 1.5}, {"abstain_threshold": "high"}, {"degraded_mode": "panic"}, {"detector_floor": "block"},
])
def test_bad_policy_values_are_rejected_with_the_field_named(bad):
    with pytest.raises(ValueError) as err:
        Policy.coerce(bad)
    assert next(iter(bad)) in str(err.value)


def test_wrong_probability_length_is_an_error():
    with pytest.raises(ValueError, match="3 probabilities"):
        decide(ScoreRow((0.5, 0.5)), None, Policy())  # type: ignore[arg-type]


def test_model_view_names_for_rules():
    view = decide(CLEAR_REJECT, Det(0.3, False), Policy()).model_view()
    assert view["p_reject"] == pytest.approx(0.90) and view["risk"] == pytest.approx(0.95)
    assert view["verdict"] == "reject" and view["detector_score"] == pytest.approx(0.3)


def test_decide_is_pure():
    row, det, p = CLEAR_REVIEW, Det(0.5, True), Policy()
    assert decide(row, det, p) == decide(row, det, p)


def test_a_rule_set_cannot_waive_the_detector_floor():
    from pydantic import ValidationError

    from engine.rules.spec import PolicySpec

    assert PolicySpec(detector_floor="reject").detector_floor == "reject"
    for waived in ("none", "pass"):
        with pytest.raises(ValidationError):
            PolicySpec(detector_floor=waived)
