"""Hot reload: good changes swap in between batches, bad ones change nothing."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from engine.offline.rules_tools.cases import neutral_context
from engine.records import Decision, TransactionEvent
from engine.rules.rule_metrics import RuleMetrics
from engine.rules.watch import RuleWatcher
from engine.stages.guard import Guard, ProposedVerdict, follow_rules

REPO = Path(__file__).resolve().parents[2]
EVENT = TransactionEvent(event_id="e1", event_time_ms=1_767_268_800_000, customer_id="C000001",
                         account_id="A1", terminal_id="T000001", merchant_category="5411", amount=3000.0,
                         currency="EUR", channel="card_present", country="BE", device_id="dev-new-1")
CTX = {**neutral_context(), "device_age_days": 30.0}


class _NoRedis:
    def __call__(self, url):
        raise ConnectionError("no redis in unit tests")


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    target = tmp_path / "rules"
    shutil.copytree(REPO / "rules", target)
    return target


@pytest.fixture
def watcher(rules_dir: Path) -> RuleWatcher:
    return RuleWatcher(rules_dir, interval_s=0.05, metrics=RuleMetrics(CollectorRegistry()),
                       redis_clients=_NoRedis())


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    st = path.stat()  # make sure the mtime moves even on coarse filesystems
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def verdict(watcher: RuleWatcher, event: TransactionEvent = EVENT) -> Decision:
    guard = Guard(watcher, metrics=watcher.metrics)
    return guard.apply_batch([event], [CTX], [{}], [ProposedVerdict(Decision.PASS)])[0].verdict


def metric(watcher: RuleWatcher, name: str) -> str:
    return [line for line in generate_latest(watcher.metrics.registry).decode().splitlines()
            if line.startswith(name)][0]


def test_threshold_change_is_applied(watcher: RuleWatcher, rules_dir: Path) -> None:
    v1 = watcher.version
    assert verdict(watcher) is Decision.REVIEW  # 3000 >= 2500
    edit(rules_dir / "card_payments.yaml", "when: event.amount >= 2500", "when: event.amount >= 5000")
    result = watcher.poll_once()
    assert result.changed and result.version != v1 and watcher.version == result.version
    assert verdict(watcher) is Decision.PASS
    assert metric(watcher, "tollgate_rules_active_version{") == f'tollgate_rules_active_version{{version="{result.version}"}} 1.0'
    assert metric(watcher, "tollgate_rules_reloads_total") == "tollgate_rules_reloads_total 2.0"


def test_blocklist_entry_is_applied(watcher: RuleWatcher, rules_dir: Path) -> None:
    small = TransactionEvent(**{**EVENT.to_dict(), "amount": 20.0})
    assert verdict(watcher, small) is Decision.PASS
    edit(rules_dir / "lists" / "blocklists.yaml", "      - deadbeef0001\n", "      - deadbeef0001\n      - dev-new-1\n")
    assert watcher.poll_once().changed
    assert verdict(watcher, small) is Decision.REJECT


def test_touch_without_change_is_not_a_new_version(watcher: RuleWatcher, rules_dir: Path) -> None:
    v1 = watcher.version
    edit(rules_dir / "policy.yaml", "tie_margin", "tie_margin")
    assert watcher.poll_once() == (False, v1, None) or not watcher.poll_once().changed
    assert watcher.version == v1


HOSTILE = {
    "yaml error": ("card_payments.yaml", "    then: reject\n", "    then: reject\n   - broken: [\n",
                   "card_payments.yaml:"),
    "unknown field": ("card_payments.yaml", "    priority: 100\n    when: event.amount >= 10000",
                      "    priority: 100\n    whn: event.amount >= 10000",
                      "card_payments.yaml:10: rule 'very-large-amount': unknown field 'whn' (did you mean 'when'?)"),
    "expression does not compile": ("card_payments.yaml", "when: event.amount >= 2500", "when: event.amount >== 2500",
                                    "rule 'large-amount': `when` does not compile: CEL syntax error"),
    "python internals": ("card_payments.yaml", "when: event.amount >= 2500",
                         "when: event.__class__.__bases__[0].__subclasses__() == []",
                         "rule 'large-amount': `when` does not compile: names starting with '_' are not allowed"),
    "user text": ("card_payments.yaml", "when: event.amount >= 2500", "when: event.memo.contains('x')",
                  "event.memo is user-written text"),
    "huge expression": ("card_payments.yaml", "when: event.amount >= 2500",
                        "when: " + " || ".join(["event.amount >= 2500"] * 150),
                        "rule 'large-amount': `when` does not compile: condition is"),
    "deep nesting": ("card_payments.yaml", "when: event.amount >= 2500",
                     "when: " + "(" * 40 + "event.amount >= 2500" + ")" * 40, "nests brackets more than 16 deep"),
    "duplicate id": ("card_payments.yaml", "  - id: large-amount\n", "  - id: very-large-amount\n",
                     "rule 'very-large-amount': duplicate rule id (first defined at card_payments.yaml:6)"),
    "unknown list": ("card_payments.yaml", "lists.blocked_devices", "lists.blocked_device",
                     "unknown list 'blocked_device'"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_bad_edit_changes_nothing_and_says_what_is_wrong(case: str, watcher: RuleWatcher, rules_dir: Path) -> None:
    file, old, new, expected = HOSTILE[case]
    v1 = watcher.version
    original = (rules_dir / file).read_text()
    edit(rules_dir / file, old, new)
    result = watcher.poll_once()
    assert not result.changed and result.version == v1 and watcher.version == v1
    assert expected in result.error, result.error
    assert verdict(watcher) is Decision.REVIEW  # the last good set keeps deciding
    assert metric(watcher, "tollgate_rules_reload_failures_total") == "tollgate_rules_reload_failures_total 1.0"
    assert metric(watcher, "tollgate_rules_last_reload_ok") == "tollgate_rules_last_reload_ok 0.0"
    assert not watcher.poll_once().error  # the same broken files are reported once
    (rules_dir / file).write_text(original)  # fixing it (back to the content of v1) clears the error
    edit(rules_dir / file, old, old)
    watcher.poll_once()
    assert watcher.version == v1 and watcher.last_error is None
    # ... and the health gauge says so again (it stayed 0 after the revert before)
    assert metric(watcher, "tollgate_rules_last_reload_ok") == "tollgate_rules_last_reload_ok 1.0"
    assert metric(watcher, "tollgate_rules_reload_failures_total") == "tollgate_rules_reload_failures_total 1.0"


@pytest.mark.parametrize("payload, expected", [
    (b"a: &a [1, 2]\nb: [*a, *a]\n", "bomb.yaml:1: YAML anchors and aliases"),
    (b"rules: []\n# caf\xe9\n", "bomb.yaml:2: not valid UTF-8"),
])
def test_new_hostile_file_is_refused(payload: bytes, expected: str, watcher: RuleWatcher, rules_dir: Path) -> None:
    v1 = watcher.version
    (rules_dir / "bomb.yaml").write_bytes(payload)
    result = watcher.poll_once()
    assert expected in result.error and watcher.version == v1


def test_file_disappearing_mid_reload_keeps_the_last_set(watcher: RuleWatcher, rules_dir: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    v1 = watcher.version
    edit(rules_dir / "policy.yaml", "tie_margin: 0.05", "tie_margin: 0.07")
    original = Path.read_bytes
    vanished = []

    def flaky(self: Path) -> bytes:
        if self.name == "allowlists.yaml" and not vanished:
            vanished.append(self)
            raise FileNotFoundError(self)
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", flaky)
    result = watcher.poll_once()
    assert not result.changed and watcher.version == v1
    assert "lists/allowlists.yaml: file disappeared while the rule set was being read" in result.error
    result = watcher.poll_once()  # the file is readable again: the change goes in
    assert result.changed and watcher.current().policy["tie_margin"] == 0.07


def test_deleting_every_file_keeps_the_last_set(watcher: RuleWatcher, rules_dir: Path) -> None:
    v1 = watcher.version
    for path in rules_dir.rglob("*.yaml"):
        if "tests" not in path.parts:
            path.unlink()
    result = watcher.poll_once()
    assert "no rule files found" in result.error and watcher.version == v1


def test_running_worker_sees_an_edit_within_seconds(rules_dir: Path) -> None:
    """A loop standing in for the worker: one guard call per 'batch', as the pipeline does."""
    swaps: list[tuple[str, dict]] = []
    holder: dict[str, Guard] = {}

    def on_swap(guard: Guard, policy: dict) -> None:
        holder["guard"] = guard
        swaps.append((guard.version, policy))

    watcher = follow_rules(rules_dir, on_swap, interval_s=0.1, metrics=RuleMetrics(CollectorRegistry()),
                           redis_clients=_NoRedis())
    stop = threading.Event()
    seen: list[Decision] = []

    def worker() -> None:
        while not stop.is_set():
            g = holder["guard"]
            seen.append(g.apply_batch([EVENT], [CTX], [{}], [ProposedVerdict(Decision.PASS)])[0].verdict)
            stop.wait(0.01)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        started = time.monotonic()
        while not seen and time.monotonic() - started < 5.0:  # the worker's first decision
            stop.wait(0.01)
        assert seen and seen[-1] is Decision.REVIEW
        edited_at = time.monotonic()
        edit(rules_dir / "card_payments.yaml", "when: event.amount >= 2500", "when: event.amount >= 5000")
        edit(rules_dir / "policy.yaml", "tie_margin: 0.05", "tie_margin: 0.09")
        # Two files were edited: a poll may see one before the other (each a valid version).
        while (seen[-1] is not Decision.PASS or swaps[-1][1]["tie_margin"] != 0.09) \
                and time.monotonic() - edited_at < 5.0:
            stop.wait(0.02)
        assert seen[-1] is Decision.PASS, "the edit was not applied within 5 s"
        assert swaps[-1][1]["tie_margin"] == 0.09
    finally:
        stop.set()
        thread.join()
        watcher.stop()


def test_first_load_of_a_bad_set_fails_loudly(tmp_path: Path) -> None:
    from engine.rules.loader import RuleSetError

    (tmp_path / "r.yaml").write_text("rules: [{id: x}]\n")
    with pytest.raises(RuleSetError, match="r.yaml:1: rule 'x': missing required field"):
        RuleWatcher(tmp_path, metrics=RuleMetrics(CollectorRegistry()))


def test_settling_turns_a_multi_file_edit_into_one_version(rules_dir: Path) -> None:
    now = [0.0]
    watcher = RuleWatcher(rules_dir, interval_s=0.05, settle_s=0.2, metrics=RuleMetrics(CollectorRegistry()),
                          redis_clients=_NoRedis(), clock=lambda: now[0])
    v1 = watcher.version
    edit(rules_dir / "card_payments.yaml", "when: event.amount >= 2500", "when: event.amount >= 5000")
    assert not watcher.poll_once().changed  # seen, not yet settled
    edit(rules_dir / "policy.yaml", "tie_margin: 0.05", "tie_margin: 0.09")
    assert not watcher.poll_once().changed  # changed again: the clock restarts
    now[0] += 0.1
    assert not watcher.poll_once().changed  # still settling
    now[0] += 0.15
    result = watcher.poll_once()
    assert result.changed and result.version != v1
    assert watcher.current().policy["tie_margin"] == 0.09 and verdict(watcher) is Decision.PASS
