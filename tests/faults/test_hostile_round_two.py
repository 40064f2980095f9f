"""Hostile input, round two (issue 31): escapes that reach a terminal, pages that crash a parser, small folders."""

from __future__ import annotations

import contextlib
import io
import json

from faults_support import cli, fake_components, index_args, search_args, search_hits

DEEP = 3_000  # a real page of the SQLite manual nests about 2,800 levels


def deep_html(levels: int, word: str) -> str:
    return f"<html><body><h1>Deep</h1>{'<div>' * levels}<p>{word} at the bottom</p>{'</div>' * levels}</body></html>"


def test_3_a_deeply_nested_html_page_is_indexed_and_found(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deep.html").write_text(deep_html(DEEP, "abyssword"), encoding="utf-8")
    (docs / "plain.md").write_text("# Plain\n\nplainword here.\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0 and "2 files" in built.out, built.err
    [hit] = search_hits(cli(*search_args("abyssword", docs, tmp_path / "idx", "-k", "1")))
    assert hit["doc_id"] == "deep.html" and "abyssword at the bottom" in hit["text"]


def test_3_a_file_its_parser_fails_on_is_skipped_and_counted(tmp_path, monkeypatch):
    from rag.ingest.formats import html

    def broken(text):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(html, "html_layout", broken)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.html").write_text("<p>pageword</p>")
    (docs / "plain.md").write_text("# Plain\n\nplainword here.\n")
    built = cli(*index_args(docs, tmp_path / "idx"))
    assert built.rc == 0, built.err
    assert "1 files" in built.out and "skipped: 1 unparsable HTML" in built.out
    [hit] = search_hits(cli(*search_args("plainword", docs, tmp_path / "idx", "-k", "1")))
    assert hit["doc_id"] == "plain.md"


def test_15_an_index_path_that_is_a_file_is_one_line(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\naword.\n")
    (tmp_path / "file").write_text("not a folder")
    for where in (tmp_path / "file", tmp_path / "file" / "idx"):
        run = cli(*index_args(docs, where))
        assert run.rc == 2 and run.out == "" and len(run.err_lines) == 1, run
        assert "is a file, not a folder" in run.err and "free some space" not in run.err
        found = cli(*search_args("aword", docs, where))  # a search still answers, from memory, and says why
        assert found.rc == 0 and search_hits(found)[0]["doc_id"] == "a.md"
        assert len(found.err_lines) == 1 and "is a file, not a folder" in found.err and "File exists" not in found.err
