"""The faust app keeps its files under the settings' state dir, never in the working
directory (the repo root in tests, a read-only /app in the container image)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.settings import PathSettings, Settings
from feedback.stream.app import build_app


def test_faust_data_dir_is_under_the_state_dir_not_the_working_directory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    state = tmp_path / "state"
    settings = Settings(paths=PathSettings(state_dir=state))
    app = build_app(settings, processor=None, app_id="tollgate-feedback-unit")  # type: ignore[arg-type]
    assert Path(app.conf.datadir) == state / "faust" / "tollgate-feedback-unit"
    # What faust does when a worker starts: create its data, app and table directories.
    asyncio.run(app.on_first_start())
    assert (state / "faust" / "tollgate-feedback-unit").is_dir()
    assert Path(app.conf.tabledir).is_relative_to(state)
    assert list(cwd.iterdir()) == [], "faust wrote into the working directory"
