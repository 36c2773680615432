"""Closed by default (issue #20, items 6 and 7): the settings refuse an empty token and
recording without one; `tollgate serve` refuses a non-loopback address without a token;
the interfaces get a read-only view of the stream's Redis context unless told to record."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from engine.interfaces.http_guard import InsecureExposure, check_exposure, json_content_type
from engine.settings import HttpSettings, Settings


def test_an_empty_token_is_a_configuration_error(monkeypatch):
    for empty in ("", "   "):
        with pytest.raises(ValidationError, match="set but empty"):
            HttpSettings(api_token=SecretStr(empty))
    monkeypatch.setenv("TOLLGATE_HTTP__API_TOKEN", "")
    with pytest.raises(ValidationError, match="TOLLGATE_HTTP__API_TOKEN"):
        Settings()


def test_one_clients_share_cannot_exceed_the_whole_queue():
    with pytest.raises(ValidationError, match="max_client_queued_events"):
        HttpSettings(max_client_queued_events=10, max_queued_events=5)


def test_recording_context_needs_a_token():
    with pytest.raises(ValidationError, match="record_context"):
        HttpSettings(record_context=True)
    assert HttpSettings(record_context=True, api_token=SecretStr("t0ken")).record_context


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "tollgate.example.com", "[::]"])
def test_no_token_means_loopback_only(host):
    with pytest.raises(InsecureExposure, match="without an API token"):
        check_exposure(host, HttpSettings())
    check_exposure(host, HttpSettings(api_token=SecretStr("t0ken")))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost", "[::1]"])
def test_loopback_needs_no_token(host):
    check_exposure(host, HttpSettings())


def test_json_content_types():
    assert json_content_type("application/json")
    assert json_content_type("Application/JSON; charset=UTF-8")
    for bad in (None, "", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1",
                "multipart/form-data; boundary=x"):
        assert not json_content_type(bad), bad


def _cli(monkeypatch, env: dict[str, str], args: list[str]):
    from typer.testing import CliRunner

    from engine.interfaces import cli
    from engine.settings import get_settings

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    cli._register_all()
    try:
        return CliRunner().invoke(cli.app, args)
    finally:
        get_settings.cache_clear()


def test_serve_refuses_a_public_address_without_a_token(monkeypatch, tmp_path):
    # No model exists under models_dir: the refusal comes before anything is loaded.
    monkeypatch.delenv("TOLLGATE_HTTP__API_TOKEN", raising=False)
    result = _cli(monkeypatch, {"TOLLGATE_PATHS__MODELS_DIR": str(tmp_path)}, ["serve", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "without an API token" in result.output


def test_serve_refuses_an_empty_token(monkeypatch, tmp_path):
    result = _cli(monkeypatch, {"TOLLGATE_HTTP__API_TOKEN": "", "TOLLGATE_PATHS__MODELS_DIR": str(tmp_path)},
                  ["serve"])
    assert result.exit_code == 2 and "set but empty" in result.output


def test_the_interfaces_read_the_streams_context_and_write_none():
    from engine.assemble import make_store

    settings = Settings()
    assert make_store(settings, "redis").read_only is True
    assert make_store(settings, "redis", record=True).read_only is False
