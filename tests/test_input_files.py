"""A user's input files and stdin are read bounded: an endless or huge input is one line, not a MemoryError."""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.mcp_support import ROOT

MEMORY_CAP = 3 * 2**30  # address space for the child: imports fit, reading /dev/zero whole does not


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _smoldocs(*argv: str, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agent", *argv], stdin=stdin or subprocess.DEVNULL, capture_output=True,
                          text=True, cwd=ROOT, timeout=120, preexec_fn=_capped)


def _one_line(run: subprocess.CompletedProcess, fragment: str) -> None:
    assert run.returncode == 2 and run.stdout == "", run
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert fragment in run.stderr, run.stderr


def test_an_endless_answer_on_stdin_is_refused_in_one_line(tmp_path):
    shown = tmp_path / "s.txt"
    shown.write_text('[{"n": 1, "chunk_id": "a.md#0"}]')
    with open("/dev/zero", "rb") as zero:
        run = _smoldocs("check", "-", "--shown", str(shown), stdin=zero)
    _one_line(run, "the answer on stdin is longer than")


def test_an_endless_shown_file_is_refused_in_one_line(tmp_path):
    answer = tmp_path / "a.txt"
    answer.write_text("The cache stores keys [1].")
    _one_line(_smoldocs("check", str(answer), "--shown", "/dev/zero"), "the --shown file /dev/zero is larger than")


def test_an_endless_questions_file_is_refused_in_one_line():
    _one_line(_smoldocs("eval", "--questions", "/dev/zero", "--no-model"), "the questions file /dev/zero is larger than")


def test_a_file_within_its_limit_is_read_whole_and_one_past_it_is_refused(tmp_path):
    from agent.errors import UsageError
    from agent.input_files import read_text

    path = tmp_path / "f.txt"
    path.write_bytes("é".encode() * 50)  # 100 bytes
    assert read_text(str(path), "the test file", limit=100) == "é" * 50
    with pytest.raises(UsageError, match="the test file .* is larger than 99 bytes"):
        read_text(str(path), "the test file", limit=99)
