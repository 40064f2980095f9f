"""The settings file: flags over environment over file over defaults, sources shown, keys never echoed."""

from __future__ import annotations

import os

import pytest

from agent.cli import main
from agent.config import ConfigError, resolve


@pytest.fixture
def settings_file(tmp_path, monkeypatch):
    path = tmp_path / "config.toml"
    monkeypatch.setenv("SMOLDOCS_CONFIG", str(path))
    for name in ("SMOLDOCS_BASE_URL", "SMOLDOCS_TOOLS", "SMOLDOCS_API_KEY", "SMOLDOCS_API_KEY_FILE", "SMOLDOCS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return path


def test_flags_beat_environment_beat_file_beat_defaults(settings_file, monkeypatch):
    settings_file.write_text('base_url = "http://file:1/v1"\ntools = "model"\nn_ctx = 4096\n')
    monkeypatch.setenv("SMOLDOCS_TOOLS", "search-first")
    got = resolve({"base_url": "http://flag:2/v1"}, os.environ)
    assert (got.values["base_url"], got.sources["base_url"]) == ("http://flag:2/v1", "flag --base-url")
    assert (got.values["tools"], got.sources["tools"]) == ("search-first", "env SMOLDOCS_TOOLS")
    assert (got.values["n_ctx"], got.sources["n_ctx"]) == (4096, "file")
    assert (got.values["decoding"], got.sources["decoding"]) == ("auto", "default")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('tools = "modle"', "tools = 'modle' is not one of auto, search-first, model"),
        ("n_ctx = -3", "n_ctx = -3 is not a whole number >= 1"),
        ('base_url = 8080', "base_url = 8080 is not text in quotes"),
        ('colour = "blue"', "unknown key 'colour'"),
        ('api_key = "sk-secret"', "api_key: an API key does not belong in the settings file"),
        ("base_url = ", "is not valid TOML"),
    ],
)
def test_bad_file_is_one_line_naming_key_and_fix(settings_file, capsys, text, expected):
    settings_file.write_text(text + "\n")
    assert main(["config"]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and str(settings_file) in err and "\n" not in err
    assert "sk-secret" not in err


def test_config_prints_sources_and_never_the_key(settings_file, capsys, monkeypatch):
    settings_file.write_text('base_url = "http://127.0.0.1:8080/v1"\n')
    monkeypatch.setenv("SMOLDOCS_API_KEY", "sk-secret-456")
    assert main(["config", "--model-name", "smollm2"]) == 0
    out = capsys.readouterr().out
    assert f"settings file: {settings_file}" in out
    assert any("base_url" in line and "http://127.0.0.1:8080/v1" in line and line.endswith("file") for line in out.splitlines())
    assert any("model_name" in line and line.endswith("flag --model-name") for line in out.splitlines())
    assert any(line.startswith("api_key") and "set, not shown" in line and "env SMOLDOCS_API_KEY" in line for line in out.splitlines())
    assert "sk-secret" not in out


def test_api_key_file_must_be_private(settings_file, tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-from-file\n")
    settings_file.write_text(f'api_key_file = "{key}"\n')
    key.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600") as err:
        resolve({}, os.environ)
    assert "sk-from-file" not in str(err.value)
    key.chmod(0o600)
    got = resolve({}, os.environ)
    assert got.api_key == "sk-from-file" and got.api_key_source == "api_key_file (file)"


def test_decoding_flag_beats_decoding_from_the_file(settings_file):
    from agent import config

    settings_file.write_text('decoding = "guarded"\n')
    assert config.settings_from({"decoding": "constrained"}, os.environ).agent.decoding == "constrained"
    assert config.settings_from({"decoding": None}, os.environ).agent.decoding == "guarded"


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0"])
@pytest.mark.parametrize("where", ["flag", "env", "file"])
def test_bad_timeouts_are_one_line_wherever_they_come_from(settings_file, monkeypatch, capsys, value, where):
    argv = ["ask", "what?", "--base-url", "http://127.0.0.1:9/v1", "--docs", "/nonexistent-docs"]
    if where == "flag":
        argv += ["--connect-timeout", value]
    elif where == "env":
        monkeypatch.setenv("SMOLDOCS_CONNECT_TIMEOUT", value)
    else:
        settings_file.write_text(f"connect_timeout = {value}\n")  # nan and inf are TOML floats
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "connect_timeout" in err or "--connect-timeout" in err or "SMOLDOCS_CONNECT_TIMEOUT" in err
    assert "a number of seconds above 0" in err and "\n" not in err and "Traceback" not in err


def test_a_zero_first_token_timeout_is_refused_not_replaced(settings_file, capsys):
    assert main(["config", "--first-token-timeout", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--first-token-timeout" in err and "a number of seconds above 0" in err and "\n" not in err


def test_a_small_timeout_is_kept_as_given(settings_file):
    from agent import config
    from agent.opening import server_config

    given = {"base_url": "http://127.0.0.1:9/v1", "first_token_timeout": 0.25, "connect_timeout": None}
    settings = config.settings_from(given, os.environ)
    assert (server_config(settings).first_token_timeout, server_config(settings).connect_timeout) == (0.25, 5.0)


def test_credentials_in_the_base_url_are_never_printed(settings_file, capsys):
    settings_file.write_text('base_url = "http://alice:hunter2@127.0.0.1:9/v1"\n')
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out and "alice" not in out
    assert any(line.startswith("base_url") and "http://***@127.0.0.1:9/v1" in line for line in out.splitlines())
