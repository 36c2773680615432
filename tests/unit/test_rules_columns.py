"""Rule conditions over columns (``engine.rules.columns``) against the per-row closures
and cel-python, on batches whose values are sometimes not all of one type."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.rules.columns import ColumnTable, NeedsRows, compile_columns
from engine.rules.expr import compile_condition
from engine.rules.ruleset import CompiledRule, RuleSet
from tests.support.celref import reference_evaluate


class _List:
    def __init__(self, values):
        self.values = frozenset(values)


LISTS = {"blocked_devices": _List({"dev-1", "dev-2"}), "high_risk": _List({"KP", "IR"})}
REPO = Path(__file__).resolve().parents[2]


def _ruleset(*sources: str, shadow: tuple[str, ...] = ()) -> RuleSet:
    def rule(i: int, source: str, mode: str) -> CompiledRule:
        return CompiledRule(id=f"{mode}-{i}", description="", owner="t", mode=mode, priority=i, action="review",
                            condition=compile_condition(source, lists=LISTS), file="t.yaml", line=None)

    return RuleSet(version="t", enforce=tuple(rule(i, s, "enforce") for i, s in enumerate(sources)),
                   shadow=tuple(rule(i, s, "shadow") for i, s in enumerate(shadow)), disabled=(), lists=LISTS,
                   policy={}, files=())


def _same_as_rows(ruleset: RuleSet, envs: list[dict]) -> None:
    batch = ruleset.evaluate_batch(envs, min_column_rows=1)
    for env, got in zip(envs, batch):
        want = ruleset.evaluate(env)
        assert [r.id for r in got.fired] == [r.id for r in want.fired]
        assert [r.id for r in got.shadow] == [r.id for r in want.shadow]
        assert [(r.id, m) for r, m in got.errors] == [(r.id, m) for r, m in want.errors]


_num_field = st.sampled_from(["event.amount", "ctx.velocity_1h_count", "ctx.device_is_new", "model.p_reject",
                              "detector.score", "event.hour"])
_num_lit = st.one_of(st.floats(min_value=-5, max_value=500, allow_nan=False).map(lambda x: repr(round(x, 2))),
                     st.integers(0, 30).map(str), st.sampled_from(["0", "5", "8", "0.5", "5.0", "8.0"]))
_str_field = st.sampled_from(["event.country", "event.channel", "event.device_id", "model.verdict"])
_str_lit = st.sampled_from(["'BE'", "'KP'", "'ecommerce'", "'dev-1'", "'review'", "''"])


def _atoms():
    cmp = st.tuples(_num_field, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), _num_lit).map(" ".join)
    fields = st.tuples(_num_field, st.sampled_from(["<", ">=", "=="]), _num_field).map(" ".join)
    order_str = st.tuples(_str_field, st.sampled_from(["<", ">="]), _str_lit).map(" ".join)
    eq = st.tuples(_str_field, st.sampled_from(["==", "!="]), _str_lit).map(" ".join)
    member = st.tuples(_str_field, st.sampled_from(["lists.blocked_devices", "lists.high_risk", "['BE', 'NL']"])
                       ).map(lambda t: f"{t[0]} in {t[1]}")
    arith = st.tuples(_num_field, _num_lit).map(lambda t: f"({t[0]} + {t[1]}) > 10")  # no column form
    return st.one_of(cmp, fields, order_str, eq, member, arith, st.just("detector.flagged"), st.just("true"),
                     st.just("model.degraded == false"))


_expr = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"!({e})"),
    ),
    max_leaves=5,
)
#: Numbers that are sometimes ints, NaN or a bool, and now and then missing: the batch's
#: columns are then not of one type, and the rule must fall back to rows.
_ties = st.sampled_from([0.0, 0.5, 5.0, 8.0])  # equal to a literal: < against <=, == against !=
_number = st.one_of(st.floats(0, 600, allow_nan=False), _ties, _ties, st.integers(0, 40), st.just(math.nan),
                    st.just(True))
_maybe = st.one_of(st.just(None), st.just(None), st.just(None), st.just("missing"))


def _env_strategy(vary: bool):
    num = _number if vary else st.one_of(st.floats(0, 600, allow_nan=False), _ties)
    return st.fixed_dictionaries({
        "event": st.fixed_dictionaries({
            "amount": num, "hour": st.integers(0, 23) if not vary else st.one_of(st.integers(0, 23), st.just(3.0)),
            "country": st.sampled_from(["BE", "KP", "NL"]), "channel": st.sampled_from(["ecommerce", "card_present"]),
            "device_id": st.sampled_from(["dev-1", "", "x"])}),
        "ctx": st.fixed_dictionaries({"velocity_1h_count": num, "device_is_new": st.sampled_from([0.0, 1.0])}),
        "model": st.fixed_dictionaries({"p_reject": st.floats(0, 1, allow_nan=False),
                                        "verdict": st.sampled_from(["pass", "review"]),
                                        "degraded": st.booleans()}),
        "detector": st.fixed_dictionaries({"score": num, "flagged": st.booleans()}),
    })


def _drop(env: dict, missing: bool) -> dict:
    if missing:
        env = {**env, "ctx": {k: v for k, v in env["ctx"].items() if k != "velocity_1h_count"}}
    return env


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=_expr, vary=st.booleans(), data=st.data())
def test_batch_evaluation_agrees_with_rows_and_cel_python(source: str, vary: bool, data) -> None:
    envs = data.draw(st.lists(st.tuples(_env_strategy(vary), _maybe), min_size=1, max_size=6))
    envs = [_drop(env, m == "missing") for env, m in envs]
    ruleset = _ruleset(source, "detector.score > 0.5", shadow=(source,))
    _same_as_rows(ruleset, envs)
    lists = {k: v.values for k, v in LISTS.items()}
    for env, got in zip(envs, ruleset.evaluate_batch(envs, min_column_rows=1)):
        reference = reference_evaluate(source, env, lists)
        if isinstance(reference, bool) and not got.errors:
            assert any(r.id == "enforce-0" for r in got.fired) is reference, (source, env)


def test_the_shipped_rules_run_as_columns() -> None:
    """Every rule in rules/card_payments.yaml but those that need rows has a column form,
    and on a batch of well-typed inputs none of them falls back to rows."""
    from engine.rules.loader import load_ruleset

    ruleset = load_ruleset(REPO / "rules")
    envs = [_typical_env(i) for i in range(20)]
    table = ColumnTable(envs)
    as_columns = [r.id for r in ruleset.rules if r.condition.columns is not None]
    assert len(as_columns) >= len(ruleset.rules) - 2, [r.condition.source for r in ruleset.rules
                                                       if r.condition.columns is None]
    for rule in ruleset.rules:
        if rule.condition.columns is not None:
            mask = rule.condition.columns(table)
            assert mask.tolist() == [rule.condition.evaluate(env) for env in envs], rule.id
    _same_as_rows(ruleset, envs)


def _typical_env(i: int) -> dict:
    from engine.rules.loader import default_ctx_names

    ctx = {name: float((i * 7 + k) % 13) for k, name in enumerate(sorted(default_ctx_names()))}
    return {"event": {"amount": 50.0 * i, "country": ("BE", "KP", "NL")[i % 3], "channel": "card_present",
                      "device_id": f"d{i}", "ip": "10.0.0.1", "merchant_category": "5411", "currency": "EUR",
                      "customer_id": f"c{i}", "account_id": "a", "terminal_id": "t", "event_id": f"e{i}",
                      "event_time_ms": 1_750_000_000_000 + i, "hour": i % 24, "weekday": i % 7, "attributes": {}},
            "ctx": ctx,
            "model": {"verdict": "pass", "model_verdict": "pass", "confidence": 0.9, "p_pass": 0.9, "p_review": 0.07,
                      "p_reject": 0.03, "risk": 0.01 * i, "degraded": False},
            "detector": {"score": 0.05 * i, "flagged": i % 5 == 0}}


def test_mixed_types_fall_back_to_rows() -> None:
    condition = compile_columns("ctx.velocity_1h_count >= 8")
    assert condition is not None
    with pytest.raises(NeedsRows):
        condition(ColumnTable([{"ctx": {"velocity_1h_count": 9.0}}, {"ctx": {"velocity_1h_count": True}}]))
    with pytest.raises(NeedsRows):
        condition(ColumnTable([{"ctx": {"velocity_1h_count": 9.0}}, {"ctx": {}}]))
    envs = [{"ctx": {"velocity_1h_count": 9.0}}, {"ctx": {"velocity_1h_count": "9"}}, {"ctx": {}}]
    _same_as_rows(_ruleset("ctx.velocity_1h_count >= 8"), envs)
    assert [len(e.errors) for e in _ruleset("ctx.velocity_1h_count >= 8").evaluate_batch(envs, min_column_rows=1)
            ] == [0, 1, 1]


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("literal", ["5", "5.0", "'m'"])
def test_every_comparison_at_and_around_its_threshold(op: str, literal: str) -> None:
    """Each operator on values below, at and above the literal (and NaN, and strings),
    as columns and row by row; the column form must be used for the same-typed ones."""
    field = "event.country" if literal.startswith("'") else "event.amount"  # the type check refuses the rest
    for values in ([4.0, 5.0, 6.0, math.nan], [4, 5, 6], ["a", "m", "z"], [4.0, 5, True]):
        envs = [{"event": {field.split(".")[1]: v}} for v in values]
        _same_as_rows(_ruleset(f"{field} {op} {literal}"), envs)
    assert compile_columns(f"event.amount {op} 5.0")(ColumnTable([{"event": {"amount": 5.0}}])).tolist() == \
        [op in ("<=", ">=", "==")]


def _guard_batch_inputs(n: int, views: str = "dicts"):
    """A real batch through the guard's own input builder: events with and without a
    device, IP and attributes, contexts from snapshots, proposals from the policy (some
    with screened text). ``views``: the proposals' model views as one dict each
    (``model_view()``) or as the pipeline's columns (``decide_columns``)."""
    from engine.features.snapshot import EMPTY_VALUES, ContextSnapshot, RuleContexts
    from engine.stages.decide import Policy, ScoreColumns, ScoreRow, decide, decide_columns
    from engine.stages.detect import DetectorResult
    from engine.stages.guard import BatchInputs
    from tests.support.events import event

    events = [event(i, amount=300.0 * i + 0.5, channel=("card_present", "ecommerce")[i % 2], device_id=None if i % 3 == 0 else f"d{i}",
                    ip=None if i % 4 == 0 else "10.0.0.9", attributes={"k": str(i)} if i % 2 else {},
                    event_time_ms=1_750_000_000_000 + i * 3_599_000) for i in range(n)]
    snapshots = [ContextSnapshot.empty(e) if i % 4 == 0 else
                 ContextSnapshot(e.event_id, e.event_time_ms, e.customer_id, e.terminal_id,
                                 tuple(0.5 * i + k for k in range(len(EMPTY_VALUES))), (10.0,) * (i % 3))
                 for i, e in enumerate(events)]
    contexts = RuleContexts(snapshots) if views == "columns" else [s.as_rule_inputs() for s in snapshots]
    policy = Policy()
    rows = [ScoreRow((0.8 - 0.1 * (i % 5), 0.1, 0.1 + 0.1 * (i % 5)), 0.05 * (i % 7)) for i in range(n)]
    detections = [None if i % 3 else DetectorResult(0.3 * (i % 4), i % 4 == 3, 0.8, field="memo") for i in range(n)]
    proposals = [decide(r, d, policy) for r, d in zip(rows, detections, strict=True)]
    if views == "columns":
        batch = decide_columns(ScoreColumns.from_rows(rows), detections, policy)
        assert batch.decisions == proposals
        return BatchInputs(events, contexts, batch.views, proposals)
    return BatchInputs(events, contexts, [p.model_view() for p in proposals], proposals)


@pytest.mark.parametrize("views", ["dicts", "columns"])
def test_batch_inputs_give_each_variable_as_the_envs_do(views: str) -> None:
    """``BatchInputs.values_of`` (what column rules read) equals the per-event activation
    (what row rules read) for every variable of every root, and names a missing one as
    the envs would (KeyError), whether the policy's views come as dicts or as columns."""
    from engine.stages.guard import event_inputs

    inputs = _guard_batch_inputs(40, views)
    envs = [dict(env) for env in _guard_batch_inputs(40)]  # every activation built from dict views
    assert [dict(env) for env in inputs] == envs
    assert len(envs) == 40 and inputs[3] is inputs[3]  # built once, on first use
    assert set(envs[0]["event"]) == set(event_inputs(inputs._events[0]))
    for root in ("event", "ctx", "model", "detector"):
        for name in envs[0][root]:
            assert inputs.values_of(root, name) == [env[root][name] for env in envs], (root, name)
    for root, name in (("event", "memo"), ("ctx", "no_such_feature"), ("model", "nope"), ("detector", "nope"),
                       ("nowhere", "x")):
        with pytest.raises(KeyError):
            inputs.values_of(root, name)


def test_shipped_rules_decide_the_same_from_batch_inputs_as_from_envs() -> None:
    """The guard's lazy inputs and fully built envs give every shipped rule the same
    result, so the column path reads nothing the row path would not."""
    from engine.rules.loader import load_ruleset

    ruleset = load_ruleset(REPO / "rules")
    lazy = ruleset.evaluate_batch(_guard_batch_inputs(64, "columns"), min_column_rows=1)
    built = ruleset.evaluate_batch([dict(env) for env in _guard_batch_inputs(64)], min_column_rows=1)
    assert [[r.id for r in e.fired] for e in lazy] == [[r.id for r in e.fired] for e in built]
    assert any(e.fired for e in lazy)  # the batch exercises at least one rule
