"""The rehearsal's first model: the small weak one by default, and with ``derived=True``
the derivations a trainer turns on by default (``ModelConfig.default_for``), so that
``ops/bench/feedback_loop.py --derived-inputs`` rehearses the loop on the model users get."""

from __future__ import annotations

from typing import Any

import pytest

from engine.model import ModelConfig
from engine.model.config import DERIVATIONS
from engine.offline.simulate.simulator import SimConfig
from engine.stages.encode import FieldIsolatedEncoder
from feedback.learn.rehearse import build_world, train_initial

DAY = 86_400_000


class _Registry:
    """Keeps what ``train_initial`` registers and promotes."""

    def __init__(self) -> None:
        self.models: dict[str, Any] = {}
        self.serving: str | None = None

    def register(self, model: Any, card: Any, *, version: str, now_ms: int) -> str:
        self.models[version] = model
        return version

    def promote(self, version: str, **_: Any) -> None:
        self.serving = version


@pytest.fixture(scope="module")
def world():
    return build_world(SimConfig(customers=60, terminals=120, days=3, seed=4, drain_outcomes=False))


@pytest.mark.parametrize("derived", [False, True])
def test_first_model_has_the_default_derivations_only_when_asked(world, derived):
    registry = _Registry()
    version = train_initial(world, world.start_ms + 2 * DAY, registry, FieldIsolatedEncoder(), derived=derived)
    assert registry.serving == version
    config: ModelConfig = registry.models[version].config
    assert (config.d_model, config.n_layers, config.n_heads) == (32, 1, 2)
    flags = {flag: getattr(config, flag) for flag in DERIVATIONS}
    expected = ModelConfig.default_for(config.inputs)
    assert flags == ({flag: getattr(expected, flag) for flag in DERIVATIONS} if derived
                     else dict.fromkeys(DERIVATIONS, False))
    assert any(flags.values()) == derived
