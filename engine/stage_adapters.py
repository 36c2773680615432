"""Adapters between ``engine.pipeline`` and each stage's own interface.

The pipeline owns the order of the stages; this module owns how one stage's output
becomes the next one's input: model outputs → one ``ScoreRow`` per row, detector
results → one ``EventDetection`` per event, proposals → the guard and back, and the
text-free twin events that keep user text from lowering a verdict or a risk score. No state here.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from dataclasses import dataclass, replace
from typing import Any

from engine.decide import PolicyDecision, ScoreRow
from engine.records import Reason, ReasonKind, TransactionEvent
from engine.textproc import clean_user_text


@dataclass(slots=True, frozen=True)
class EventDetection:
    """The detector's view of one event: worst score over its untrusted text fields."""

    score: float
    flagged: bool
    reasons: tuple[Any, ...] = ()


# -- text-free twins --------------------------------------------------------------------------

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


# -- model outputs ------------------------------------------------------------------------

def score_rows(outputs: Any, n: int) -> list[ScoreRow]:
    """``ModelOutputs`` (tensors or arrays) → one ``ScoreRow`` per row."""
    probs = _to_list(outputs.probs)
    risk = _to_list(outputs.risk)
    exit_layer = getattr(outputs, "exit_layer", None)
    exits = _to_list(exit_layer) if exit_layer is not None else [-1] * n
    if len(probs) != n or len(risk) != n:
        raise RuntimeError(f"model returned {len(probs)} rows for {n} events")
    return [ScoreRow(tuple(float(x) for x in p), float(r), int(e)) for p, r, e in zip(probs, risk, exits)]


def _to_list(value: Any) -> list:
    if hasattr(value, "detach"):
        value = value.detach().cpu()
    if hasattr(value, "tolist"):
        return value.tolist()
    return list(value)


# -- detector -------------------------------------------------------------------------------

def detect(detector: Any | None, events: Sequence[TransactionEvent]) -> list[Any]:
    """One result per event: the worst of its untrusted text fields (memo, descriptor)."""
    if detector is None:
        return [None] * len(events)
    screen_events = getattr(detector, "screen_events", None)
    if screen_events is not None:  # engine.detect.InjectionDetector combines fields itself
        results = list(screen_events(events))
        return [r if getattr(r, "field", True) is not None else None for r in results]
    texts: list[str | None] = []
    for e in events:
        texts.extend((e.memo, e.merchant_descriptor))
    results = detector.score_texts(texts)
    out: list[EventDetection | None] = []
    for i, e in enumerate(events):
        pair = [r for t, r in zip((e.memo, e.merchant_descriptor), results[2 * i:2 * i + 2]) if t]
        if not pair:
            out.append(None)
            continue
        out.append(EventDetection(
            score=max(float(r.score) for r in pair),
            flagged=any(bool(r.flagged) for r in pair),
            reasons=tuple(dict.fromkeys(x for r in pair for x in (getattr(r, "reasons", ()) or ()))),
        ))
    return out


def input_reasons(event: TransactionEvent, detection: Any | None) -> tuple[Reason, ...]:
    """What cleaning did to the user text (truncated, invisible characters, …). The
    detector reports it when it ran (same ``clean_user_text``); otherwise clean here."""
    if detection is not None:
        return tuple(r for r in (getattr(detection, "reasons", ()) or ())
                     if isinstance(r, Reason) and r.kind is ReasonKind.INPUT)
    out: list[Reason] = []
    for name in ("memo", "merchant_descriptor"):
        value = getattr(event, name)
        if value:
            for issue in clean_user_text(value).issues:
                out.append(Reason(ReasonKind.INPUT, f"{name}_{issue}", f"{name}: {issue.replace('_', ' ')}"))
    return tuple(out)


# -- guard ----------------------------------------------------------------------------------

def rule_contexts(guard_stage: Any | None, snapshots: Sequence[Any]) -> list[dict[str, float]]:
    """What rules read as ``ctx.*``, one mapping per snapshot (empty without a guard).
    Built once per batch: an event and its text-blind twin share it (read-only)."""
    if guard_stage is None:
        return [{} for _ in snapshots]
    return [_rule_inputs(s) for s in snapshots]


def guard(guard_stage: Any | None, events: Sequence[TransactionEvent], contexts: Sequence[dict[str, float]],
          proposals: Sequence[PolicyDecision]) -> list[tuple[Any, tuple[Reason, ...], str | None]]:
    """Hard rules last: they always win. ``contexts`` from ``rule_contexts``. Returns
    (final verdict, rule reasons, rule-set version if the guard reports one) per event."""
    if guard_stage is None:
        return [(p.verdict, (), None) for p in proposals]
    views = [p.model_view() for p in proposals]
    apply_batch = getattr(guard_stage, "apply_batch", None)
    if apply_batch is not None:
        guarded = apply_batch(list(events), contexts, views, list(proposals))
    else:
        guarded = [guard_stage.apply(e, ctx, v, p) for e, ctx, v, p in zip(events, contexts, views, proposals)]
    return [_unpack_guarded(g, p) for g, p in zip(guarded, proposals)]


def _rule_inputs(snapshot: Any) -> dict[str, float]:
    as_inputs = getattr(snapshot, "as_rule_inputs", None)
    return dict(as_inputs()) if as_inputs is not None else dict(snapshot or {})


def _unpack_guarded(guarded: Any, proposal: PolicyDecision) -> tuple[Any, tuple[Reason, ...], str | None]:
    """The guard's verdict, the reasons it *added* (the proposal's are kept first), and
    the version of the rule set that decided (a reload may land between batches)."""
    reasons = tuple(getattr(guarded, "reasons", ()) or ())
    already = set(proposal.reasons)
    added = tuple(r for r in reasons if r not in already)
    version = getattr(guarded, "rules_version", None)
    return guarded.verdict, added, (str(version) if version else None)
