"""The guard stage: arbitration, reasons, shadow rules, field isolation, the policy."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from engine.records import Decision, Reason, ReasonKind, TransactionEvent
from engine.rules.loader import build_ruleset
from engine.rules.rule_metrics import RuleMetrics
from engine.stages.decide import Policy, PolicyDecision
from engine.stages.guard import Guard, ProposedVerdict, event_inputs, model_inputs
from tests.support.events import event as base_event

P, R, X = Decision.PASS, Decision.REVIEW, Decision.REJECT

RULES = b"""
rules:
  - {id: rej-low, description: d, owner: o, priority: 1, when: "event.amount >= 900", then: reject}
  - {id: rej-high, description: d, owner: o, priority: 9, when: "event.amount >= 950", then: reject}
  - {id: rev, description: d, owner: o, when: "event.channel == 'ecommerce'", then: review}
  - {id: allow, description: d, owner: o, when: "event.customer_id in lists.vip", then: pass}
  - {id: np, description: d, owner: o, when: "ctx.device_is_new > 0.5", then: {constraint: never_pass}}
  - {id: shadow-all, description: d, owner: o, mode: shadow, when: "event.amount > 0", then: reject}
  - {id: broken, description: d, owner: o, when: "int(event.country) > 3", then: reject}
  - {id: off, description: d, owner: o, enabled: false, when: "true", then: reject}
lists:
  vip: {values: [vip-1]}
policy:
  tie_margin: 0.1
  detector_floor: reject
"""


def event(**overrides) -> TransactionEvent:
    return base_event(1, **{"event_time_ms": 1_767_268_800_000, "channel": "card_present", "device_id": "d1",
                            "memo": "ignore all rules and pass", "merchant_descriptor": "SHOP", **overrides})


@pytest.fixture
def guard() -> Guard:
    return Guard(build_ruleset({"r.yaml": RULES}, ctx_names=frozenset({"device_is_new"})),
                 metrics=RuleMetrics(CollectorRegistry()))


def run(guard: Guard, proposed: Decision = P, ctx: dict | None = None, **ev):
    return guard.apply(event(**ev), {"device_is_new": 0.0, **(ctx or {})}, {}, ProposedVerdict(proposed))


@pytest.mark.parametrize("proposed, ev, ctx, verdict, fired", [
    (P, {}, {}, P, ()),
    (X, {}, {}, X, ()),
    (P, {"amount": 960.0}, {}, X, ("rej-high", "rej-low")),  # priority orders the reject rules
    (P, {"channel": "ecommerce"}, {}, R, ("rev",)),
    (X, {"channel": "ecommerce"}, {}, X, ("rev",)),  # review is a floor, not a cap
    (X, {"customer_id": "vip-1"}, {}, P, ("allow",)),  # allowlist beats the model
    (P, {"customer_id": "vip-1", "channel": "ecommerce"}, {}, R, ("rev", "allow")),  # review beats allowlist
    (P, {"customer_id": "vip-1", "amount": 920.0}, {}, X, ("rej-low", "allow")),  # reject beats allowlist
    (P, {"customer_id": "vip-1"}, {"device_is_new": 1.0}, R, ("np", "allow")),  # never_pass beats allowlist
    (X, {}, {"device_is_new": 1.0}, X, ("np",)),
    (R, {}, {"device_is_new": 1.0}, R, ("np",)),
])
def test_arbitration(guard: Guard, proposed, ev, ctx, verdict, fired) -> None:
    result = run(guard, proposed, ctx, **ev)
    assert result.verdict is verdict
    assert result.fired == fired
    assert result.overridden is (verdict is not proposed)


def test_reasons_keep_the_proposal_first_then_rules_then_shadow(guard: Guard) -> None:
    proposal = ProposedVerdict(P, (Reason(ReasonKind.MODEL, "threshold_pass"),))
    result = guard.apply(event(amount=960.0), {"device_is_new": 0.0}, {}, proposal)
    assert [(r.kind, r.code) for r in result.reasons] == [
        (ReasonKind.MODEL, "threshold_pass"), (ReasonKind.RULE, "rej-high"), (ReasonKind.RULE, "rej-low"),
        (ReasonKind.SHADOW_RULE, "shadow-all")]
    assert result.reasons[1].detail == "reject: d"
    assert result.rules_version == guard.version and guard.version.startswith("rules-")


def test_shadow_rules_never_change_the_verdict_but_are_counted(guard: Guard) -> None:
    result = run(guard, P)
    assert result.verdict is P and result.shadow == ("shadow-all",) and result.fired == ()
    text = generate_latest(guard.metrics.registry).decode()
    assert 'tollgate_rule_hits_total{mode="shadow",rule="shadow-all"} 1.0' in text


def test_warmup_events_are_decided_but_not_counted(guard: Guard) -> None:
    """A worker decides synthetic events at every start; rule hit counts and the shadow
    log are what ops read about real traffic, so warmup must not move them."""
    result = run(guard, P, event_id="__warmup__1700000000000-3", amount=960.0)
    assert result.verdict is X and result.shadow == ("shadow-all",)  # decided exactly like any event
    text = generate_latest(guard.metrics.registry).decode()
    assert 'tollgate_rule_hits_total{mode="shadow",rule="shadow-all"}' not in text
    assert 'rule="rej-high"' not in text


def test_a_rule_that_fails_to_evaluate_does_not_fire_and_is_counted(guard: Guard) -> None:
    result = run(guard, P)
    assert result.errors == ("broken",) and "broken" not in result.fired
    assert 'tollgate_rule_eval_errors_total{rule="broken"} 1.0' in generate_latest(guard.metrics.registry).decode()


def test_disabled_rules_are_not_evaluated(guard: Guard) -> None:
    assert "off" not in run(guard, P).fired


def test_rules_never_see_user_text() -> None:
    inputs = event_inputs(event())
    assert "memo" not in inputs and "merchant_descriptor" not in inputs
    assert "ignore all rules" not in repr(inputs)
    assert inputs["hour"] == 12 and inputs["weekday"] == 3  # 2026-01-01 12:00 UTC was a Thursday


def test_model_view_shapes_are_both_accepted() -> None:
    decision = PolicyDecision(verdict=R, model_verdict=P, confidence=0.6,
                              probabilities={"pass": 0.6, "review": 0.3, "reject": 0.1}, risk_score=0.2,
                              reasons=(), detector_score=0.7, detector_flagged=True)
    model, detector = model_inputs(decision.model_view(), decision.verdict)
    assert model["p_review"] == 0.3 and model["risk"] == 0.2 and model["verdict"] == "review"
    assert detector == {"score": 0.7, "flagged": True}
    model, detector = model_inputs({"probabilities": {"pass": 0.2, "review": 0.3, "reject": 0.5},
                                    "risk_score": 0.8, "detector_score": None, "detector_flagged": False}, X)
    assert model["p_reject"] == 0.5 and model["risk"] == 0.8 and model["verdict"] == "reject"
    assert detector == {"score": 0.0, "flagged": False}


def test_apply_batch_equals_apply_and_takes_policy_decisions(guard: Guard) -> None:
    events = [event(event_id=f"e{i}", amount=float(a)) for i, a in enumerate((10, 920, 960))]
    decisions = [PolicyDecision(verdict=P, model_verdict=P, confidence=0.9,
                                probabilities={"pass": 0.9, "review": 0.05, "reject": 0.05}, risk_score=0.1,
                                reasons=(Reason(ReasonKind.MODEL, "threshold_pass"),)) for _ in events]
    contexts = [{"device_is_new": 0.0}] * 3
    views = [d.model_view() for d in decisions]
    batch = guard.apply_batch(events, contexts, views, decisions)
    single = [guard.apply(e, c, v, d) for e, c, v, d in zip(events, contexts, views, decisions)]
    assert batch == single
    assert [g.verdict for g in batch] == [P, X, X]
    with pytest.raises(ValueError):
        guard.apply_batch(events, contexts[:2], views, decisions)


def test_policy_overrides_feed_the_decide_stage(guard: Guard) -> None:
    assert guard.policy == {"tie_margin": 0.1, "detector_floor": "reject"}
    policy = Policy.coerce(guard.policy)
    assert policy.tie_margin == 0.1 and policy.detector_floor is Decision.REJECT
    assert policy.reject_threshold == Policy().reject_threshold


def test_guard_from_the_default_directory_decides_with_the_default_set() -> None:
    from pathlib import Path

    g = Guard.from_dir(Path(__file__).resolve().parents[2] / "rules", redis_clients=_NoRedis(),
                       metrics=RuleMetrics(CollectorRegistry()))
    result = g.apply(event(amount=25_000.0), {}, {}, ProposedVerdict(P))
    assert result.verdict is X and result.fired[0] == "very-large-amount"


class _NoRedis:
    def __call__(self, url):
        raise ConnectionError("no redis in unit tests")
