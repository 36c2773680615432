"""``TransactionEvent.validate`` scans the trusted strings once, and fails as checking each would."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.records import EventValidationError, TransactionEvent
from tests.support.events import event

#: Characters the id rule refuses (controls, lone surrogates) mixed with ordinary ones.
id_text = st.text(st.sampled_from(["a", "7", "-", " ", "é", "\x00", "\n", "\x7f", "\x9f", "\ud800", "\udfff", "字"]),
                  max_size=6)
value = st.one_of(id_text, st.none(), st.integers(-1, 1), st.just(""), st.just(False))
TRUSTED = ("event_id", "customer_id", "account_id", "terminal_id", "channel", "merchant_category", "device_id", "ip")


def outcome(fn):
    try:
        fn()
    except EventValidationError as exc:
        return str(exc)
    return "ok"


@settings(max_examples=500, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(TRUSTED), value, max_size=4))
def test_one_scan_fails_as_each_check(changes):
    """Any mix of bad characters, empty values and non-strings over the trusted fields:
    ``validate`` accepts exactly what checking each field accepts, and names the same
    field with the same message."""
    e = dataclasses.replace(event(1), **changes)
    assert outcome(e.validate) == outcome(lambda: e._validate(each_id=True))


@pytest.mark.parametrize("field", TRUSTED)
def test_a_control_character_in_any_trusted_field_is_refused(field):
    e = dataclasses.replace(event(1), **{field: "x\x00y"})
    with pytest.raises(EventValidationError, match=field):
        e.validate()


def test_a_clean_event_passes():
    e = event(1)
    assert isinstance(e, TransactionEvent) and e.validate() is e
