"""The notebook face of the pipeline (engine/interfaces/api.py), on the fake stages of test_pipeline.py."""

from __future__ import annotations

import pandas as pd
import pytest

from engine.interfaces.api import TollgateModel, Verdicts, to_event
from engine.records import Decision, EventValidationError, Verdict
from engine.settings import Settings
from tests.unit.test_pipeline import ev, make


def model() -> TollgateModel:
    pipe, _ = make()
    return TollgateModel(pipe, Settings(), "memory")


def test_one_event_gives_one_verdict_many_give_a_list_in_order():
    m = model()
    one = m.decide(ev(0).to_dict())
    assert isinstance(one, Verdict) and one.verdict is Decision.PASS
    many = m.decide([ev(1, 900, "c2"), ev(2, 200, "c3").to_dict()], batch_size=1)
    assert isinstance(many, Verdicts) and [v.event_id for v in many] == ["e1", "e2"]
    assert many.counts() == {"pass": 0, "review": 1, "reject": 1}


def test_dataframe_in_dataframe_out():
    m = model()
    frame = pd.DataFrame([ev(i, 10.0 * (i + 1), f"c{i}").to_dict() for i in range(3)])
    frame.loc[1, "memo"] = float("nan")  # what pandas does to a missing optional
    out = m.decide(frame)
    table = out.to_frame()
    assert list(table["event_id"]) == ["e0", "e1", "e2"]
    assert {"p_pass", "p_review", "p_reject", "reasons"} <= set(table.columns)
    assert "<table" in out._repr_html_()


def test_reprs_are_readable():
    m = model()
    assert "model-1" in repr(m) and "rules-v1" in repr(m) and "reject≥0.5" in repr(m)
    text = repr(m.decide([ev(i, customer=f"c{i}") for i in range(12)]))
    assert text.startswith("Verdicts(12: 12 pass") and "… 2 more" in text


def test_invalid_events_raise_before_anything_is_scored():
    pipe, store = make()
    m = TollgateModel(pipe, Settings(), "memory")
    with pytest.raises(EventValidationError, match="amount"):
        m.decide([ev(0).to_dict(), dict(ev(1).to_dict(), amount=-1)])
    assert store.calls == 0
    with pytest.raises(TypeError, match="TransactionEvent or a mapping"):
        to_event(42)  # type: ignore[arg-type]
    for field, value in (("memo", 12345), ("memo", {"a": 1}), ("channel", ["ecommerce"]), ("customer_id", "c\x00")):
        with pytest.raises(EventValidationError, match=field):  # the rules of every entry point
            m.decide(dict(ev(2).to_dict(), **{field: value}))
    assert store.calls == 0


def test_memory_context_accumulates_and_resets():
    m = model()
    m.decide([ev(i) for i in range(3)])
    assert m.decide(ev(3)).verdict is Decision.REJECT  # the fake guard's 4th-transaction rule
    m.reset_context()
    assert m.decide(ev(4)).verdict is Decision.PASS
    with pytest.raises(RuntimeError, match="memory"):
        TollgateModel(m.pipeline, Settings(), "redis").reset_context()
