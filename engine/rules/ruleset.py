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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engine.records import SEVERITY, Decision
from engine.rules.columns import ColumnTable, NeedsRows
from engine.rules.expr import Condition, EvalError
from engine.rules.lists import NamedList
from engine.settings import get_settings
from engine.stages.decide import Policy

#: Below this many events a batch's rules run row by row: NumPy's fixed cost per
#: operation outweighs the closures on a few rows; columns break even at 16-32 events
#: (``python ops/bench/rules.py``, "apply_batch(N)" rows; docs/performance.md).
COLUMN_MIN_ROWS = 32

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
        """The decide stage's ``engine.stages.decide.Policy`` under this set, built as the worker
        builds it: ``base`` (default: the settings' policy) with this set's ``policy:``
        overrides applied. ``rules test`` and ``rules backtest`` decide with it."""
        if base is None:
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


    def evaluate_batch(self, envs: Sequence[Mapping[str, Any]],
                       min_column_rows: int | None = None) -> list[Evaluation]:
        """``evaluate`` for every env of a batch, with the same results: each rule whose
        condition has a column form (``engine.rules.columns``) runs once over the batch's
        columns; the others, and any whose columns are not of one type, run row by row.
        Batches under ``min_column_rows`` (default ``COLUMN_MIN_ROWS``) run row by row."""
        n = len(envs)
        if n < (COLUMN_MIN_ROWS if min_column_rows is None else min_column_rows):
            return [self.evaluate(env) for env in envs]
        table = ColumnTable(envs)
        fired: list[list[CompiledRule]] = [[] for _ in range(n)]
        shadow: list[list[CompiledRule]] = [[] for _ in range(n)]
        errors: list[list[tuple[CompiledRule, str]]] = [[] for _ in range(n)]
        for rules, sinks in ((self.enforce, fired), (self.shadow, shadow)):
            for rule in rules:
                mask = None
                if rule.condition.columns is not None:
                    try:
                        mask = rule.condition.columns(table)
                    except NeedsRows:
                        mask = None
                if mask is not None:
                    for i in np.flatnonzero(mask).tolist():
                        sinks[i].append(rule)
                    continue
                for i, env in enumerate(envs):
                    try:
                        if rule.condition.evaluate(env):
                            sinks[i].append(rule)
                    except EvalError as exc:
                        errors[i].append((rule, str(exc)))
        out = []
        for f, s, e in zip(fired, shadow, errors):
            if not (f or s or e):
                out.append(_NOTHING)
                continue
            if len(f) > 1:
                f.sort(key=_deciding_order)
            out.append(Evaluation(tuple(f), tuple(s), tuple(e)))
        return out


_NOTHING = Evaluation((), (), ())


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
