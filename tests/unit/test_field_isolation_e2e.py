"""Field isolation end to end, through the real stages (issue 6, deliverable 4).

For random events, inserting any memo text — forged field markers, control tokens,
"decision: pass", JSON fragments — must change neither the control-field tensors nor
any rule input, and must never turn a review/reject into a pass.

Real stages throughout (``MemoryFeatureStore`` → ``FieldIsolatedEncoder`` → an
untrained, seeded ``DecisionModel`` → ``InjectionDetector`` → ``decide`` → ``Guard``
over ``rules/``), driven by ``DecisionPipeline``; no Kafka or Redis is needed, so this
is a unit test. The untrained model puts p(review)+p(reject) near 0.62 for every
event, varying with the trusted fields, so the policy below sets its review threshold
at the middle of that range with abstain and tie margin off: verdicts then really
do vary with the input, and the test can fail (``test_property_is_not_vacuous``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.features.memory import MemoryFeatureStore
from engine.model.card import fresh_model
from engine.model.config import InputSpec
from engine.offline.detector_corpus.corpus import benign_memos
from engine.offline.detector_corpus.forged import CANONICAL, canonical_forgeries
from engine.pipeline import Components, DecisionPipeline
from engine.records import SEVERITY, Decision, ReasonKind, TransactionEvent
from engine.stages.decide import Policy
from engine.stages.detect import InjectionDetector
from engine.stages.encode import FieldIsolatedEncoder
from engine.stages.guard import Guard, event_inputs
from engine.stages.infer import Inference

torch.set_num_threads(1)
REPO = Path(__file__).resolve().parents[2]
T0 = 1_700_000_000_000
CONTROL = ("control_numeric", "control_categorical", "history_numeric", "history_categorical", "history_mask")
FORGERIES = list(CANONICAL)

_encoder = FieldIsolatedEncoder()
_model, _card = fresh_model(InputSpec.from_schema(_encoder.schema), seed=0)
_inference = Inference(_model, _card)
_detector = InjectionDetector.default()
_guard = Guard.from_dir(REPO / "rules")


def _probe_events() -> list[TransactionEvent]:
    """A spread of trusted fields (merchant, amount, channel, country)."""
    combos = [(m, a, ch, co) for m in ("5411", "5812", "7995") for a in (5.0, 90.0, 900.0, 3000.0)
              for ch in ("card_present", "ecommerce", "transfer") for co in ("BE", "US")]
    return [TransactionEvent(f"e{i}", T0 + i * 60_000, f"c{i % 5}", "a1", f"t{i % 4}", mcc, amount, "EUR",
                             channel, country) for i, (mcc, amount, channel, country) in enumerate(combos)]


def _median_not_pass_mass() -> float:
    """Where the untrained model's p(review)+p(reject) sits for trusted-field variety."""
    events = _probe_events()
    snaps = MemoryFeatureStore().enrich(events)
    probs = _inference(_encoder.encode(events, snaps)).probs
    return round(float((probs[:, 1] + probs[:, 2]).median()), 5)


# Review threshold in the middle of the model's range; abstain and tie margin off, so
# the verdict really depends on the input (see test_property_is_not_vacuous).
_POLICY = Policy(review_threshold=_median_not_pass_mass(), reject_threshold=0.99, abstain_threshold=0.0,
                 tie_margin=0.0)


def _pipeline() -> DecisionPipeline:
    """A fresh store per run, so two variants of a batch see identical context."""
    return DecisionPipeline(Components(store=MemoryFeatureStore(), encoder=_encoder, inference=_inference,
                                       detector=_detector, guard=_guard, policy=_POLICY,
                                       model_version=_card.version))


@st.composite
def trusted_events(draw, min_size: int = 1, max_size: int = 6) -> list[TransactionEvent]:
    n = draw(st.integers(min_size, max_size))
    events, t = [], T0
    for i in range(n):
        t += draw(st.integers(1_000, 3_600_000))
        events.append(TransactionEvent(
            event_id=f"e{i}", event_time_ms=t, customer_id=draw(st.sampled_from(["c1", "c2", "c3"])),
            account_id="a1", terminal_id=draw(st.sampled_from(["t1", "t2", "t3", "t4"])),
            merchant_category=draw(st.sampled_from(["5411", "5812", "4829", "7995"])),
            amount=draw(st.floats(0.5, 12_000, allow_nan=False)), currency="EUR",
            channel=draw(st.sampled_from(["card_present", "ecommerce", "mobile_app", "transfer"])),
            country=draw(st.sampled_from(["BE", "FR", "DE", "US"])),
            device_id=draw(st.sampled_from([None, "d1", "d2"])),
            memo=draw(st.sampled_from([None, "rent June", "pizza 🍕", "invoice 4411"])),
            merchant_descriptor=draw(st.sampled_from([None, "SQ *BAKERY", "AMZN Mktp"])),
        ))
    return events


forged_text = st.lists(st.sampled_from(FORGERIES), min_size=1, max_size=4).flatmap(
    lambda parts: st.sampled_from(["", "rent June ", "invoice 4411 | "]).map(lambda pre: pre + " ".join(parts)))
any_text = st.one_of(forged_text, st.text(max_size=300), st.binary(max_size=200).map(
    lambda b: b.decode("utf-8", errors="replace")))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=trusted_events(), memo=any_text, field=st.sampled_from(["memo", "merchant_descriptor"]))
def test_user_text_changes_no_control_tensor_and_no_rule_input(events, memo, field):
    attacked = [dataclasses.replace(e, **{field: memo}) for e in events]
    base_snaps = MemoryFeatureStore().enrich(events)
    attacked_snaps = MemoryFeatureStore().enrich(attacked)
    assert [s.as_rule_inputs() for s in base_snaps] == [s.as_rule_inputs() for s in attacked_snaps]
    assert [event_inputs(e) for e in events] == [event_inputs(e) for e in attacked]
    base, forged = _encoder.encode(events, base_snaps), _encoder.encode(attacked, attacked_snaps)
    for name in CONTROL:
        assert torch.equal(getattr(base, name), getattr(forged, name)), name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=trusted_events(), memo=forged_text)
def test_forged_text_never_turns_a_verdict_into_pass(events, memo):
    """Forged text written into the memo never turns the memo-free event's review or reject
    into a pass. The comparison is with the event *without* a memo: where the drawn event
    already had one, the attack replaces it, and swapping one text for another may lower a
    verdict that the first text had raised (text may only add suspicion, so taking it away
    may take that suspicion away; ``test_unflagged_text_never_moves_a_verdict_to_pass``)."""
    events = [dataclasses.replace(e, memo=None) for e in events]
    attacked = [dataclasses.replace(e, memo=memo) for e in events]
    before = _pipeline().decide_batch(events)
    after = _pipeline().decide_batch(attacked)
    flagged = _detector.score_text(memo, "memo").flagged
    for b, a in zip(before, after):
        assert not (b.verdict is not Decision.PASS and a.verdict is Decision.PASS), (b.reasons, a.reasons)
        assert any(r.kind is ReasonKind.DETECTOR for r in a.reasons), a.reasons
        assert a.detector_score is not None
        if flagged:  # a flagged forgery holds the floor, whatever the model says
            assert a.verdict is not Decision.PASS and a.detector_score >= _detector.threshold


def test_nearly_every_canonical_forgery_is_flagged():
    """The learned detector's recall on the canonical forgeries (``forged.CANONICAL``, the
    ones the properties above draw from), alone and in pairs, in three wrappers (1,260 texts). Since issue 17 a network decides,
    not a pattern per forgery, so this is a rate, like the detector's other rates; the
    properties above hold the floor for every flagged one and keep unflagged text from
    lowering a verdict. Which forgeries each artifact and candidate missed, and why
    candidates that missed more were not shipped: docs/detector.md
    (``python ops/bench/detector_compare.py`` counts them)."""
    texts = canonical_forgeries()
    results = _detector.score_texts(texts, "memo")
    missed = [(t, round(r.score, 3)) for t, r in zip(texts, results) if not r.flagged]
    assert len(missed) / len(texts) <= 0.005, missed


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=trusted_events(min_size=2), data=st.data())
def test_verdict_reaches_pass_only_through_trusted_fields(events, data):
    """Change trusted fields and text together: whenever the verdict moves from
    review/reject to pass, a trusted field changed too (never the text alone)."""
    i = data.draw(st.integers(0, len(events) - 1))
    new_amount = data.draw(st.floats(0.5, 12_000, allow_nan=False))
    memo = data.draw(forged_text)
    changed_trusted = dataclasses.replace(events[i], amount=new_amount, memo=memo)
    text_only = dataclasses.replace(events[i], memo=memo)
    before = _pipeline().decide_batch(events)[i]
    with_text = _pipeline().decide_batch([*events[:i], text_only, *events[i + 1:]])[i]
    with_both = _pipeline().decide_batch([*events[:i], changed_trusted, *events[i + 1:]])[i]
    if before.verdict is not Decision.PASS:
        assert with_text.verdict is not Decision.PASS
    # with a flagged forged memo the detector floor holds even when a trusted field changes
    if _detector.score_text(memo, "memo").flagged:
        assert SEVERITY[with_both.verdict] >= SEVERITY[Decision.REVIEW]


_BENIGN = benign_memos(200, seed=5)
benign_text = st.one_of(st.sampled_from(_BENIGN), st.text(max_size=120))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=benign_text)
def test_unflagged_text_never_moves_a_verdict_to_pass(text):
    """The property through the *model*, not the detector floor: text the detector does
    not flag (benign memos, arbitrary unicode) reaches the model's text segment, and
    inserting it must still never turn the trusted fields' review/reject into a pass —
    the text-blind twin holds every verdict at least at what the trusted fields alone
    say. The probe events straddle the review threshold, so without the twin this fails.

    (Swapping one text for another is a different matter: text that *added* suspicion
    can be taken away again, down to the trusted fields' verdict and never below it.)"""
    events = _probe_events()
    before = _pipeline().decide_batch(events)
    after = _pipeline().decide_batch([dataclasses.replace(e, memo=text) for e in events])
    for b, a in zip(before, after):
        if a.detector_score is not None and a.detector_score >= _detector.threshold:
            continue  # flagged: the floor's property, tested above
        assert not (b.verdict is not Decision.PASS and a.verdict is Decision.PASS), (text, a.reasons)


def test_property_is_not_vacuous():
    """The policy above really produces both pass and review/reject on trusted fields."""
    verdicts = {v.verdict for v in _pipeline().decide_batch(_probe_events())}
    assert Decision.PASS in verdicts and len(verdicts) >= 2, verdicts


def test_unflagged_text_alone_never_turns_review_into_pass():
    events = _probe_events()
    before = _pipeline().decide_batch(events)
    for memo in ("invoice 4411 office chairs, delivered Tuesday", "thanks for everything, see you on Friday at the station 🙂", "家賃 十一月"):
        assert not _detector.score_text(memo).flagged
        after = _pipeline().decide_batch([dataclasses.replace(e, memo=memo) for e in events])
        flips = [b.event_id for b, a in zip(before, after)
                 if b.verdict is not Decision.PASS and a.verdict is Decision.PASS]
        assert not flips, f"{memo[:20]!r} moved {len(flips)} events to pass"
