"""The answer path never raises on real or generated text (benchmarks.answer_fuzz; issue #36).

The long run pushes every document of the real-docs suite (`python -m benchmarks.answer_fuzz --realdocs`); here a
few docs_corpus pages, the shapes that crashed before, and generated text, so CI runs the same pushes in seconds."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.answer_fuzz import Tally, generated, main, push_document

CORPUS = Path(__file__).resolve().parent.parent / "docs_corpus"


def test_docs_corpus_pages_go_through_the_answer_path():
    tally = Tally()
    for path in sorted(CORPUS.rglob("*.md"))[:2]:
        push_document(path.relative_to(CORPUS).as_posix(), path.read_text(encoding="utf-8"), tally)
    assert tally.crashes == []
    assert tally.documents == 2 and tally.sentences > 30  # the pushes reached the sentences


@pytest.mark.parametrize("doc_id, text", [
    ("a.md", "# Sep\n\nFields are separated by ` ` (a single space).\n"),  # issue #36 defect 1, from git-doc
    ("a.md", "# K\n\nPress `\t` then ` ` and `Esc`.\n\nUse `` ` `` for a backtick.\n"),
    ("a.rst", "Title\n=====\n\nSeparated by `` `` and ``\u202e``.\n"),
    ("a.html", "<h1>x</h1><p>Run <code> </code> then <code>\x1b[2J</code>.</p>"),
])
def test_shapes_that_crashed_go_through(doc_id, text):
    tally = Tally()
    push_document(doc_id, text, tally)
    assert tally.crashes == [] and tally.chunks >= 1


def test_a_crash_is_recorded_with_its_chunk(monkeypatch):
    import rag.verification.specifics as specifics

    def boom(text):
        raise IndexError("planted")

    monkeypatch.setattr(specifics, "specifics", boom)
    tally = Tally()
    push_document("a.md", "# A\n\nThe cache keeps keys for every token.\n", tally)
    assert len(tally.crashes) == 1 and "a.md#" in tally.crashes[0] and "planted" in tally.crashes[0]


def test_generated_text_goes_through():
    tally = Tally()
    generated(seconds=8, tally=tally, examples=25)
    assert tally.crashes == [] and tally.documents >= 5


def test_the_command_reports_its_counts(capsys):
    assert main(["--seconds", "1"]) == 0
    assert "exceptions 0" in capsys.readouterr().out
