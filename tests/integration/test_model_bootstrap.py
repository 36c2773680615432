"""``tollgate model bootstrap`` against the real Redis: the container stack's init step.

docker-compose.yml runs it once before the engine, serve, feedback and scheduler
services start, because they need a serving model (``engine.model.locate.find_model_dir``
raises ModelNotFound on an empty models volume). It must leave a loadable model that
the registry serves, and do nothing at all when one already serves (a second
`docker compose up`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.assemble import load_model_components
from engine.model.locate import ModelNotFound, find_model_dir
from engine.settings import PathSettings, RedisSettings, Settings

pytestmark = pytest.mark.integration


def _bootstrap(env: dict[str, str]) -> subprocess.CompletedProcess:
    # The smallest world that still trains: two simulated days, one epoch.
    return subprocess.run([sys.executable, "-c", "from engine.interfaces.cli import main; main()", "model", "bootstrap",
                           "--history-days", "2", "--epochs", "1", "--seed", "5"],
                          env=env, capture_output=True, text=True, timeout=600)


def test_bootstrap_trains_and_promotes_once_then_leaves_the_serving_model_alone(stack, unique, redis_client,
                                                                                 tmp_path: Path) -> None:
    prefix = f"tgboot{unique}"
    models = tmp_path / "models"
    settings = Settings(redis=RedisSettings(url=stack.redis_url, key_prefix=prefix),
                        paths=PathSettings(state_dir=tmp_path, models_dir=models, reports_dir=tmp_path / "reports"))
    with pytest.raises(ModelNotFound):
        find_model_dir(settings)  # what the engine meets on an empty volume
    env = dict(os.environ, TOLLGATE_REDIS_URL=stack.redis_url, TOLLGATE_REDIS__KEY_PREFIX=prefix,
               TOLLGATE_PATHS__STATE_DIR=str(tmp_path), TOLLGATE_PATHS__MODELS_DIR=str(models),
               TOLLGATE_PATHS__REPORTS_DIR=str(tmp_path / "reports"))

    first = _bootstrap(env)
    assert first.returncode == 0, first.stdout + first.stderr
    serving = redis_client.get(f"{prefix}:model:serving")
    assert serving is not None and serving.decode().startswith("bootstrap-")
    version = serving.decode()
    assert find_model_dir(settings) == models / version
    assert load_model_components(models / version)["model_version"] == version

    second = _bootstrap(env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"{version} is serving" in second.stdout and "not retraining" in second.stdout
    assert redis_client.get(f"{prefix}:model:serving") == serving
    assert sorted(p.name for p in models.iterdir() if p.is_dir()) == [version]
