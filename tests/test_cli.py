"""The command line: version, and user mistakes as one line with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agent import __version__
from agent.cli import main


def test_version_prints_and_exits_zero():
    out = subprocess.run([sys.executable, "-m", "agent", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"smoldocs {__version__}"


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for command in ("chat", "ask", "search", "index", "pack", "eval", "check", "mcp"):
        assert command in text


def _one_line_error(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("smoldocs: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_missing_model_is_one_line(capsys, tmp_path):
    err = _one_line_error(capsys, ["ask", "what?", "--model", str(tmp_path / "missing.gguf")])
    assert "missing.gguf" in err and "--model" in err


def test_not_gguf_is_one_line(capsys, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    err = _one_line_error(capsys, ["ask", "what?", "--model", str(bad)])
    assert "not a GGUF" in err


def test_env_model_is_used(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLDOCS_MODEL", str(tmp_path / "from-env.gguf"))
    err = _one_line_error(capsys, ["ask", "what?"])
    assert "from-env.gguf" in err


def test_missing_docs_folder_is_one_line(capsys, tmp_path):
    err = _one_line_error(capsys, ["search", "kv cache", "--docs", str(tmp_path / "nowhere")])
    assert "nowhere" in err


def test_mcp_with_a_missing_docs_folder_is_one_line(capsys, tmp_path):
    err = _one_line_error(capsys, ["mcp", "--docs", str(tmp_path / "nowhere")])
    assert "nowhere" in err and "--docs" in err


@pytest.mark.parametrize("command", [["index"], ["search", "kv cache"], ["ask", "what?"], ["chat"], ["mcp"], ["pack", "kv"]])
def test_an_empty_docs_flag_is_one_line_not_the_current_folder(capsys, tmp_path, monkeypatch, command):
    (tmp_path / "a.md").write_text("# A\n\nThe frobnicator.\n")
    monkeypatch.chdir(tmp_path)  # --docs "" once indexed the current folder (1,051 files, 2.29 GB)
    err = _one_line_error(capsys, [*command, "--docs", ""])
    assert "--docs is empty" in err


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_an_empty_question_is_one_line_like_an_empty_search(capsys, question):
    err = _one_line_error(capsys, ["ask", question])
    assert "question is empty" in err
