"""Registry pointer, pub/sub and audit stream against the real Redis and a real Redis
Cluster (plain pub/sub: a cluster forwards PUBLISH to every node)."""

from __future__ import annotations

import json
import threading

import pytest

from engine.model import InputSpec, fresh_model
from engine.model.registry import ModelRegistry
from engine.settings import PathSettings, RedisSettings, Settings
from engine.wire.redisconn import connect

pytestmark = pytest.mark.integration


@pytest.fixture(params=["single", "cluster"])
def any_redis(request, unique):
    """(url, client) on the single Redis, then on the Redis Cluster; keys removed after."""
    url = request.getfixturevalue("stack").redis_url if request.param == "single" \
        else request.getfixturevalue("redis_cluster_url")
    client = connect(url, socket_timeout_s=10)
    yield url, client
    for key in client.scan_iter(f"*{unique}*", count=10_000):
        client.unlink(key)
    client.close()


def test_promotion_is_published_and_audited(any_redis, unique, tmp_path):
    url, redis_client = any_redis
    s = Settings(redis=RedisSettings(url=url, key_prefix=f"tgreg{unique}"),
                 paths=PathSettings(models_dir=tmp_path / "models"))
    reg = ModelRegistry(s, redis_client)
    spec = InputSpec(n_numeric=2, n_categorical=1, categorical_buckets=8, history_len=2, history_numeric=1,
                     history_categorical=1, text_len=3, text_vocab=20, schema_hash="s1")
    model, card = fresh_model(spec)
    a, b = reg.register(model, card, version="a"), reg.register(model, card, version="b")
    pubsub = redis_client.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(reg.events_channel)
    pubsub.get_message(timeout=1.0)  # the subscribe confirmation

    reg.promote(a, who="alice", why="first")
    t = threading.Thread(target=reg.promote, args=(b,), kwargs={"who": "gate", "why": "better"})
    t.start()
    t.join()
    reg.rollback(who="bob", why="alert")

    got = []
    while (m := pubsub.get_message(timeout=1.0)) is not None:
        got.append(json.loads(m["data"]))
    assert [(g["action"], g["version"], g["previous"], g["who"]) for g in got] == [
        ("promote", "a", None, "alice"), ("promote", "b", "a", "gate"), ("rollback", "a", "b", "bob")]
    assert set(got[0]) == {"version", "previous", "action", "who", "why", "at", "event_time_ms"}
    assert redis_client.get(f"tgreg{unique}:model:serving") == b"a"
    assert redis_client.xlen(reg.audit_stream) == 3
    assert [e.action for e in reg.audit()] == ["promote", "promote", "rollback"]
