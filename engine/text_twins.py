"""Untrusted text may only add suspicion: the text-free twins of an event, and how their
outcomes combine with the event's own (docs/field-isolation.md).

``engine.pipeline`` encodes, scores, screens and rules on the twins exactly as if they
had been sent that way; this module says which twins an event has and what the event's
proposal becomes once they are counted. Pure functions on records: no state here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import combinations

from engine.records import Reason, ReasonKind, TransactionEvent
from engine.stages.decide import PolicyDecision

#: The untrusted text fields of an event: whatever a user or merchant typed.
USER_TEXT_FIELDS: tuple[str, ...] = ("memo", "merchant_descriptor")


def text_twins(events: Sequence[TransactionEvent]) -> tuple[list[int], list[TransactionEvent]]:
    """For every event with user text, the same event with each proper subset of its
    text fields removed (the text-free event first): ``(owner index per twin, twins)``.

    A twin is a real event, not a masked row: it goes through the same encoder, detector
    and rules as an event sent without that text, so its tensors, detector result and
    rule inputs are exactly that event's. An event with memo and descriptor gets three
    twins (neither, descriptor only, memo only), so taking the most severe outcome over
    an event and its twins makes adding *any* text field unable to lower the outcome.
    """
    owners: list[int] = []
    twins: list[TransactionEvent] = []
    for i, e in enumerate(events):
        present = tuple(name for name, value in (("memo", e.memo), ("merchant_descriptor", e.merchant_descriptor))
                        if value is not None)
        if not present:
            continue
        for kept in _proper_subsets(present):
            owners.append(i)
            twins.append(replace(e, **{name: None for name in present if name not in kept}))
    return owners, twins


def _proper_subsets(names: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every subset of ``names`` but ``names`` itself, smallest first (the empty one first)."""
    return [kept for size in range(len(names)) for kept in combinations(names, size)]


def text_cannot_lower(decider: PolicyDecision, with_text: PolicyDecision, risk: float) -> PolicyDecision:
    """The event's proposal once its twins are counted: ``decider`` (the proposal whose
    final verdict was the most severe, the event's own or a twin's) with the risk score
    ``risk`` (the highest over the event and its twins). The detector's view of the
    event's own text is kept, and ``user_text_cannot_lower`` says what the twins changed."""
    changes = []
    if decider is not with_text:
        changes.append(f"with its user text the verdict would have been {with_text.verdict.value}; "
                       f"without (some of) it {decider.verdict.value}")
    if risk > with_text.risk_score:
        changes.append(f"risk score {risk:.4f} without (some of) its user text, {with_text.risk_score:.4f} with it")
    if not changes:
        return with_text
    reason = Reason(ReasonKind.POLICY, "user_text_cannot_lower",
                    "; ".join(changes) + " — untrusted text may only add suspicion")
    detector_reasons = () if decider is with_text else tuple(
        r for r in with_text.reasons if r.kind is ReasonKind.DETECTOR and r not in decider.reasons)
    return replace(decider, risk_score=risk, reasons=decider.reasons + detector_reasons + (reason,),
                   detector_score=with_text.detector_score, detector_flagged=with_text.detector_flagged)
