"""Poisoned outcomes against the real scheduler (Redis lock and state, registry, stores):
the label-shift alarm halts a cycle, the trusted held-out set is out of the poisoner's
reach, the gate judges final verdicts, and a drill never promotes. A small simulated
world written in event time by ``feedback.learn.rehearse``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.settings import PathSettings, RedisSettings, Settings, TrustSettings

DAY = 86_400_000
torch.set_num_threads(1)


@pytest.fixture(scope="module")
def world():
    from engine.offline.simulate.simulator import SimConfig
    from feedback.learn.rehearse import build_world

    return build_world(SimConfig(customers=300, terminals=600, days=10, seed=4, legit_confirm_rate=0.3,
                                 outcome_delay_mean_days=2.0, review_rate=0.03, drain_outcomes=False))


def _settings(stack, unique, tmp_path, trusted=()):
    settings = Settings(redis=RedisSettings(url=stack.redis_url, key_prefix=f"tgpoison{unique}"),
                        paths=PathSettings(state_dir=tmp_path, models_dir=tmp_path / "models",
                                           reports_dir=tmp_path / "reports", examples_dir=tmp_path / "examples"))
    return settings.model_copy(update={"feedback": settings.feedback.model_copy(update={
        "trust": TrustSettings(trusted_sources=tuple(trusted))})})


def _loop(world, stack, unique, tmp_path, trusted=(), settings=None):
    import redis

    from engine.assemble import load_guard
    from engine.model.registry import ModelRegistry
    from engine.stages.encode import FieldIsolatedEncoder
    from feedback.learn.rehearse import LoopRehearsal, train_initial
    from feedback.learn.scheduler import FineTuneScheduler

    settings = settings or _settings(stack, unique, tmp_path, trusted)
    client = redis.Redis.from_url(stack.redis_url)
    registry = ModelRegistry(settings, client)
    encoder = FieldIsolatedEncoder()
    train_initial(world, world.start_ms + 3 * DAY, registry, encoder)
    sched = FineTuneScheduler(settings, client, registry=registry, encoder=encoder, progress=False)
    loop = LoopRehearsal(world, sched, serve_from_ms=world.start_ms + 3 * DAY,
                         rules_version=str(load_guard(settings).version))
    loop.advance_to(world.start_ms + 9 * DAY)
    return sched, registry


def test_flipped_labels_halt_the_cycle_and_a_drill_never_promotes(world, stack, unique, redis_client, tmp_path):
    from feedback.trust import flip_labels

    sched, registry = _loop(world, stack, unique, tmp_path)
    serving = registry.serving_version()
    now, since = world.start_ms + 9 * DAY, world.start_ms + 7 * DAY
    halted = sched.run_cycle(now, train_since_ms=since, poison=flip_labels(1.0), dry_run=True)
    assert halted.status == "halted", (halted.status, halted.reasons)
    assert any("label shift in all" in r for r in halted.reasons), halted.reasons

    # No trusted source configured: the held-out set is a hash share the poisoner writes
    # too, so nothing is promoted, whatever the gate's bars say.
    clean = sched.run_cycle(now, train_since_ms=since, dry_run=True)
    assert clean.status == "refused", (clean.status, clean.reasons)
    assert any("held-out set untrusted" in r for r in clean.reasons), clean.reasons
    assert registry.serving_version() == serving  # a dry run never moves the pointer
    assert "last_run_ms" not in sched.state()  # nor the timer
    report = json.loads((Path(clean.report_dir) / "gate_report.json").read_text())
    assert report["judged"] == "final" and report["migration_final"] is not None
    assert report["migration_model"] is not None and report["dry_run"] is True


def test_poisoned_labels_never_reach_the_trusted_held_out_set(world, stack, unique, redis_client, tmp_path):
    from feedback.trust import flip_labels

    sched, _ = _loop(world, stack, unique, tmp_path, trusted=("review_queue",))
    now = world.start_ms + 9 * DAY
    labels = sched.labels.read(since_ms=now - 7 * DAY, until_ms=now)
    reviews = labels[labels["outcome_source"] == "review_queue"]
    assert len(reviews) > 0, "the world has no analyst reviews: the test proves nothing"
    result = sched.run_cycle(now, poison=flip_labels(0.2, ("review_queue",)), dry_run=True)
    assert result.status in ("refused", "would-promote"), (result.status, result.reasons)
    report = json.loads((Path(result.report_dir) / "gate_report.json").read_text())
    assert report["heldout"]["trusted"] is True
    assert set(report["heldout"]["by_source"]) == {"review_queue"}
    assert report["n_heldout"] == len(reviews)


@pytest.mark.parametrize("share", ["1.0", "0.3"])
def test_the_drill_command_shows_the_poisoning_stopped(world, stack, unique, redis_client, tmp_path, monkeypatch,
                                                       share):
    """``tollgate feedback drill --flip-labels SHARE`` with the default settings on the
    configured stores: stopped (exit 0) by the label-shift alarm, even at 30 % (issue
    #21: promoted before); the serving model is untouched."""
    from typer.testing import CliRunner

    from engine.interfaces import cli
    from engine.settings import get_settings

    for key, value in {"TOLLGATE_REDIS__URL": stack.redis_url, "TOLLGATE_REDIS__KEY_PREFIX": f"tgpoison{unique}",
                       "TOLLGATE_PATHS__STATE_DIR": str(tmp_path), "TOLLGATE_PATHS__MODELS_DIR": str(tmp_path / "models"),
                       "TOLLGATE_PATHS__REPORTS_DIR": str(tmp_path / "reports"),
                       "TOLLGATE_PATHS__EXAMPLES_DIR": str(tmp_path / "examples")}.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    cli._register_all()
    try:
        _, registry = _loop(world, stack, unique, tmp_path, settings=get_settings())
        serving = registry.serving_version()
        now, since = world.start_ms + 9 * DAY, world.start_ms + 7 * DAY
        result = CliRunner().invoke(cli.app, ["feedback", "drill", "--flip-labels", share, "--at-ms", str(now),
                                              "--since-ms", str(since)])
        assert result.exit_code == 0, result.output
        assert "stopped by the label-shift alarm" in result.output
        assert registry.serving_version() == serving
    finally:
        get_settings.cache_clear()
