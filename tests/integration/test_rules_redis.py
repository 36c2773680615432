"""Named lists backed by real Redis sets: read at load, refreshed live, kept through an outage."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from engine.records import Decision, TransactionEvent
from engine.rules.lists import RedisClients
from engine.rules.rule_metrics import RuleMetrics
from engine.rules.watch import RuleWatcher
from engine.stages.guard import Guard, ProposedVerdict
from tests.support.events import event

pytestmark = pytest.mark.integration


def _event(customer: str) -> TransactionEvent:
    return event(0, event_id=f"e-{customer}", event_time_ms=1_767_268_800_000, customer_id=customer,
                 account_id="A1", terminal_id="T1", amount=20.0, channel="card_present")


def _verdict(watcher: RuleWatcher, customer: str) -> Decision:
    guard = Guard(watcher, metrics=watcher.metrics)
    return guard.apply_batch([_event(customer)], [{}], [{}], [ProposedVerdict(Decision.PASS)])[0].verdict


def _write_rules(directory: Path, key: str, url: str) -> None:
    directory.mkdir(exist_ok=True)
    (directory / "live.yaml").write_text(f"""
lists:
  blocked_live:
    description: cards blocked by support
    source: redis
    url: {url}
    key: {key}
    refresh_s: 1
rules:
  - id: blocked-live
    description: blocked by support
    owner: support
    when: event.customer_id in lists.blocked_live
    then: reject
""")


def test_redis_list_is_read_refreshed_and_survives_an_outage(stack, unique, redis_client, tmp_path: Path) -> None:
    key = f"tg:test:{unique}:blocked"
    redis_client.sadd(key, "C-1")
    _write_rules(tmp_path / "r", key, stack.redis_url)
    registry = CollectorRegistry()
    watcher = RuleWatcher(tmp_path / "r", interval_s=0.1, metrics=RuleMetrics(registry),
                          redis_clients=RedisClients(stack.redis_url), ctx_names=frozenset())
    assert _verdict(watcher, "C-1") is Decision.REJECT
    assert _verdict(watcher, "C-2") is Decision.PASS

    redis_client.sadd(key, "C-2")  # support blocks a card: no file edit, no new version
    version = watcher.version
    with watcher:
        deadline = time.monotonic() + 5.0
        while _verdict(watcher, "C-2") is not Decision.REJECT and time.monotonic() < deadline:
            time.sleep(0.05)
    assert _verdict(watcher, "C-2") is Decision.REJECT and watcher.version == version
    assert 'tollgate_rules_list_size{list="blocked_live"} 2.0' in generate_latest(registry).decode()

    # Redis becomes unreachable: the list keeps its last values and is marked stale
    lst = watcher.current().lists["blocked_live"]
    lst.url = "redis://127.0.0.1:1/0"
    lst.loaded_at = 0.0
    assert not lst.refresh(RedisClients())
    assert lst.stale and lst.values == {"C-1", "C-2"}
    assert _verdict(watcher, "C-1") is Decision.REJECT


def test_reload_keeps_redis_values_when_redis_is_down(stack, unique, redis_client, tmp_path: Path) -> None:
    key = f"tg:test:{unique}:blocked"
    redis_client.sadd(key, "C-9")
    _write_rules(tmp_path / "r", key, stack.redis_url)
    watcher = RuleWatcher(tmp_path / "r", interval_s=0.1, metrics=RuleMetrics(CollectorRegistry()),
                          redis_clients=RedisClients(stack.redis_url), ctx_names=frozenset())
    assert _verdict(watcher, "C-9") is Decision.REJECT
    # a rule edit while the list's Redis is unreachable: the new set starts from the old values
    text = (tmp_path / "r" / "live.yaml").read_text()
    (tmp_path / "r" / "live.yaml").write_text(text.replace(stack.redis_url, "redis://127.0.0.1:1/0")
                                              .replace("blocked by support\n    owner", "blocked (edited)\n    owner"))
    result = watcher.poll_once()
    assert result.changed, result.error
    lst = watcher.current().lists["blocked_live"]
    assert lst.stale and lst.values == {"C-9"}
    assert _verdict(watcher, "C-9") is Decision.REJECT
