"""Static type checks: a comparison that can never be true is refused at load time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.records import Decision, TransactionEvent
from engine.rules.celops import kind_of
from engine.rules.expr import DETECTOR_FIELDS, EVENT_FIELDS, MODEL_FIELDS, ExpressionError, compile_condition
from engine.rules.loader import RuleSetError, build_ruleset, load_ruleset
from engine.rules.typecheck import BOOL, FIELD_TYPES, NUMBER, STRING
from engine.stages.guard import event_inputs, model_inputs

REPO = Path(__file__).resolve().parents[2]


class _List:
    values = frozenset({"a"})


def refusal(source: str) -> str:
    with pytest.raises(ExpressionError) as info:
        compile_condition(source, lists={"blocked": _List()})
    return str(info.value)


@pytest.mark.parametrize("source, expected", [
    ('event.amount > "5000"', 'compares a number (event.amount) with a string ("5000"), so it is never true; '
                              "write the number without quotes"),
    ("event.merchant_category == 5411", 'write it in quotes, e.g. "5411"'),
    ('ctx.velocity_1h_count >= "20"', "compares a number (ctx.velocity_1h_count) with a string"),
    ('model.p_reject != "0.9"', "compares a number (model.p_reject)"),
    ('detector.score > "0.5"', "compares a number (detector.score)"),
    ("model.verdict == 2", "compares a string (model.verdict) with a number (2)"),
    ("detector.flagged == 1", "compares a bool (detector.flagged) with a number (1)"),
    ("detector.flagged >= true", "orders booleans with >="),
    ("event.amount == event.country", "compares a number (event.amount) with a string (event.country)"),
    ('(event.amount + 1) * 2 < "3"', "compares a number ((event.amount + 1) * 2)"),
    ('event.country in ["KP", 1]', "in a list that holds a number"),
    ("ctx.velocity_1h_count in lists.blocked", "in a named list, which holds strings"),
    ('true && (event.hour < 5 || event.weekday == "Sunday")', "compares a number (event.weekday)"),
])
def test_mismatched_comparison_is_refused(source: str, expected: str) -> None:
    message = refusal(source)
    assert expected in message, message


@pytest.mark.parametrize("source", [
    'string(event.amount) == "5000"', "int(event.merchant_category) == 5411", "size(event.ip) > 3",
    "event.attributes.promo == 1", 'event.attributes["n"] > "3"',  # attributes: type unknown, run time decides
    'model.verdict == "reject" && model.p_reject >= 0.9', "detector.flagged == true",
    'event.device_id != "" && event.device_id in lists.blocked', "event.amount > 5 ? true : false",
    'event.country in ["KP", "IR"]', "event.device_id == null", "ctx.device_is_new > 0.5",
    "detector.score >= 0.5 && !detector.flagged",
])
def test_well_typed_conditions_still_compile(source: str) -> None:
    compile_condition(source, lists={"blocked": _List()})


def test_default_rule_set_is_well_typed() -> None:
    assert load_ruleset(REPO / "rules").enforce


def test_refusal_names_file_line_and_rule() -> None:
    rule_file = (b"rules:\n"
                 b"  - id: mcc-typo\n    description: d\n    owner: o\n"
                 b"    when: |\n      event.amount >= 100 &&\n      event.merchant_category == 5411\n"
                 b"    then: review\n")
    with pytest.raises(RuleSetError) as info:
        build_ruleset({"typos.yaml": rule_file})
    assert str(info.value.problems[0]).startswith(
        "typos.yaml:7: rule 'mcc-typo': `when` does not compile: `event.merchant_category == 5411` compares a "
        "string (event.merchant_category) with a number (5411)")


def test_rules_check_refuses_a_typed_typo(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from engine.interfaces.commands.rules import register

    app = typer.Typer()
    register(app)
    app.callback()(lambda: None)  # keep `rules` a sub-command
    shutil.copytree(REPO / "rules", tmp_path / "r")
    path = tmp_path / "r" / "card_payments.yaml"
    path.write_text(path.read_text().replace("when: event.amount >= 2500", 'when: event.amount >= "2500"'))
    result = CliRunner().invoke(app, ["rules", "check", str(tmp_path / "r")])
    assert result.exit_code == 1
    assert ("card_payments.yaml:17: rule 'large-amount': `when` does not compile: `event.amount >= \"2500\"` "
            "compares a number (event.amount) with a string") in result.output


def test_field_types_match_what_rules_are_given() -> None:
    """FIELD_TYPES must describe the values engine.stages.guard really puts in front of rules."""
    event = TransactionEvent(event_id="e1", event_time_ms=1_767_268_800_000, customer_id="C1", account_id="A1",
                             terminal_id="T1", merchant_category="5411", amount=12.5, currency="EUR",
                             channel="ecommerce", country="BE", device_id=None, memo="hi")
    model, detector = model_inputs({"p_pass": 0.9, "p_review": 0.05, "p_reject": 0.05}, Decision.PASS)
    given = {"event": event_inputs(event), "model": model, "detector": detector}
    expected_kind = {NUMBER: "number", STRING: "string", BOOL: "bool"}
    for (root, field), kind in FIELD_TYPES.items():
        assert kind_of(given[root][field]) == expected_kind[kind], (root, field)
    known = {("event", f) for f in EVENT_FIELDS} | {("model", f) for f in MODEL_FIELDS} \
        | {("detector", f) for f in DETECTOR_FIELDS}
    assert set(FIELD_TYPES) == known - {("event", "attributes")}
    assert set(given["event"]) >= EVENT_FIELDS  # every field a rule may name is there at run time
