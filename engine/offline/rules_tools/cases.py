"""``tollgate rules test``: test cases that ops write in YAML, next to their rules.

Cases live in ``<rules dir>/tests/*.yaml``::

    cases:
      - name: a blocklisted device is rejected even when the model says pass
        event: {amount: 40, device_id: dev-deadbeef}     # unset fields get defaults
        context: {velocity_1h_count: 1}                   # unset features: neutral values
        model: {p_pass: 0.9, p_review: 0.07, p_reject: 0.03, risk: 0.02}
        detector: {score: 0.1, flagged: false}
        expect:
          verdict: reject
          rules: [blocked-device]                         # exactly the enforced rules that fired
          shadow: []                                      # optional: exactly these shadow hits
          reasons: [threshold_pass]                       # optional: these reason codes are present

The proposal the rules start from is made as in the worker: with the model's
probabilities (``p_pass``, ``p_review``, ``p_reject``, all three) the policy decides —
``engine.stages.decide.decide`` with this set's ``policy.yaml`` over the settings' policy,
the detector result and ``model.degraded`` included — so a threshold change in
``policy.yaml`` changes the outcome of a case as it changes live verdicts.
``proposed: pass|review|reject`` overrides the policy (the model's outputs then only
feed ``model.*``); without probabilities and without ``proposed:`` the proposal is
``pass``.

A case passes when the verdict matches, the fired rules match as a set (``deciding:``
optionally pins the first one), no rule failed to evaluate, ``shadow`` (when given)
matches and every code in ``reasons`` (when given) is among the verdict's reasons —
``threshold_reject``, ``abstain``, ``tie_margin``, ``injection_flagged``, a rule id….
Context values not given are the neutral values of an event with no history
(``engine.features.snapshot.EMPTY_VALUES``), with ``context_available: 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.records import Decision, TransactionEvent
from engine.rules.loader import TESTS_DIR, RuleProblem, RuleSetError
from engine.rules.rule_metrics import RuleMetrics
from engine.rules.ruleset import RuleSet
from engine.rules.yamlsafe import YamlFileError, read_yaml
from engine.stages.decide import ScoreRow, decide
from engine.stages.detect import DetectorResult
from engine.stages.guard import Guard, ProposedVerdict

DEFAULT_EVENT: dict[str, Any] = {
    "event_id": "case-event", "event_time_ms": 1_767_268_800_000,  # 2026-01-01 12:00 UTC
    "customer_id": "C100001", "account_id": "A100001", "terminal_id": "T002001",
    "merchant_category": "5411", "amount": 42.0, "currency": "EUR", "channel": "card_present",
    "country": "BE", "device_id": "0a1b2c3d4e5f", "ip": "192.0.2.10", "attributes": {},
}


MODEL_KEYS = frozenset({"p_pass", "p_review", "p_reject", "risk", "risk_score", "confidence", "verdict",
                        "model_verdict", "degraded", "probabilities"})
PROB_KEYS = ("p_pass", "p_review", "p_reject")
#: What the policy computes from the probabilities; a case cannot also set them.
POLICY_OUTPUTS = ("verdict", "model_verdict", "confidence")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expectation(_Strict):
    verdict: Literal["pass", "review", "reject"]
    rules: list[str] = Field(default_factory=list)
    deciding: str | None = None
    shadow: list[str] | None = None
    reasons: list[str] | None = None


class CaseSpec(_Strict):
    name: str = Field(min_length=1)
    event: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, float] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    detector: dict[str, Any] = Field(default_factory=dict)
    #: an explicit proposal, instead of the policy's decision on ``model``'s probabilities
    proposed: Literal["pass", "review", "reject"] | None = None
    expect: Expectation


class CaseFile(_Strict):
    cases: list[CaseSpec]


@dataclass(slots=True, frozen=True)
class CaseResult:
    name: str
    where: str
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        return not self.failures


def neutral_context() -> dict[str, float]:
    try:  # local: guarded by ImportError, so rule cases run without the feature package
        from engine.features.snapshot import EMPTY_VALUES
        from engine.features.spec import CONTEXT_FEATURES
    except ImportError:
        return {"context_available": 1.0, "history_length": 0.0}
    out = dict(zip(CONTEXT_FEATURES, EMPTY_VALUES))
    out.update(context_available=1.0, history_length=0.0)
    return out


def load_cases(directory: str | Path) -> list[tuple[str, int | None, CaseSpec]]:
    """(file, line, case) for every case in ``directory/tests``; ``RuleSetError`` if malformed."""
    root = Path(directory) / TESTS_DIR
    out: list[tuple[str, int | None, CaseSpec]] = []
    problems: list[RuleProblem] = []
    for path in sorted([*root.glob("*.yaml"), *root.glob("*.yml")]):
        rel = f"{TESTS_DIR}/{path.name}"
        try:
            doc = read_yaml(path.read_bytes(), rel)
            parsed = CaseFile.model_validate(doc.data or {})
        except YamlFileError as exc:
            problems.append(RuleProblem(rel, exc.line, None, exc.reason))
            continue
        except ValidationError as exc:
            for err in exc.errors():
                loc = tuple(err["loc"])
                problems.append(RuleProblem(rel, doc.line_of(loc), None,
                                            f"{'.'.join(map(str, loc))}: {err['msg']}"))
            continue
        for i, case in enumerate(parsed.cases):
            out.append((rel, doc.line_of(("cases", i)), case))
    if problems:
        raise RuleSetError(problems)
    return out


def run_case(ruleset: RuleSet, case: CaseSpec, where: str = "", policy: Any = None) -> CaseResult:
    """Run one case. ``policy``: the decide stage's policy (default: the set's, as the
    worker builds it — ``RuleSet.decision_policy``)."""
    failures: list[str] = []
    try:
        event = TransactionEvent.from_dict({**DEFAULT_EVENT, **case.event}).validate()
    except (ValueError, TypeError) as exc:
        return CaseResult(case.name, where, (f"bad event: {exc}",))
    context = neutral_context()
    unknown = sorted(set(case.context) - set(context)) if ruleset.ctx_names else []
    if unknown:
        failures.append(f"unknown context feature(s): {', '.join(unknown)}")
    context.update(case.context)
    bad_model = sorted(set(case.model) - MODEL_KEYS)
    if bad_model:
        failures.append(f"unknown model field(s): {', '.join(bad_model)} (use {', '.join(sorted(MODEL_KEYS))})")
    if case.detector:
        bad = sorted(set(case.detector) - {"score", "flagged"})
        if bad:
            failures.append(f"unknown detector field(s): {', '.join(bad)} (use score, flagged)")
    try:
        view, proposal = _proposal(ruleset, case, policy)
    except ValueError as exc:
        return CaseResult(case.name, where, (*failures, str(exc)))
    guard = Guard(ruleset, metrics=RuleMetrics(CollectorRegistry()))
    result = guard.apply(event, context, view, proposal)
    expect = case.expect
    if result.verdict.value != expect.verdict:
        failures.append(f"verdict {result.verdict.value}, expected {expect.verdict}")
    if set(result.fired) != set(expect.rules):
        failures.append(f"rules fired {sorted(result.fired)}, expected {sorted(expect.rules)}")
    if expect.deciding is not None and (result.fired[:1] or ("none",))[0] != expect.deciding:
        failures.append(f"deciding rule {result.fired[:1] or 'none'}, expected {expect.deciding}")
    if expect.shadow is not None and set(result.shadow) != set(expect.shadow):
        failures.append(f"shadow rules fired {sorted(result.shadow)}, expected {sorted(expect.shadow)}")
    if expect.reasons is not None:
        codes = [r.code for r in result.reasons]
        missing = [c for c in expect.reasons if c not in codes]
        if missing:
            failures.append(f"reason(s) {missing} not among the verdict's reasons {codes}")
    if result.errors:
        failures.append(f"rule(s) failed to evaluate: {', '.join(result.errors)}")
    return CaseResult(case.name, where, tuple(failures))


def _proposal(ruleset: RuleSet, case: CaseSpec, policy: Any) -> tuple[dict[str, Any], Any]:
    """(what rules read as model.*/detector.*, the proposal). With probabilities and no
    ``proposed:``, the policy decides as in the worker; ``ValueError`` says why a case's
    model outputs cannot be used."""
    model = dict(case.model)
    detection = None
    if case.detector:
        flagged = bool(case.detector.get("flagged", False))
        detection = DetectorResult(float(case.detector.get("score", 0.0)), flagged, threshold=float("nan"),
                                   field="case")
    probs = _probabilities(model)
    if case.proposed is not None or probs is None:
        view = model
        if detection is not None:
            view.update(detector_score=detection.score, detector_flagged=detection.flagged)
        return view, ProposedVerdict(Decision(case.proposed or "pass"))
    computed = [k for k in POLICY_OUTPUTS if k in model]
    if computed:
        raise ValueError(f"model.{', model.'.join(computed)}: the policy computes these from the probabilities; "
                         "remove them, or give `proposed:` to set the proposal yourself")
    risk = float(model.get("risk", model.get("risk_score", 0.0)) or 0.0)
    decision = decide(ScoreRow(probs, risk), detection,
                      ruleset.decision_policy() if policy is None else policy, bool(model.get("degraded", False)))
    return decision.model_view(), decision


def _probabilities(model: Mapping[str, Any]) -> tuple[float, float, float] | None:
    """The three probabilities, in p_pass/p_review/p_reject order, or None if none given."""
    nested = model.get("probabilities")
    source = {f"p_{k}": v for k, v in nested.items()} if isinstance(nested, Mapping) else model
    given = [k for k in PROB_KEYS if k in source]
    if not given:
        return None
    if len(given) < len(PROB_KEYS):
        missing = ", ".join(k for k in PROB_KEYS if k not in source)
        raise ValueError(f"model: give all of p_pass, p_review and p_reject (missing {missing}), "
                         "or `proposed:` instead")
    try:
        probs = tuple(float(source[k]) for k in PROB_KEYS)
    except (TypeError, ValueError):
        raise ValueError("model: p_pass, p_review and p_reject must be numbers") from None
    if any(not 0.0 <= p <= 1.0 for p in probs) or abs(sum(probs) - 1.0) > 0.01:
        raise ValueError(f"model: p_pass + p_review + p_reject must be probabilities summing to 1, "
                         f"got {' + '.join(f'{p:g}' for p in probs)}")
    return probs  # type: ignore[return-value]


def run_cases(ruleset: RuleSet, directory: str | Path, policy: Any = None) -> list[CaseResult]:
    policy = ruleset.decision_policy() if policy is None else policy
    return [run_case(ruleset, case, f"{file}:{line}", policy) for file, line, case in load_cases(directory)]


def summarize(results: list[CaseResult]) -> Mapping[str, int]:
    passed = sum(r.passed for r in results)
    return {"passed": passed, "failed": len(results) - passed, "total": len(results)}
