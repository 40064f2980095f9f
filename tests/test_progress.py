"""Indexing progress never goes silent: every stage reports, a pipe gets a line every few seconds, --quiet hushes it."""

from __future__ import annotations

import io
import shutil
import time
from pathlib import Path

from agent.surfaces.progress import ProgressBar
from fakes import HashEmbedder, WordTokenizer
from rag.indexing.build import IndexProgress, open_index

DATA = Path(__file__).parent / "data" / "retrieval_docs"


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_every_stage_reports_and_chunking_names_each_file_before_it_starts(tmp_path):
    shutil.copytree(DATA, tmp_path / "docs")
    events: list[IndexProgress] = []
    open_index(tmp_path / "docs", WordTokenizer(), HashEmbedder(), index_dir=tmp_path / "idx", progress=events.append)
    stages = [e.stage for e in events]
    assert stages[0] == "scan" and stages[-1] == "done"
    assert [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s] == ["scan", "chunk", "embed", "save", "done"]
    scans = [e for e in events if e.stage == "scan"]
    assert [e.done for e in scans] == [0, 1, 2, 3, 4, 5, 6, 6] and scans[-1].total == 6
    chunks = [(e.done, e.message) for e in events if e.stage == "chunk"]
    docs = sorted({m for _, m in chunks})
    assert len(docs) == 6 and chunks[:2] == [(0, docs[0]), (1, docs[0])]  # announced, then done
    assert [e.done for e in events if e.stage == "save"] == [0, 1]


def test_a_pipe_gets_a_plain_line_every_interval_while_a_stage_runs():
    pipe = io.StringIO()
    bar = ProgressBar(pipe, interval=0.1)
    bar(IndexProgress("chunk", 2, 7, message="big.md"))
    time.sleep(0.45)
    bar(IndexProgress("done", 7, 7))
    time.sleep(0.25)
    bar.close()
    lines = pipe.getvalue().splitlines()
    assert len(lines) >= 3 and all(line.startswith("smoldocs: chunking  2/7 files  big.md  (") for line in lines)
    assert "\r" not in pipe.getvalue() and "#" not in pipe.getvalue()
    assert len(lines) <= 5  # nothing after "done"


def test_a_terminal_redraws_with_the_time_spent_when_no_event_comes():
    tty = Tty()
    bar = ProgressBar(tty)
    bar(IndexProgress("scan", 40, 0))
    assert tty.getvalue().endswith("scanning  [........................] 40 files found")
    bar(IndexProgress("chunk", 0, 3, message="huge.md"))
    time.sleep(1.2)
    bar.close()
    assert "chunking  [........................] 0/3 files  huge.md  (1 s)" in tty.getvalue()
    assert tty.getvalue().endswith("\r\x1b[K")  # the line is cleared at the end


def test_quiet_prints_only_notices():
    pipe = io.StringIO()
    bar = ProgressBar(pipe, quiet=True, interval=0.05)
    bar(IndexProgress("embed", 1, 9))
    time.sleep(0.2)
    bar(IndexProgress("notice", message="index settings changed (chunker); rebuilding it"))
    bar.close()
    assert pipe.getvalue() == "smoldocs: index settings changed (chunker); rebuilding it\n"


def test_quiet_is_an_option_of_every_command_that_opens_the_index():
    from agent.cli import build_parser

    parser = build_parser()
    for command in ("index", "search", "ask", "pack", "chat"):
        argv = [command, "x", "--quiet"] if command in ("search", "ask", "pack") else [command, "-q"]
        assert parser.parse_args(argv).quiet is True
