"""Topic replication settings (#18): what `tollgate topics create` asks the broker for."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from engine.settings import Settings, TopicSettings
from engine.wire.topics import topic_specs


def test_quickstart_default_is_one_copy_and_every_topic_says_its_min_isr() -> None:
    for spec in topic_specs(Settings()):
        assert spec.replication_factor == 1
        assert dict(spec.config)["min.insync.replicas"] == "1"


def test_cluster_settings_reach_every_topic(monkeypatch) -> None:
    # What `ops/stack up --brokers 3` exports.
    monkeypatch.setenv("TOLLGATE_TOPICS__REPLICATION_FACTOR", "3")
    monkeypatch.setenv("TOLLGATE_TOPICS__MIN_INSYNC_REPLICAS", "2")
    specs = topic_specs(Settings())
    assert {s.replication_factor for s in specs} == {3}
    assert {dict(s.config)["min.insync.replicas"] for s in specs} == {"2"}
    # the long retention of outcomes (both topics) and dead letters is kept alongside
    assert sum("retention.ms" in dict(s.config) for s in specs) == 3


def test_min_isr_above_replication_is_refused() -> None:
    with pytest.raises(ValidationError, match="min_insync_replicas"):
        TopicSettings(replication_factor=1, min_insync_replicas=2)
