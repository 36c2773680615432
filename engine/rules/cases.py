"""``tollgate rules test``: test cases that ops write in YAML, next to their rules.

Cases live in ``<rules dir>/tests/*.yaml``::

    cases:
      - name: a blocklisted device is rejected even when the model says pass
        event: {amount: 40, device_id: dev-deadbeef}     # unset fields get defaults
        context: {velocity_1h_count: 1}                   # unset features: neutral values
        model: {p_pass: 0.9, p_review: 0.07, p_reject: 0.03, risk: 0.02}
        detector: {score: 0.1, flagged: false}
        proposed: pass                                    # the policy's verdict (default pass)
        expect:
          verdict: reject
          rules: [blocked-device]                         # exactly the enforced rules that fired
          shadow: []                                      # optional: exactly these shadow hits

A case passes when the verdict matches, the fired rules match as a set (``deciding:``
optionally pins the first one), no rule failed to evaluate, and ``shadow`` (when
given) matches. Context values not given are the neutral values of an event with no
history (``engine.features.snapshot.EMPTY_VALUES``), with ``context_available: 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from prometheus_client import CollectorRegistry
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.records import Decision, TransactionEvent
from engine.rules.loader import RuleProblem, RuleSetError, TESTS_DIR
from engine.rules.metrics import RuleMetrics
from engine.rules.ruleset import RuleSet
from engine.rules.yamlsafe import YamlFileError, read_yaml

DEFAULT_EVENT: dict[str, Any] = {
    "event_id": "case-event", "event_time_ms": 1_767_268_800_000,  # 2026-01-01 12:00 UTC
    "customer_id": "C100001", "account_id": "A100001", "terminal_id": "T002001",
    "merchant_category": "5411", "amount": 42.0, "currency": "EUR", "channel": "card_present",
    "country": "BE", "device_id": "0a1b2c3d4e5f", "ip": "192.0.2.10", "attributes": {},
}


MODEL_KEYS = frozenset({"p_pass", "p_review", "p_reject", "risk", "risk_score", "confidence", "verdict",
                        "model_verdict", "degraded", "probabilities"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Expectation(_Strict):
    verdict: Literal["pass", "review", "reject"]
    rules: list[str] = Field(default_factory=list)
    deciding: str | None = None
    shadow: list[str] | None = None


class CaseSpec(_Strict):
    name: str = Field(min_length=1)
    event: dict[str, Any] = Field(default_factory=dict)
    context: dict[str, float] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    detector: dict[str, Any] = Field(default_factory=dict)
    proposed: Literal["pass", "review", "reject"] = "pass"
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
    try:
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


def run_case(ruleset: RuleSet, case: CaseSpec, where: str = "") -> CaseResult:
    from engine.guard import Guard, ProposedVerdict

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
    view: dict[str, Any] = dict(case.model)
    bad_model = sorted(set(view) - MODEL_KEYS)
    if bad_model:
        failures.append(f"unknown model field(s): {', '.join(bad_model)} (use {', '.join(sorted(MODEL_KEYS))})")
    if case.detector:
        bad = sorted(set(case.detector) - {"score", "flagged"})
        if bad:
            failures.append(f"unknown detector field(s): {', '.join(bad)} (use score, flagged)")
        view["detector_score"] = case.detector.get("score", 0.0)
        view["detector_flagged"] = case.detector.get("flagged", False)
    guard = Guard(ruleset, metrics=RuleMetrics(CollectorRegistry()))
    result = guard.apply(event, context, view, ProposedVerdict(Decision(case.proposed)))
    expect = case.expect
    if result.verdict.value != expect.verdict:
        failures.append(f"verdict {result.verdict.value}, expected {expect.verdict}")
    if set(result.fired) != set(expect.rules):
        failures.append(f"rules fired {sorted(result.fired)}, expected {sorted(expect.rules)}")
    if expect.deciding is not None and (result.fired[:1] or ("none",))[0] != expect.deciding:
        failures.append(f"deciding rule {result.fired[:1] or 'none'}, expected {expect.deciding}")
    if expect.shadow is not None and set(result.shadow) != set(expect.shadow):
        failures.append(f"shadow rules fired {sorted(result.shadow)}, expected {sorted(expect.shadow)}")
    if result.errors:
        failures.append(f"rule(s) failed to evaluate: {', '.join(result.errors)}")
    return CaseResult(case.name, where, tuple(failures))


def run_cases(ruleset: RuleSet, directory: str | Path) -> list[CaseResult]:
    return [run_case(ruleset, case, f"{file}:{line}") for file, line, case in load_cases(directory)]


def summarize(results: list[CaseResult]) -> Mapping[str, int]:
    passed = sum(r.passed for r in results)
    return {"passed": passed, "failed": len(results) - passed, "total": len(results)}
