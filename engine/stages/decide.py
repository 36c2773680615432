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

Two forms, the same decisions: ``decide`` takes one event's ``ScoreRow`` (the
reference, and what the offline tools call); ``decide_columns`` takes a batch's
``ScoreColumns`` and also gives the decisions' model views as columns for the rules
(``PolicyViews``): what the pipeline runs (``tests/unit/test_decide_columns.py`` holds
the two equal, reason for reason).

>>> p = Policy()
>>> decide(ScoreRow((0.92, 0.05, 0.03), risk=0.02), None, p).verdict
<Decision.PASS: 'pass'>
>>> d = decide(ScoreRow((0.46, 0.08, 0.46), risk=0.5), None, p)
>>> d.verdict, [r.code for r in d.reasons]
(<Decision.REVIEW: 'review'>, ['threshold_review', 'abstain', 'tie_margin'])
"""  # noqa: E501 (a doctest line is the exception message as printed)

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol

import numpy as np

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


@dataclass(slots=True, frozen=True)
class ScoreColumns:
    """A batch's model outputs as columns: what the policy reads, row i = event i.

    ``probs`` is ``[n, 3]`` in ``DECISIONS`` order, ``risk`` and ``exit_layer`` ``[n]``.
    Built with ``of``, which holds them as float64 (the float32 outputs widened exactly,
    as ``float()`` does for a ``ScoreRow``), so a column's arithmetic gives what the
    row's Python floats give.
    """

    probs: np.ndarray
    risk: np.ndarray
    exit_layer: np.ndarray

    @classmethod
    def of(cls, probs: Any, risk: Any, exit_layer: Any) -> ScoreColumns:
        p = np.ascontiguousarray(probs, dtype=np.float64).reshape(-1, len(DECISIONS))
        r = np.ascontiguousarray(risk, dtype=np.float64).reshape(-1)
        e = np.ascontiguousarray(exit_layer, dtype=np.int64).reshape(-1)
        if not len(p) == len(r) == len(e):
            raise ValueError(f"score columns differ in length: {len(p)} probability rows, {len(r)} risks, "
                             f"{len(e)} exit layers")
        return cls(p, r, e)

    @classmethod
    def from_rows(cls, rows: Sequence[ScoreRow]) -> ScoreColumns:
        return cls.of(np.array([r.probs for r in rows], dtype=np.float64).reshape(-1, len(DECISIONS)),
                      [r.risk for r in rows], [r.exit_layer for r in rows])

    def __len__(self) -> int:
        return int(self.probs.shape[0])

    def take(self, index: Sequence[int] | np.ndarray | slice) -> ScoreColumns:
        """The rows ``index`` names (or a slice of them), as columns."""
        if not isinstance(index, slice):
            index = np.asarray(index, dtype=np.intp)
        return ScoreColumns(self.probs[index], self.risk[index], self.exit_layer[index])

    def rows(self) -> list[ScoreRow]:
        return score_rows(self.probs.tolist(), self.risk.tolist(), self.exit_layer.tolist())


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
    mass = p_review + p_reject
    if p_reject >= policy.reject_threshold:
        model_verdict = Decision.REJECT
    elif mass >= policy.review_threshold:
        model_verdict = Decision.REVIEW
    else:
        model_verdict = Decision.PASS
    reasons.append(_threshold_reason(SEVERITY[model_verdict], probs, mass, policy))
    verdict = model_verdict

    ranked = sorted(probs, reverse=True)
    top, second = ranked[0], ranked[1]
    # 2. abstain
    if top < policy.abstain_threshold:
        reasons.append(_abstain_reason(top, policy))
        verdict = Decision.REVIEW
    # 3. tie margin
    if top - second < policy.tie_margin:
        reasons.append(_tie_reason(top, second, policy))
        verdict = Decision.REVIEW

    # 4. degraded mode (before the detector so that a reject floor still holds)
    if degraded:
        reasons.append(_degraded_reason(policy))
        if policy.degraded_mode == "review":
            verdict = Decision.REVIEW

    # 5. detector floor
    flagged = bool(detector is not None and detector.flagged)
    if detector is not None:
        reasons.extend(_detector_reasons(detector, flagged, policy))
        if flagged:
            verdict = _at_least(verdict, policy.detector_floor)

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


def _threshold_reason(code: int, probs: Sequence[float], mass: float, policy: Policy) -> Reason:
    """Step 1's reason: which threshold the model's probabilities met (``code``: the
    verdict's index in ``DECISIONS``); ``mass`` is p(review) + p(reject)."""
    if code == 2:
        detail = f"p(reject)={probs[2]:.3f} >= {policy.reject_threshold:g}"
    else:
        relation = ">=" if code == 1 else "<"
        detail = f"p(review)+p(reject)={mass:.3f} {relation} {policy.review_threshold:g}"
    return Reason(ReasonKind.MODEL, _THRESHOLD_CODES[code], f"{detail} ({_fmt(probs)})")


def _abstain_reason(top: float, policy: Policy) -> Reason:
    return Reason(ReasonKind.POLICY, "abstain",
                  f"top probability {top:.3f} < abstain threshold {policy.abstain_threshold:g}")


def _tie_reason(top: float, second: float, policy: Policy) -> Reason:
    return Reason(ReasonKind.POLICY, "tie_margin",
                  f"top two probabilities {top:.3f} and {second:.3f} within {policy.tie_margin:g}")


def _degraded_reason(policy: Policy) -> Reason:
    return Reason(ReasonKind.POLICY, "context_unavailable",
                  "feature store unreachable: held for review, rules still applied"
                  if policy.degraded_mode == "review" else
                  "feature store unreachable: model decided on an empty context")


def _detector_reasons(detector: DetectorLike, flagged: bool, policy: Policy) -> list[Reason]:
    """What the policy writes about a screened text: its score, and when it is flagged,
    the floor it sets and the detector's signals."""
    if not flagged:
        threshold = getattr(detector, "threshold", None)
        below = f" < threshold {float(threshold):.3f}" if threshold is not None else ""
        return [Reason(ReasonKind.DETECTOR, "injection_screened",
                       f"user text score {float(detector.score):.3f}{below}: not flagged")]
    action = f"verdict at least {policy.detector_floor.value}"
    signals = [r for r in (detector.reasons or ()) if isinstance(r, Reason) and r.kind is ReasonKind.DETECTOR]
    others = [str(r) for r in (detector.reasons or ()) if not isinstance(r, Reason)]
    why = f" ({', '.join(others)})" if others else ""
    return [Reason(ReasonKind.DETECTOR, "injection_flagged",
                   f"user text score {float(detector.score):.3f}{why}: {action}"), *signals]


#: ``PolicyDecision.model_view``'s keys, in its order: the columns ``PolicyViews`` holds.
MODEL_VIEW_KEYS: tuple[str, ...] = ("verdict", "model_verdict", "confidence", "p_pass", "p_review", "p_reject",
                                    "risk", "detector_score", "detector_flagged", "degraded")
_THRESHOLD_CODES = tuple(f"threshold_{name}" for name in _DECISION_VALUES)


class PolicyViews(Sequence[Mapping[str, Any]]):
    """A batch's ``[d.model_view() for d in decisions]``, held as columns.

    ``column(key)`` is one key over the batch, without a dict per row: what a rule in
    column form reads (``engine.stages.guard.BatchInputs``). ``views[i]`` builds row i's
    view, equal to its decision's ``model_view()`` (``tests/unit/test_decide_columns.py``).
    """

    __slots__ = ("_columns", "_n")

    def __init__(self, columns: Mapping[str, list[Any]]):
        if set(columns) != set(MODEL_VIEW_KEYS):
            raise ValueError(f"policy view columns must be {MODEL_VIEW_KEYS}, got {tuple(columns)}")
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"policy view columns differ in length: {sorted(lengths)}")
        self._columns = {key: columns[key] for key in MODEL_VIEW_KEYS}
        self._n = lengths.pop() if lengths else 0

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: int) -> dict[str, Any]:  # type: ignore[override]  # no slices
        if not -self._n <= i < self._n:
            raise IndexError(i)
        return {key: values[i] for key, values in self._columns.items()}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(self._n))

    def column(self, key: str) -> list[Any]:
        """``[view[key] for view in self]`` (``KeyError`` for a key a view lacks)."""
        return self._columns[key]


@dataclass(slots=True, frozen=True)
class PolicyBatch:
    """The policy over a batch (``decide_columns``): one decision per row, and the same
    decisions' model views as columns for the rules."""

    decisions: list[PolicyDecision]
    views: PolicyViews


#: Below this many rows ``decide_columns`` ranks in Python: NumPy's fixed cost per call
#: is more than the rows save. ``python ops/bench/policy.py`` measures where NumPy
#: overtakes (figures: docs/performance.md, "The policy and the rules' inputs as columns").
COLUMN_MIN_ROWS = 32


def decide_columns(scores: ScoreColumns, detector_results: Sequence[DetectorLike | None], policy: Policy,
                   degraded: bool = False, *, min_column_rows: int = COLUMN_MIN_ROWS) -> PolicyBatch:
    """``decide`` over a batch, row for row the same decisions (the tests hold them equal).

    From ``min_column_rows`` rows on, thresholds, the ranking of the probabilities,
    abstain and the tie margin are computed over the columns at once; the per-row work
    left is the reasons' text and the detector's floor on the rows that carry user text.
    ``python ops/bench/stage_ab.py`` (phase "finish") measures it against the row-by-row
    policy.
    """
    n = len(scores)
    if len(detector_results) != n:
        raise ValueError(f"batch length mismatch: {n} score rows, {len(detector_results)} detector results")
    probs = scores.probs.tolist()
    if n >= min_column_rows:
        model_codes, codes, unsure_rows, tops, seconds, masses = _rank_columns(scores.probs, policy)
    else:
        model_codes, codes, unsure_rows, tops, seconds, masses = _rank_rows(probs, policy)
    if degraded and policy.degraded_mode == "review":
        codes = [1] * n
    risks, exits = scores.risk.tolist(), scores.exit_layer.tolist()
    degraded_reason = _degraded_reason(policy) if degraded else None
    floor = SEVERITY[policy.detector_floor]
    decisions: list[PolicyDecision] = []
    final_codes: list[int] = []
    scores_seen: list[float] = []
    flags: list[bool] = []
    for i in range(n):
        row = probs[i]
        m = model_codes[i]
        reasons = [_threshold_reason(m, row, masses[i], policy)]
        if unsure_rows[i]:
            t = tops[i]
            if t < policy.abstain_threshold:
                reasons.append(_abstain_reason(t, policy))
            if t - seconds[i] < policy.tie_margin:
                reasons.append(_tie_reason(t, seconds[i], policy))
        if degraded_reason is not None:
            reasons.append(degraded_reason)
        c = codes[i]
        detector = detector_results[i]
        flagged = False
        if detector is not None:
            flagged = bool(detector.flagged)
            reasons.extend(_detector_reasons(detector, flagged, policy))
            if flagged and c < floor:
                c = floor
        decisions.append(PolicyDecision(
            verdict=DECISIONS[c], model_verdict=DECISIONS[m], confidence=tops[i],
            probabilities=dict(zip(_DECISION_VALUES, row)), risk_score=risks[i], reasons=tuple(reasons),
            detector_score=None if detector is None else float(detector.score), detector_flagged=flagged,
            degraded=degraded, exit_layer=exits[i]))
        final_codes.append(c)
        scores_seen.append(0.0 if detector is None else float(detector.score or 0.0))
        flags.append(flagged)
    views = PolicyViews({
        "verdict": [_DECISION_VALUES[c] for c in final_codes],
        "model_verdict": [_DECISION_VALUES[m] for m in model_codes],
        "confidence": tops,
        "p_pass": [row[0] for row in probs], "p_review": [row[1] for row in probs],
        "p_reject": [row[2] for row in probs],
        "risk": risks,
        "detector_score": scores_seen,
        "detector_flagged": flags,
        "degraded": [degraded] * n,
    })
    return PolicyBatch(decisions, views)


_Ranked = tuple[list[int], list[int], list[bool], list[float], list[float], list[float]]


def _rank_columns(p: np.ndarray, policy: Policy) -> _Ranked:
    """Per row: the thresholds' verdict code, the code after abstain and tie, whether
    either fired, the top and second probability, and p(review) + p(reject)."""
    not_pass = p[:, 1] + p[:, 2]
    model_code = np.where(p[:, 2] >= policy.reject_threshold, 2, np.where(not_pass >= policy.review_threshold, 1, 0))
    ranked = np.sort(p, axis=1)
    top, second = ranked[:, 2], ranked[:, 1]
    unsure = (top < policy.abstain_threshold) | ((top - second) < policy.tie_margin)
    code = np.where(unsure, 1, model_code)
    return (model_code.tolist(), code.tolist(), unsure.tolist(), top.tolist(), second.tolist(),
            not_pass.tolist())


def _rank_rows(probs: list[list[float]], policy: Policy) -> _Ranked:
    """``_rank_columns`` on Python floats, row by row, for small batches."""
    out: _Ranked = ([], [], [], [], [], [])
    model_codes, codes, unsure_rows, tops, seconds, masses = out
    for p_pass, p_review, p_reject in probs:
        mass = p_review + p_reject
        m = 2 if p_reject >= policy.reject_threshold else 1 if mass >= policy.review_threshold else 0
        ranked = sorted((p_pass, p_review, p_reject), reverse=True)
        top, second = ranked[0], ranked[1]
        unsure = top < policy.abstain_threshold or top - second < policy.tie_margin
        model_codes.append(m)
        codes.append(1 if unsure else m)
        unsure_rows.append(unsure)
        tops.append(top)
        seconds.append(second)
        masses.append(mass)
    return out
