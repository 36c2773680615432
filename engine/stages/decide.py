"""The policy stage: calibrated probabilities (+ detector result) → a proposed verdict.

The model says how likely each verdict is; the policy says what we *do* with that,
and writes down why. It runs after inference and before the hard rules (``guard``),
which may still overrule it: **model → policy → detector → hard rules**.

The steps, in order, each leaving a ``Reason`` on the decision:

1. **Thresholds** (reason ``model``/``threshold_*``): reject when p(reject) reaches
   ``reject_threshold``; otherwise review when p(review) + p(reject) — the
   probability that the event is *not* a clean pass — reaches ``review_threshold``;
   otherwise pass. Escalating on the not-pass mass (rather than the arg-max) is the
   cost-aware choice: missing fraud costs more than a review.
2. **Abstain** (``policy``/``abstain``): when the top probability is below
   ``abstain_threshold`` the model is unsure of everything → review.
3. **Tie margin** (``policy``/``tie_margin``): when the top two probabilities are
   within ``tie_margin`` of each other the model cannot tell them apart → review.
4. **Degraded mode** (``policy``/``context_unavailable``): when the feature store is
   unreachable, ``degraded_mode="review"`` sends everything to review (the rules still
   run afterwards); ``"model"`` decides on the model scored with an empty context.
5. **Detector floor** (``detector``/``injection_flagged``, then the detector's signals): a flagged untrusted
   text field makes the verdict at least ``detector_floor`` — ``review`` (the default) or
   ``reject``, per rule set; it cannot be configured away, so a flagged event never passes
   on the model alone. An event whose text was screened and not flagged carries
   ``detector``/``injection_screened`` with its score, so every verdict on user text says
   what the detector made of it.

Abstain and tie send a pass *or* a reject to review: an unsure model is neither a
reason to let something through nor to decline a customer outright.

>>> p = Policy()
>>> decide(ScoreRow((0.92, 0.05, 0.03), risk=0.02), None, p).verdict
<Decision.PASS: 'pass'>
>>> d = decide(ScoreRow((0.46, 0.08, 0.46), risk=0.5), None, p)
>>> d.verdict, [r.code for r in d.reasons]
(<Decision.REVIEW: 'review'>, ['threshold_review', 'abstain', 'tie_margin'])
"""  # noqa: E501 (a doctest line is the exception message as printed)

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol

from engine.records import DECISIONS, SEVERITY, Decision, Reason, ReasonKind

DegradedMode = Literal["review", "model"]
#: The verdict names, resolved once: ``Decision.value`` goes through the enum machinery
#: on every access, several times per event (``python ops/bench/stage_ab.py``, "finish").
_DECISION_VALUES: tuple[str, ...] = tuple(d.value for d in DECISIONS)
_PROBS_FORMAT = " ".join(f"{name}=%.3f" for name in _DECISION_VALUES)


class DetectorLike(Protocol):
    """What the policy reads from ``engine.stages.detect.DetectorResult`` (duck-typed so the
    policy does not import the detector and its model)."""

    @property
    def score(self) -> float: ...
    @property
    def flagged(self) -> bool: ...
    @property
    def reasons(self) -> Sequence[Any]: ...


@dataclass(slots=True, frozen=True)
class ScoreRow:
    """One event's model output: calibrated probabilities in ``DECISIONS`` order, the
    calibrated risk of a bad outcome, and the layer the model exited at (-1: last)."""

    probs: tuple[float, float, float]
    risk: float = 0.0
    exit_layer: int = -1

    def probabilities(self) -> dict[str, float]:
        return dict(zip(_DECISION_VALUES, map(float, self.probs)))


def score_rows(probs: list[list[float]], risk: list[float], exit_layer: list[int]) -> list[ScoreRow]:
    """One ``ScoreRow`` per row from a batch's outputs as lists (``.tolist()`` of the
    tensors in process, of the arrays from a model process)."""
    return [ScoreRow((float(p[0]), float(p[1]), float(p[2])), float(r), int(e))
            for p, r, e in zip(probs, risk, exit_layer, strict=True)]


@dataclass(slots=True, frozen=True)
class Policy:
    """Decision thresholds. Defaults come from ``Settings.policy``; the rule set
    (``rules/policy.yaml``) may override any of them, see ``Policy.coerce``.

    >>> Policy.coerce({"tie_margin": 0.1, "detector_floor": "reject"}).detector_floor
    <Decision.REJECT: 'reject'>
    >>> Policy.coerce({"tie_margn": 0.1})
    Traceback (most recent call last):
    ...
    ValueError: unknown policy key(s): tie_margn (known: reject_threshold, review_threshold, tie_margin, abstain_threshold, detector_floor, degraded_mode)
    """  # noqa: E501 (a doctest line is the exception message as printed)

    reject_threshold: float = 0.5
    review_threshold: float = 0.5
    tie_margin: float = 0.05
    abstain_threshold: float = 0.5
    #: A detector-flagged event is at least this verdict: review or reject.
    detector_floor: Decision = Decision.REVIEW
    degraded_mode: DegradedMode = "review"

    def __post_init__(self) -> None:
        for name in ("reject_threshold", "review_threshold", "tie_margin", "abstain_threshold"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
                raise ValueError(f"policy {name} must be a number in [0, 1], got {value!r}")
        object.__setattr__(self, "detector_floor", _parse_floor(self.detector_floor))
        if self.degraded_mode not in ("review", "model"):
            raise ValueError(f"policy degraded_mode must be 'review' or 'model', got {self.degraded_mode!r}")

    @classmethod
    def from_settings(cls, policy_settings: Any) -> Policy:
        """From ``Settings().policy`` (any object with the same attribute names)."""
        return cls().with_overrides(policy_settings)

    @classmethod
    def coerce(cls, value: Any) -> Policy:
        """A ``Policy`` from a Policy, a mapping, a pydantic model or any object with
        policy attributes (e.g. ``Guard.policy`` loaded from ``rules/policy.yaml``)."""
        if isinstance(value, Policy):
            return value
        return cls().with_overrides(value)

    def with_overrides(self, overrides: Any) -> Policy:
        """A copy with every key of ``overrides`` that is set (not None) applied."""
        if overrides is None:
            return self
        known = [f.name for f in fields(Policy)]
        if isinstance(overrides, Mapping):
            data = dict(overrides)
            unknown = sorted(set(data) - set(known))
            if unknown:
                raise ValueError(f"unknown policy key(s): {', '.join(unknown)} (known: {', '.join(known)})")
        elif hasattr(overrides, "model_dump"):
            data = {k: v for k, v in overrides.model_dump().items() if k in known}
        else:
            data = {k: getattr(overrides, k) for k in known if hasattr(overrides, k)}
        changes: dict[str, Any] = {}
        for key, value in data.items():
            if value is None:
                continue
            changes[key] = _parse_floor(value) if key == "detector_floor" else value
        return replace(self, **changes) if changes else self


def _parse_floor(value: Any) -> Decision:
    """``review`` or ``reject`` only: a floor of ``pass`` (or none) would let a flagged
    event pass on the model alone, which the policy must never do."""
    try:
        floor = value if isinstance(value, Decision) else Decision(str(value))
    except ValueError:
        floor = None
    if floor not in (Decision.REVIEW, Decision.REJECT):
        raise ValueError(f"policy detector_floor must be review or reject (a flagged event never passes on "
                         f"the model alone), got {value!r}")
    return floor


@dataclass(slots=True, frozen=True)
class PolicyDecision:
    """The policy's proposal for one event, handed to the hard rules (``Guard.apply``).

    ``model_verdict`` is what the thresholds alone said; ``verdict`` is after abstain,
    tie, detector floor and degraded mode. ``reasons`` are in pipeline order.
    """

    verdict: Decision
    model_verdict: Decision
    confidence: float
    probabilities: Mapping[str, float]
    risk_score: float
    reasons: tuple[Reason, ...]
    detector_score: float | None = None
    detector_flagged: bool = False
    degraded: bool = False
    exit_layer: int = -1

    def model_view(self) -> dict[str, Any]:
        """What rules may read about the model's opinion (CEL variable ``model``)."""
        p_pass, p_review, p_reject = (float(self.probabilities[name]) for name in _DECISION_VALUES)
        return {
            "verdict": self.verdict.value,
            "model_verdict": self.model_verdict.value,
            "confidence": float(self.confidence),
            "p_pass": p_pass,
            "p_review": p_review,
            "p_reject": p_reject,
            "risk": float(self.risk_score),
            "detector_score": float(self.detector_score or 0.0),
            "detector_flagged": bool(self.detector_flagged),
            "degraded": bool(self.degraded),
        }


def _at_least(verdict: Decision, floor: Decision) -> Decision:
    return verdict if SEVERITY[verdict] >= SEVERITY[floor] else floor


def _fmt(probs: Sequence[float]) -> str:
    return _PROBS_FORMAT % tuple(probs)


def decide(row: ScoreRow, detector: DetectorLike | None, policy: Policy, degraded: bool = False) -> PolicyDecision:
    """The policy for one event. Pure: same inputs, same decision, no state."""
    probs = tuple(float(p) for p in row.probs)
    if len(probs) != len(DECISIONS):
        raise ValueError(f"expected {len(DECISIONS)} probabilities in {[d.value for d in DECISIONS]} order, got {len(probs)}")
    p_pass, p_review, p_reject = probs
    reasons: list[Reason] = []

    # 1. thresholds
    if p_reject >= policy.reject_threshold:
        model_verdict = Decision.REJECT
        detail = f"p(reject)={p_reject:.3f} >= {policy.reject_threshold:g}"
    elif p_review + p_reject >= policy.review_threshold:
        model_verdict = Decision.REVIEW
        detail = f"p(review)+p(reject)={p_review + p_reject:.3f} >= {policy.review_threshold:g}"
    else:
        model_verdict = Decision.PASS
        detail = f"p(review)+p(reject)={p_review + p_reject:.3f} < {policy.review_threshold:g}"
    reasons.append(Reason(ReasonKind.MODEL, f"threshold_{model_verdict.value}", f"{detail} ({_fmt(probs)})"))
    verdict = model_verdict

    ranked = sorted(probs, reverse=True)
    top, second = ranked[0], ranked[1]
    # 2. abstain
    if top < policy.abstain_threshold:
        reasons.append(Reason(ReasonKind.POLICY, "abstain",
                              f"top probability {top:.3f} < abstain threshold {policy.abstain_threshold:g}"))
        verdict = Decision.REVIEW
    # 3. tie margin
    if top - second < policy.tie_margin:
        reasons.append(Reason(ReasonKind.POLICY, "tie_margin",
                              f"top two probabilities {top:.3f} and {second:.3f} within {policy.tie_margin:g}"))
        verdict = Decision.REVIEW

    # 4. degraded mode (before the detector so that a reject floor still holds)
    if degraded:
        if policy.degraded_mode == "review":
            reasons.append(Reason(ReasonKind.POLICY, "context_unavailable",
                                  "feature store unreachable: held for review, rules still applied"))
            verdict = Decision.REVIEW
        else:
            reasons.append(Reason(ReasonKind.POLICY, "context_unavailable",
                                  "feature store unreachable: model decided on an empty context"))

    # 5. detector floor
    flagged = bool(detector is not None and detector.flagged)
    if detector is not None and not flagged:
        threshold = getattr(detector, "threshold", None)
        below = f" < threshold {float(threshold):.3f}" if threshold is not None else ""
        reasons.append(Reason(ReasonKind.DETECTOR, "injection_screened",
                              f"user text score {float(detector.score):.3f}{below}: not flagged"))
    if detector is not None and flagged:
        floor = policy.detector_floor
        action = f"verdict at least {floor.value}"
        signals = [r for r in (detector.reasons or ()) if isinstance(r, Reason) and r.kind is ReasonKind.DETECTOR]
        others = [str(r) for r in (detector.reasons or ()) if not isinstance(r, Reason)]
        why = f" ({', '.join(others)})" if others else ""
        reasons.append(Reason(ReasonKind.DETECTOR, "injection_flagged",
                              f"user text score {float(detector.score):.3f}{why}: {action}"))
        reasons.extend(signals)
        verdict = _at_least(verdict, floor)

    return PolicyDecision(
        verdict=verdict,
        model_verdict=model_verdict,
        confidence=top,
        probabilities=row.probabilities(),
        risk_score=float(row.risk),
        reasons=tuple(reasons),
        detector_score=None if detector is None else float(detector.score),
        detector_flagged=flagged,
        degraded=degraded,
        exit_layer=int(row.exit_layer),
    )


def decide_rows(rows: Sequence[ScoreRow], detector_results: Sequence[DetectorLike | None] | None,
                policy: Policy, degraded: bool | Sequence[bool] = False) -> list[PolicyDecision]:
    """``decide`` over a batch; ``degraded`` may be one flag or one per row."""
    n = len(rows)
    dets = list(detector_results) if detector_results is not None else [None] * n
    flags = [bool(degraded)] * n if isinstance(degraded, bool) else [bool(x) for x in degraded]
    if len(dets) != n or len(flags) != n:
        raise ValueError(f"batch length mismatch: {n} rows, {len(dets)} detector results, {len(flags)} degraded flags")
    return [decide(r, d, policy, f) for r, d, f in zip(rows, dets, flags)]
