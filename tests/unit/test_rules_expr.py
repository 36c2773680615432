"""CEL conditions: what compiles, what is refused, and agreement with cel-python."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.rules.expr import MAX_AST_NODES, MAX_EXPR_CHARS, Condition, EvalError, ExpressionError, compile_condition
from tests.support.celref import reference_evaluate


class _List:
    def __init__(self, values):
        self.values = frozenset(values)


LISTS = {"blocked_devices": _List({"dev-1", "dev-2"}), "high_risk": _List({"KP", "IR"})}
ENV = {
    "event": {"amount": 120.5, "country": "BE", "channel": "ecommerce", "device_id": "dev-1",
              "attributes": {"entry_mode": "chip"}, "hour": 3},
    "ctx": {"velocity_1h_count": 4.0, "device_is_new": 1.0, "terminal_risk_7d": 0.25},
    "model": {"p_reject": 0.7, "risk": 0.4, "verdict": "review"},
    "detector": {"score": 0.2, "flagged": False},
}


def ev(source: str, env=ENV) -> bool:
    return compile_condition(source, lists=LISTS).evaluate(env)


@pytest.mark.parametrize("source, expected", [
    ("event.amount > 100", True),
    ("event.amount > 100.0 && ctx.device_is_new == 1.0", True),
    ("event.amount >= 1000 || event.device_id in lists.blocked_devices", True),
    ("event.country in lists.high_risk", False),
    ("event.country in ['BE', 'NL']", True),
    ("!(event.channel == 'card_present')", True),
    ("event.channel.startsWith('e') && event.channel.endsWith('merce') && event.channel.contains('comm')", True),
    ("size(event.country) == 2 && event.country.size() == 2", True),
    ("has(event.attributes.entry_mode) && !has(event.attributes.promo)", True),
    ("event.attributes['entry_mode'] == 'chip'", True),
    ("event.hour < 5 ? model.p_reject > 0.5 : false", True),
    ("model.verdict == 'review' && detector.flagged == false", True),
    ("(event.amount * 2 - 1) / 4 == 60.0", True),
    ("int(event.amount) == 120 && double(ctx.velocity_1h_count) == 4.0", True),
    ("string(event.hour) == '3'", True),
    ("ctx.terminal_risk_7d >= 0.25", True),
])
def test_conditions_evaluate(source: str, expected: bool) -> None:
    assert ev(source) is expected


@pytest.mark.parametrize("source, fragment", [
    ("event.memo.contains('ignore previous')", "event.memo is user-written text"),
    ("event.merchant_descriptor == 'x'", "event.merchant_descriptor is user-written text"),
    ("event.__class__", "names starting with '_' are not allowed"),
    ("event.amount.__class__.__mro__", "names starting with '_' are not allowed"),
    ("''.__class__.__bases__", "names starting with '_' are not allowed"),
    ("event.__dict__ == {}", "names starting with '_' are not allowed"),
    ("__import__('os')", "names starting with '_' are not allowed"),
    ("().__class__.__bases__", "CEL syntax error"),
    ("os.system('rm -rf /')", "unknown variable 'os'"),
    ("event.amounts > 1", "unknown event field 'amounts'"),
    ("model.score > 1", "unknown model field 'score'"),
    ("detector.text == ''", "unknown detector field 'text'"),
    ("event.device_id in lists.nope", "unknown list 'nope' (known lists: blocked_devices, high_risk)"),
    ("lists.blocked_devices.x", "lists.blocked_devices is a set"),
    ("event", "'event' alone is not a value"),
    ("event.country.matches('(a+)+$')", "regular expressions are not allowed"),
    ("[1, 2].exists(x, x > 1)", "comprehension macros"),
    ("[1, 2].all(x, x > 1)", "comprehension macros"),
    ("{'a': 1}['a'] == 1", "map literals are not supported"),
    ("eval('1')", "unknown function eval()"),
    ("event.country.lower() == 'be'", "unknown method .lower()"),
    ("b'abc' == b'abc'", "bytes literals are not supported"),
    ("event.amount >", "CEL syntax error at line 1, column 14"),
    ("event.amount >> 3", "CEL syntax error at line 1, column 15: near '> 3'"),
    ("", "empty condition"),
])
def test_refused_expressions(source: str, fragment: str) -> None:
    with pytest.raises(ExpressionError) as info:
        compile_condition(source, lists=LISTS)
    assert fragment in str(info.value)


def test_ctx_names_are_checked_when_known() -> None:
    with pytest.raises(ExpressionError, match="unknown context feature 'velocity_1h_cnt'"):
        compile_condition("ctx.velocity_1h_cnt > 3", ctx_names=frozenset({"velocity_1h_count"}))
    assert compile_condition("ctx.velocity_1h_count > 3", ctx_names=frozenset({"velocity_1h_count"}))


def test_size_and_nesting_are_bounded_before_parsing() -> None:
    with pytest.raises(ExpressionError, match=f"the limit is {MAX_EXPR_CHARS}"):
        compile_condition("event.amount > 1 && " * 200 + "true")
    with pytest.raises(ExpressionError, match="nests brackets more than"):
        compile_condition("(" * 500 + "true" + ")" * 500)
    with pytest.raises(ExpressionError, match="nests brackets more than"):
        compile_condition("[" * 40 + "]" * 40)
    with pytest.raises(ExpressionError, match=f"too large .* the limit is {MAX_AST_NODES}"):
        compile_condition(" || ".join(["1 < 2"] * 120))
    # brackets inside strings are not nesting
    assert compile_condition("event.country != '((((((((((((((((((((('").evaluate(ENV) is True


@pytest.mark.parametrize("source, fragment", [
    # (with a known type, event.country > 3 is refused at load: test_rules_typecheck.py)
    ("event.attributes.entry_mode > 3", "cannot compare string > number"),
    ("event.amount / 0 > 1", "division by zero"),
    ("ctx.missing_feature > 1", "KeyError"),
    ("event.amount", "must be true or false, got number"),
    ("event.country + 1 == 'x'", "cannot apply +"),
    ("!event.amount", "needs true/false"),
    ("event.country.x == 1", "string has no fields"),
])
def test_evaluation_errors_are_eval_errors(source: str, fragment: str) -> None:
    condition = compile_condition(source, lists=LISTS)
    with pytest.raises(EvalError, match=fragment.replace("(", r"\(")):
        condition.evaluate(ENV)


def test_index_by_dunder_name_is_a_plain_missing_key() -> None:
    # attributes is a dict; a '__class__' key is looked up like any other, never getattr
    with pytest.raises(EvalError, match="KeyError"):
        ev("event.attributes['__class__'] == 'x'")


def test_errors_are_absorbed_like_cel() -> None:
    assert ev("ctx.missing > 1 || event.amount > 100") is True
    assert ev("ctx.missing > 1 && event.amount < 0") is False
    with pytest.raises(EvalError):
        ev("ctx.missing > 1 || event.amount < 0")


def test_condition_records_what_it_reads() -> None:
    c = compile_condition("event.amount > 1 && ctx.device_is_new > 0 && event.device_id in lists.blocked_devices",
                          lists=LISTS)
    assert isinstance(c, Condition)
    assert c.names == {"event.amount", "ctx.device_is_new", "event.device_id"}
    assert c.list_names == {"blocked_devices"}


# --- differential test against cel-python's interpreter --------------------------------

_num_field = st.sampled_from(["event.amount", "ctx.velocity_1h_count", "ctx.device_is_new",
                              "ctx.terminal_risk_7d", "model.p_reject", "model.risk", "detector.score"])
_num_lit = st.floats(min_value=-5, max_value=500, allow_nan=False).map(lambda x: repr(round(x, 2)))
_str_field = st.sampled_from(["event.country", "event.channel", "event.device_id", "model.verdict"])
_str_lit = st.sampled_from(["'BE'", "'KP'", "'ecommerce'", "'dev-1'", "'review'", "''"])


def _atoms():
    cmp = st.tuples(_num_field, st.sampled_from(["<", "<=", ">", ">=", "==", "!="]), _num_lit).map(" ".join)
    arith = st.tuples(_num_field, st.sampled_from(["+", "-", "*"]), _num_lit, st.sampled_from([">", "<"]),
                      _num_lit).map(lambda t: f"({t[0]} {t[1]} {t[2]}) {t[3]} {t[4]}")
    eq = st.tuples(_str_field, st.sampled_from(["==", "!="]), _str_lit).map(" ".join)
    member = st.tuples(_str_field, st.sampled_from(["lists.blocked_devices", "lists.high_risk", "['BE', 'NL']"])
                       ).map(lambda t: f"{t[0]} in {t[1]}")
    method = st.tuples(_str_field, st.sampled_from(["startsWith", "endsWith", "contains"]), _str_lit
                       ).map(lambda t: f"{t[0]}.{t[1]}({t[2]})")
    return st.one_of(cmp, arith, eq, member, method, st.just("detector.flagged"), st.just("true"))


_expr = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["&&", "||"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda e: f"!({e})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
    ),
    max_leaves=6,
)
_env = st.fixed_dictionaries({
    "event": st.fixed_dictionaries({
        "amount": st.floats(0, 600, allow_nan=False), "country": st.sampled_from(["BE", "KP", "NL"]),
        "channel": st.sampled_from(["ecommerce", "card_present"]), "device_id": st.sampled_from(["dev-1", "", "x"]),
    }),
    "ctx": st.fixed_dictionaries({"velocity_1h_count": st.floats(0, 50, allow_nan=False),
                                  "device_is_new": st.sampled_from([0.0, 1.0]),
                                  "terminal_risk_7d": st.floats(0, 1, allow_nan=False)}),
    "model": st.fixed_dictionaries({"p_reject": st.floats(0, 1, allow_nan=False),
                                    "risk": st.floats(0, 1, allow_nan=False),
                                    "verdict": st.sampled_from(["pass", "review"])}),
    "detector": st.fixed_dictionaries({"score": st.floats(0, 1, allow_nan=False), "flagged": st.booleans()}),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=_expr, env=_env)
def test_compiled_conditions_agree_with_cel_python(source: str, env: dict) -> None:
    reference = reference_evaluate(source, env, {k: v.values for k, v in LISTS.items()})
    condition = compile_condition(source, lists=LISTS)
    if isinstance(reference, bool):
        assert condition.evaluate(env) is reference, source
    else:  # cel-python errored (e.g. a strict int/double overload): ours errs or answers, never crashes
        try:
            condition.evaluate(env)
        except EvalError:
            pass


@pytest.mark.parametrize("source", [
    "-7 / 2 == -3", "-7 % 2 == -1", "7 % -2 == 1", "10 / 3 == 3", "2.5 * 2.0 == 5.0", "'ab' + 'c' == 'abc'",
    "size([1, 2, 3]) == 3", "'abc'.contains('b')", "int(2.9) == 2", "int(-2.9) == -2", "[1, 2] + [3] == [1, 2, 3]",
    "true ? false : true", "!(1 == 2) && 'a' < 'b'", "null == null", "2 in [1, 2]", "'x' in ['y']",
    "string(12) == '12'", "double('1.5') == 1.5", "0x1F == 31", "r'a\\d' == 'a\\\\d'",
])
def test_constant_expressions_agree_with_cel_python(source: str) -> None:
    reference = reference_evaluate(source, {})
    assert isinstance(reference, bool), reference
    assert compile_condition(source).evaluate({}) is reference


_MIXED = [0, 1, -1, 2.5, 1.0, float("nan"), True, False, "a", "b", "", None, [1], {"k": 1}, frozenset({"x"})]


def test_compiled_comparisons_match_the_reference_operators_on_every_pair_of_types() -> None:
    """``compare_fn`` and ``equal_fn`` take a fast path for plain numbers and same-typed
    values; on every pair of kinds they must do exactly what ``ordered`` and ``cel_eq``
    do — a bool is not a number, 1 == true is false, strings order, the rest raise."""
    from engine.rules.celops import cel_eq, compare_fn, equal_fn, ordered

    def outcome(fn):
        try:
            return fn()
        except EvalError as exc:
            return ("error", str(exc))

    for a in _MIXED:
        for b in _MIXED:
            left, right = (lambda env, a=a: a), (lambda env, b=b: b)
            for op in ("<", "<=", ">", ">="):
                got = outcome(lambda op=op, left=left, right=right: compare_fn(op, left, right)({}))
                assert got == outcome(lambda op=op, a=a, b=b: ordered(op, a, b)), (a, op, b)
            assert equal_fn(left, right, negate=False)({}) is cel_eq(a, b), (a, b)
            assert equal_fn(left, right, negate=True)({}) is (not cel_eq(a, b)), (a, b)
