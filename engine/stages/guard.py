"""The guard stage: YAML hard rules, applied after the policy. Rules always win.

Order inside a batch: **model → policy → detector → hard rules**. The guard gets the
policy's proposal and returns the final verdict with its explanation:

* the proposal's reasons, kept first (the pipeline relies on that);
* one ``ReasonKind.RULE`` reason per enforced rule that fired, the deciding rule first;
* one ``ReasonKind.SHADOW_RULE`` reason per shadow rule that would have fired.

What a rule can read (the CEL activation) is built here, and only from trusted
inputs: ``event.*`` never contains ``memo`` or ``merchant_descriptor`` (end-user text
reaches rules only as ``detector.score``/``detector.flagged``). Arbitration itself is
in ``engine.rules.ruleset``; conditions in ``engine.rules.expr``.

>>> from engine.rules.loader import build_ruleset
>>> rs = build_ruleset({"r.yaml": b'''
... rules:
...   - {id: big, description: big amounts, owner: ops, when: "event.amount >= 10000", then: reject}
... '''})
>>> e = TransactionEvent(event_id="e1", event_time_ms=1_700_000_000_000, customer_id="c", account_id="a",
...     terminal_id="t", merchant_category="5411", amount=25_000.0, currency="EUR",
...     channel="ecommerce", country="BE")
>>> g = Guard(rs).apply(e, {}, {"probabilities": {"pass": .9, "review": .05, "reject": .05}},
...                     ProposedVerdict(Decision.PASS))
>>> g.verdict, [r.code for r in g.reasons]
(<Decision.REJECT: 'reject'>, ['big'])
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Protocol

from engine.records import WARMUP_PREFIX, Decision, Reason, ReasonKind, TransactionEvent
from engine.rules.lists import RedisClients
from engine.rules.loader import load_ruleset
from engine.rules.rule_metrics import RuleMetrics, default_metrics
from engine.rules.ruleset import Evaluation, RuleSet, arbitrate
from engine.rules.watch import RuleWatcher

log = logging.getLogger("tollgate.rules")
shadow_log = logging.getLogger("tollgate.rules.shadow")

#: Evaluating the default set takes a few tens of µs; an event over this is counted.
DEFAULT_BUDGET_MS = 2.0

_HOUR_MS = 3_600_000
_DAY_MS = 86_400_000


class Proposal(Protocol):
    """Anything with a verdict and reasons — ``engine.stages.decide.PolicyDecision`` fits."""

    verdict: Decision
    reasons: tuple[Reason, ...]


@dataclass(slots=True, frozen=True)
class ProposedVerdict:
    """A minimal proposal, for callers (tests, backtests) without a policy decision."""

    verdict: Decision
    reasons: tuple[Reason, ...] = ()


@dataclass(slots=True, frozen=True)
class GuardedDecision:
    verdict: Decision
    reasons: tuple[Reason, ...]
    rules_version: str
    proposed: Decision
    fired: tuple[str, ...] = ()  # enforced rule ids, deciding rule first
    shadow: tuple[str, ...] = ()  # shadow rule ids that would have fired
    errors: tuple[str, ...] = ()  # rule ids whose condition failed to evaluate

    @property
    def overridden(self) -> bool:
        return self.verdict is not self.proposed


class RuleSource(Protocol):
    def current(self) -> RuleSet: ...


class Guard:
    """Applies a rule set, fixed or followed through a ``RuleWatcher``.

    ``Guard(ruleset)`` pins one version; ``Guard(watcher)`` reads ``watcher.current()``
    once per ``apply_batch`` so each batch is decided by exactly one version.
    """

    def __init__(self, rules: RuleSet | RuleSource, *, metrics: RuleMetrics | None = None,
                 budget_ms: float = DEFAULT_BUDGET_MS):
        self._source: RuleSource | None = None if isinstance(rules, RuleSet) else rules
        self._fixed: RuleSet | None = rules if isinstance(rules, RuleSet) else None
        self.metrics = metrics or default_metrics()
        self.budget_s = budget_ms / 1000.0
        self._error_logged: dict[str, float] = {}

    @classmethod
    def from_dir(cls, directory: str | os.PathLike[str], **kwargs: Any) -> Guard:
        """A guard pinned to the set in ``directory`` (raises ``RuleSetError`` if bad)."""
        metrics = kwargs.pop("metrics", None)
        return cls(load_ruleset(directory, redis_clients=kwargs.pop("redis_clients", RedisClients()), **kwargs),
                   metrics=metrics)

    @property
    def ruleset(self) -> RuleSet:
        return self._fixed if self._fixed is not None else self._source.current()  # type: ignore[union-attr]

    @property
    def version(self) -> str:
        return self.ruleset.version

    @property
    def policy(self) -> Mapping[str, Any]:
        """The rule set's policy overrides (thresholds, tie margin, abstain level,
        detector floor, degraded mode); ``engine.stages.decide.Policy.coerce`` takes it."""
        return dict(self.ruleset.policy)

    def apply(self, event: TransactionEvent, context: Mapping[str, float], model_view: Mapping[str, Any],
              proposed: Proposal) -> GuardedDecision:
        return self._apply(self.ruleset, event, context, model_view, proposed)

    def apply_batch(self, events: Sequence[TransactionEvent], contexts: Sequence[Mapping[str, float]],
                    model_views: Sequence[Mapping[str, Any]], proposed: Sequence[Proposal]) -> list[GuardedDecision]:
        ruleset = self.ruleset  # one version for the whole batch
        envs = BatchInputs(events, contexts, model_views, proposed)
        started = time.perf_counter()
        # Every rule over the batch's columns at once where it can (engine.rules.columns);
        # the same results as ruleset.evaluate row by row, in a fraction of the CPU
        # (python ops/bench/engine_profile.py, stage "guard").
        results = ruleset.evaluate_batch(envs)
        if envs and (time.perf_counter() - started) / len(envs) > self.budget_s:
            self.metrics.over_budget.inc(len(envs))  # the batch's mean per event was over
        return [self._conclude(ruleset, e, p, r) for e, p, r in zip(events, proposed, results)]

    def _apply(self, ruleset: RuleSet, event: TransactionEvent, context: Mapping[str, float],
               model_view: Mapping[str, Any], proposed: Proposal) -> GuardedDecision:
        env = _env(event, context, model_view, proposed)
        started = time.perf_counter()
        result = ruleset.evaluate(env)
        if time.perf_counter() - started > self.budget_s:
            self.metrics.over_budget.inc()
        return self._conclude(ruleset, event, proposed, result)

    def _conclude(self, ruleset: RuleSet, event: TransactionEvent, proposed: Proposal,
                  result: Evaluation) -> GuardedDecision:
        if not (result.fired or result.shadow or result.errors):  # most events: nothing to add or record
            return GuardedDecision(verdict=proposed.verdict, reasons=tuple(proposed.reasons),
                                   rules_version=ruleset.version, proposed=proposed.verdict)
        verdict = arbitrate(proposed.verdict, (r.action for r in result.fired)) if result.fired else proposed.verdict
        self._record(event, result)
        return GuardedDecision(
            verdict=verdict, reasons=tuple(proposed.reasons) + rule_reasons(result),
            rules_version=ruleset.version, proposed=proposed.verdict,
            fired=tuple(r.id for r in result.fired), shadow=tuple(r.id for r in result.shadow),
            errors=tuple(r.id for r, _ in result.errors),
        )

    def _record(self, event: TransactionEvent, result: Evaluation) -> None:
        if event.event_id.startswith(WARMUP_PREFIX):
            return  # warmup decides synthetic events at every start: hit counts and shadow logs are for real traffic
        for rule in result.fired:
            self.metrics.hit(rule.id, "enforce")
        for rule in result.shadow:
            self.metrics.hit(rule.id, "shadow")
            shadow_log.info("shadow rule %s would %s event %s", rule.id, rule.action, event.event_id)
        for rule, message in result.errors:
            self.metrics.eval_errors.labels(rule.id).inc()
            now = time.monotonic()
            if now - self._error_logged.get(rule.id, -1e9) > 60.0:  # at most once a minute per rule
                self._error_logged[rule.id] = now
                log.warning("rule %s (%s) failed to evaluate on event %s: %s", rule.id, rule.where,
                            event.event_id, message)


def _env(event: TransactionEvent, context: Mapping[str, float], model_view: Mapping[str, Any],
         proposed: Proposal) -> dict[str, Any]:
    """What a rule reads about one event (``event.*``, ``ctx.*``, ``model.*``, ``detector.*``)."""
    model, detector = model_inputs(model_view, proposed.verdict)
    return {"event": event_inputs(event), "ctx": context, "model": model, "detector": detector}


class BatchInputs(Sequence[Mapping[str, Any]]):
    """A batch's rule inputs, built only as far as the rules read them: ``values_of(root,
    field)`` gives one variable over the batch (what a rule in column form reads,
    ``engine.rules.columns``) without building any event's whole activation; indexing
    gives one event's activation (``_env``, for the rules evaluated row by row), built
    on first use. Both give the same values (tests/unit/test_rules_columns.py).

    Building every activation was the largest part of the rules' cost on the worker's
    main thread (py-spy on ``python ops/bench/engine.py --rates``; docs/performance.md,
    "The worker's own CPU at saturation")."""

    __slots__ = ("_contexts", "_envs", "_events", "_models", "_proposed", "_views")

    def __init__(self, events: Sequence[TransactionEvent], contexts: Sequence[Mapping[str, float]],
                 model_views: Sequence[Mapping[str, Any]], proposed: Sequence[Proposal]):
        if not len(events) == len(contexts) == len(model_views) == len(proposed):
            raise ValueError("events, contexts, model views and proposals differ in length")
        self._events, self._contexts, self._views, self._proposed = events, contexts, model_views, proposed
        self._envs: list[dict[str, Any] | None] = [None] * len(events)
        self._models: list[tuple[dict[str, Any], dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return len(self._events)

    def __getitem__(self, i: int) -> dict[str, Any]:  # type: ignore[override]  # no slices
        env = self._envs[i]
        if env is None:
            env = self._envs[i] = _env(self._events[i], self._contexts[i], self._views[i], self._proposed[i])
        return env

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(len(self._events)))

    def values_of(self, root: str, field: str) -> list[Any]:
        """``[env[root][field] for env in self]``, without building the envs; a missing
        name raises ``KeyError`` as that would."""
        if root == "event":
            from_event = _EVENT_FIELDS.get(field)
            if from_event is None:
                raise KeyError(field)
            return [from_event(e) for e in self._events]
        if root == "ctx":
            ctx_column = getattr(self._contexts, "column", None)  # engine.features.snapshot.RuleContexts
            return ctx_column(field) if ctx_column is not None else [c[field] for c in self._contexts]
        view_column = getattr(self._views, "column", None)  # engine.stages.decide.PolicyViews
        if view_column is not None and root in _VIEW_KEYS:
            key = _VIEW_KEYS[root].get(field)
            if key is None:
                raise KeyError(field)
            return list(view_column(key))
        from_view = (_MODEL_FIELDS if root == "model" else _DETECTOR_FIELDS if root == "detector" else {}).get(field)
        if from_view is not None:  # the policy's own view: no per-event dicts
            return [from_view(v) for v in self._views]
        if root in ("model", "detector"):
            if self._models is None:
                self._models = [model_inputs(v, p.verdict) for v, p in zip(self._views, self._proposed)]
            at = 0 if root == "model" else 1
            return [m[at][field] for m in self._models]
        raise KeyError(root)


def rule_reasons(result: Evaluation) -> tuple[Reason, ...]:
    if not result.fired and not result.shadow:
        return ()  # most events: no rule fired
    out = [Reason(ReasonKind.RULE, r.id, f"{r.action}: {r.description}") for r in result.fired]
    out += [Reason(ReasonKind.SHADOW_RULE, r.id, f"shadow, would {r.action}: {r.description}")
            for r in result.shadow]
    return tuple(out)


#: The trusted fields of an event as rules see them (``event.*``), one getter per field:
#: ``event_inputs`` builds one event's mapping from them, ``BatchInputs.values_of`` one
#: field over a batch. No user text.
_EVENT_FIELDS: dict[str, Callable[[TransactionEvent], Any]] = {
    "event_id": attrgetter("event_id"),
    "event_time_ms": lambda e: int(e.event_time_ms),
    **{name: attrgetter(name) for name in ("customer_id", "account_id", "terminal_id", "merchant_category")},
    "amount": lambda e: float(e.amount),
    **{name: attrgetter(name) for name in ("currency", "channel", "country")},
    "device_id": lambda e: e.device_id or "",
    "ip": lambda e: e.ip or "",
    "attributes": lambda e: dict(e.attributes),
    "hour": lambda e: (int(e.event_time_ms) // _HOUR_MS) % 24,  # UTC
    "weekday": lambda e: (int(e.event_time_ms) // _DAY_MS + 3) % 7,  # UTC; 0 = Monday
}


def event_inputs(event: TransactionEvent) -> dict[str, Any]:
    """The trusted fields of an event, as rules see them (``event.*``). No user text."""
    return {name: get(event) for name, get in _EVENT_FIELDS.items()}


#: ``model_inputs`` one field at a time, for the fields whose value does not depend on
#: the view's shape or the proposal (``model_inputs`` uses them too; the others it
#: derives from the probabilities and the proposal).
_MODEL_FIELDS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "risk": lambda v: float(v.get("risk", v.get("risk_score", 0.0)) or 0.0),
    "degraded": lambda v: bool(v.get("degraded", False)),
}
_DETECTOR_FIELDS: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "score": lambda v: float(v.get("detector_score") or 0.0),
    "flagged": lambda v: bool(v.get("detector_flagged", False)),
}

#: ``model.*`` and ``detector.*`` by the ``PolicyDecision.model_view`` key each is read
#: from (what ``model_inputs`` gives for such a view), for views held as columns.
_VIEW_KEYS: dict[str, dict[str, str]] = {
    "model": {name: name for name in ("verdict", "model_verdict", "confidence", "risk", "degraded",
                                      "p_pass", "p_review", "p_reject")},
    "detector": {"score": "detector_score", "flagged": "detector_flagged"},
}

_VERDICTS = ("pass", "review", "reject")
_P_NAMES = tuple((k, f"p_{k}") for k in _VERDICTS)  # (verdict, its model.* name), built once


def model_inputs(view: Mapping[str, Any], proposed: Decision) -> tuple[dict[str, Any], dict[str, Any]]:
    """``model.*`` and ``detector.*`` from either ``PolicyDecision.model_view()`` (p_pass…,
    risk) or the plain shape (probabilities{pass,review,reject}, risk_score)."""
    probs = view.get("probabilities")
    if isinstance(probs, Mapping):
        p = {name: float(probs.get(k, 0.0)) for k, name in _P_NAMES}
    else:
        p = {name: float(view.get(name, 0.0)) for _, name in _P_NAMES}
    model = {
        "verdict": str(view.get("verdict", proposed.value)),
        "model_verdict": str(view.get("model_verdict", view.get("verdict", proposed.value))),
        "confidence": float(view.get("confidence", max(p.values()))),
        **{name: get(view) for name, get in _MODEL_FIELDS.items()}, **p,
    }
    detector = {name: get(view) for name, get in _DETECTOR_FIELDS.items()}
    return model, detector


def follow_rules(directory: str | os.PathLike[str], on_swap: Callable[[Guard, Mapping[str, Any]], None], *,
                 interval_s: float = 1.0, metrics: RuleMetrics | None = None, **kwargs: Any) -> RuleWatcher:
    """Start a ``RuleWatcher`` on ``directory`` and call ``on_swap(guard, policy)`` now and
    after every successful reload — e.g. ``lambda g, p: pipeline.swap(guard=g, policy=p)``.
    A change is loaded once it has held still for one poll (``settle_s``), so an edit
    is live within about two intervals. Returns the started watcher (``.stop()`` it)."""
    kwargs.setdefault("settle_s", interval_s)

    def swapped(ruleset: RuleSet) -> None:
        on_swap(Guard(ruleset, metrics=watcher.metrics), dict(ruleset.policy))

    watcher = RuleWatcher(directory, interval_s=interval_s, metrics=metrics, on_change=swapped, **kwargs)
    swapped(watcher.current())
    return watcher.start()
