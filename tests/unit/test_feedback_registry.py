"""The registry on disk with an in-memory Redis stand-in (the real server is in
tests/integration/test_feedback_registry.py)."""

from __future__ import annotations

import json

import pytest

from engine.model import InputSpec, fresh_model, load_model_dir
from engine.model.registry import ModelEvent, ModelRegistry, RegistryError
from engine.settings import PathSettings, Settings
from tests.support.fake_redis import FakeRedis

SPEC = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                 history_categorical=1, text_len=3, text_vocab=20, schema_hash="s1")


@pytest.fixture
def registry(tmp_path):
    return ModelRegistry(Settings(paths=PathSettings(models_dir=tmp_path / "models")), FakeRedis())


def test_register_model_object_loads_back_through_engine_model(registry):
    model, card = fresh_model(SPEC, version="ignored")
    v = registry.register(model, card, now_ms=1_700_000_000_000)
    assert v.startswith("v20231114T221320Z-")
    loaded = load_model_dir(registry.path_of(v), expected_schema_hash="s1")
    assert loaded.card.version == v  # the card's version is the registry's
    meta = json.loads((registry.path_of(v) / "registry.json").read_text())
    assert len(meta["weights_sha256"]) == 64
    with pytest.raises(RegistryError):
        registry.register(model, card, version=v)  # immutable
    assert [m.version for m in registry.list()] == [v]


def test_promote_rollback_publish_and_audit(registry):
    model, card = fresh_model(SPEC)
    a = registry.register(model, card, version="a", now_ms=1)
    b = registry.register(model, card, version="b", now_ms=2)
    registry.promote(a, who="alice", why="first", now_ms=10)
    registry.promote(b, who="gate", why="AP up", now_ms=20)
    with pytest.raises(RegistryError):
        registry.promote(b, who="x", why="again")
    ev = registry.rollback(who="bob", why="review rate alert", now_ms=30)
    assert (ev.version, ev.previous, ev.action) == ("a", "b", "rollback")
    assert registry.serving_version() == "a"
    with pytest.raises(RegistryError):
        registry.rollback(who="bob", why="nothing left")
    published = [ModelEvent.from_json(m) for ch, m in registry.redis.published]
    assert {ch for ch, _ in registry.redis.published} == {"tg:model:events"}
    assert [(e.version, e.previous, e.who, e.why, e.event_time_ms) for e in published] == [
        ("a", None, "alice", "first", 10), ("b", "a", "gate", "AP up", 20), ("a", "b", "bob", "review rate alert", 30)]
    assert registry.audit() == published
    assert [m.serving for m in registry.list()] == [True, False]


def test_refuses_unknown_incomplete_and_path_escaping_versions(registry, tmp_path):
    with pytest.raises(RegistryError):
        registry.promote("nope", who="x", why="y")
    with pytest.raises(RegistryError):
        registry.path_of("../etc")
    (tmp_path / "src").mkdir()
    with pytest.raises(RegistryError):
        registry.register(tmp_path / "src")  # no weights
    assert registry.list() == []
    assert not any(p.name.startswith(".staging") for p in registry.models_dir.iterdir())


def test_audit_orders_by_wall_clock_with_event_time_beside_it(tmp_path):
    """A backfill cycle at an event time of 2018 after a live promotion still lands
    later in the audit: ``at`` is the wall clock, the event time sits beside it."""
    ticks = iter([1_800_000_000_000, 1_800_000_060_000])
    reg = ModelRegistry(Settings(paths=PathSettings(models_dir=tmp_path / "models")), FakeRedis(),
                        wall_clock=lambda: next(ticks))
    model, card = fresh_model(SPEC)
    a = reg.register(model, card, version="a", now_ms=1)
    b = reg.register(model, card, version="b", now_ms=2)
    live = reg.promote(a, who="ops", why="live")
    backfill = reg.promote(b, who="feedback-scheduler", why="backfill", now_ms=1_522_540_800_000)
    assert (live.at, live.event_time_ms) == (1_800_000_000_000, None)
    assert (backfill.at, backfill.event_time_ms) == (1_800_000_060_000, 1_522_540_800_000)
    assert [e.at for e in reg.audit()] == sorted(e.at for e in reg.audit())


def test_register_promote_rollback_audit(registry, tmp_path):
    """The registry's walk: register two versions, promote both, roll back, read the audit."""
    src = tmp_path / "incoming"
    src.mkdir()
    (src / "model.safetensors").write_bytes(b"weights")
    v1 = registry.register(src, {"note": "first"}, version="v1")
    assert registry.promote(v1, who="alice", why="initial").action == "promote"
    assert registry.serving_version() == "v1"
    v2 = registry.register(src, {"note": "second"}, version="v2")
    registry.promote(v2, who="gate", why="all bars hold")
    assert registry.rollback(who="bob", why="alert on review rate").version == "v1"
    assert [e.action for e in registry.audit()] == ["promote", "promote", "rollback"]
