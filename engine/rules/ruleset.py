"""A loaded, compiled, immutable rule set and the arbitration between its rules.

Arbitration (the issue's "most severe action wins"):

1. every **enabled enforce** rule is evaluated — no short-circuit, so the reasons
   name every rule that fired, not just the first;
2. any ``reject`` fired → **reject**;
3. otherwise the base is **pass** if an allowlist (``pass``) rule fired, else the
   policy's proposed verdict;
4. any ``review`` rule or ``never_pass`` constraint fired → at least **review**
   (a model reject stays a reject: ``review`` means "at least review");
5. among rules with the winning action, the highest ``priority`` (then the id) is the
   deciding rule and is listed first.

So reject > review > pass-allowlist > model. Shadow rules are evaluated after and
reported separately; they never touch the verdict. A rule whose condition fails to
evaluate (a missing feature, a type error) does not fire; the error is counted per
rule and logged, and ``rules test`` fails on it.

>>> from engine.records import Decision
>>> arbitrate(Decision.REJECT, ["pass"])
<Decision.PASS: 'pass'>
>>> arbitrate(Decision.REJECT, ["pass", "review"])
<Decision.REVIEW: 'review'>
>>> arbitrate(Decision.REJECT, ["review"])
<Decision.REJECT: 'reject'>
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.records import SEVERITY, Decision
from engine.rules.expr import Condition, EvalError
from engine.rules.lists import NamedList

#: How strongly each action pulls the verdict; used to order reasons (deciding first).
ACTION_RANK = {"reject": 3, "review": 2, "never_pass": 2, "pass": 1}


@dataclass(slots=True, frozen=True)
class CompiledRule:
    id: str
    description: str
    owner: str
    mode: str  # enforce | shadow
    priority: int
    action: str  # reject | review | pass | never_pass
    condition: Condition
    file: str
    line: int | None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file


@dataclass(slots=True, frozen=True)
class Evaluation:
    """What the rules said about one event."""

    fired: tuple[CompiledRule, ...]  # enforced, deciding rule first
    shadow: tuple[CompiledRule, ...]
    errors: tuple[tuple[CompiledRule, str], ...] = ()


@dataclass(slots=True, frozen=True)
class RuleSet:
    """Immutable once built: a reload builds a new one and swaps the reference."""

    version: str
    enforce: tuple[CompiledRule, ...]
    shadow: tuple[CompiledRule, ...]
    disabled: tuple[str, ...]
    lists: Mapping[str, NamedList]
    policy: Mapping[str, Any]
    files: tuple[str, ...]
    directory: str = ""
    ctx_names: frozenset[str] = field(default_factory=frozenset)

    @property
    def rules(self) -> tuple[CompiledRule, ...]:
        return self.enforce + self.shadow

    def decision_policy(self, base: Any = None) -> Any:
        """The decide stage's ``engine.decide.Policy`` under this set, built as the worker
        builds it: ``base`` (default: the settings' policy) with this set's ``policy:``
        overrides applied. ``rules test`` and ``rules backtest`` decide with it."""
        from engine.decide import Policy

        if base is None:
            from engine.settings import get_settings

            base = Policy.from_settings(get_settings().policy)
        return Policy.coerce(base).with_overrides(dict(self.policy))

    def evaluate(self, env: Mapping[str, Any]) -> Evaluation:
        fired: list[CompiledRule] = []
        shadow: list[CompiledRule] = []
        errors: list[tuple[CompiledRule, str]] = []
        for rules, sink in ((self.enforce, fired), (self.shadow, shadow)):
            for rule in rules:
                try:
                    if rule.condition.evaluate(env):
                        sink.append(rule)
                except EvalError as exc:
                    errors.append((rule, str(exc)))
        if len(fired) > 1:
            fired.sort(key=_deciding_order)
        return Evaluation(tuple(fired), tuple(shadow), tuple(errors))


def _deciding_order(rule: CompiledRule) -> tuple[int, int, str]:
    return (-ACTION_RANK[rule.action], -rule.priority, rule.id)


def arbitrate(proposed: Decision, actions: Iterable[str]) -> Decision:
    """The final verdict from the proposal and the actions of the enforced rules that fired."""
    fired = set(actions)
    if "reject" in fired:
        return Decision.REJECT
    verdict = Decision.PASS if "pass" in fired else proposed
    if ("review" in fired or "never_pass" in fired) and SEVERITY[verdict] < SEVERITY[Decision.REVIEW]:
        verdict = Decision.REVIEW
    return verdict
