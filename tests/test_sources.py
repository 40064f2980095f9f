"""Outdated and expired documents: front matter, archive folders, dates in many spellings, broken YAML."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from fakes import HashEmbedder, WordTokenizer
from rag.ingest.chunking import ChunkSettings
from rag.indexing.build import IndexProgress, open_index
from rag.ingest.sources import front_matter, parse_date, source_info


def doc(front: str, body: str = "# Title\n\nSome words about context windows.\n") -> str:
    return f"---\n{front}\n---\n{body}"


@pytest.mark.parametrize(
    "doc_id, text, why",
    [
        ("docs/a.md", doc("status: archived"), "status: archived"),
        ("docs/a.md", doc("status: Deprecated"), "status: deprecated"),
        ("docs/a.md", doc("status: superseded"), "status: superseded"),
        ("docs/a.md", doc("superseded_by: docs/b.md"), "superseded by docs/b.md"),
        ("archive/a.md", "# Old notes\n", "in folder archive/"),
        ("team/archived/a.md", "# Old notes\n", "in folder archived/"),
        ("deprecated/a.txt", "Old notes.\n", "in folder deprecated/"),
    ],
)
def test_a_document_is_outdated_by_front_matter_or_folder(doc_id, text, why):
    info = source_info(doc_id, text)
    assert info.outdated and info.why == why and info.notice is None


@pytest.mark.parametrize(
    "doc_id, text",
    [
        ("docs/a.md", doc("status: current")),
        ("docs/a.md", "# No front matter\n\nstatus: archived\n"),
        ("docs/archive-policy.md", "# How we archive\n"),  # the word in a file name is not a folder
        ("docs/a.txt", doc("status: archived")),  # only Markdown has front matter
    ],
)
def test_a_current_document_is_not_outdated(doc_id, text):
    assert not source_info(doc_id, text).outdated


def test_superseded_by_is_kept_for_the_reader():
    assert source_info("docs/a.md", doc("superseded_by: docs/b.md")).superseded_by == "docs/b.md"


@pytest.mark.parametrize(
    "value",
    ["2024-05-01", "'2024-05-01'", "2024-05-01T10:30:00Z", "2024/05/01", "1 May 2024", "May 1, 2024", "May 1 2024"],
)
def test_expiry_dates_in_unambiguous_spellings_are_read(value):
    info = source_info("docs/a.md", doc(f"expires: {value}"))
    assert info.expires == "2024-05-01" and info.notice is None
    assert info.expired(dt.date(2024, 5, 2)) and not info.expired(dt.date(2024, 5, 1))


@pytest.mark.parametrize("value", ["01/05/2024", "next spring", "20240501", "2024-13-01"])
def test_an_unreadable_expiry_keeps_the_page_and_says_how_to_write_it(value):
    info = source_info("docs/a.md", doc(f"expires: {value}"))
    assert info.expires is None and not info.expired()
    assert "YYYY-MM-DD" in info.notice and "\n" not in info.notice


@pytest.mark.parametrize("front", ["status: [archived", "title: a: b: c", "title: 'unclosed"])
def test_front_matter_that_is_not_yaml_gives_a_notice_and_no_status(front):
    meta, notice = front_matter(doc(front))
    assert meta is None and "not valid YAML" in notice and "indexed as text" in notice
    assert not source_info("docs/a.md", doc(front)).outdated


def test_front_matter_nested_past_the_recursion_limit_gives_a_notice():
    import sys

    deep = "status: " + "[" * sys.getrecursionlimit() * 2 + "]" * sys.getrecursionlimit() * 2
    meta, notice = front_matter(doc(deep))
    assert meta is None and "nests too deep" in notice and "indexed as text" in notice
    assert not source_info("docs/a.md", doc(deep)).outdated


def test_front_matter_that_is_a_list_is_not_metadata():
    meta, notice = front_matter(doc("- status: archived"))
    assert meta is None and "mapping" in notice


def test_parse_date_takes_yaml_dates_and_refuses_the_rest():
    assert parse_date(dt.date(2025, 1, 2)) == dt.date(2025, 1, 2)
    assert parse_date(dt.datetime(2025, 1, 2, 3, 4)) == dt.date(2025, 1, 2)
    assert parse_date(20250102) is None and parse_date(None) is None


def test_the_index_marks_hits_and_reports_bad_front_matter(tmp_path: Path):
    docs = tmp_path / "docs"
    (docs / "archive").mkdir(parents=True)
    (docs / "archive" / "old.md").write_text("# Budget\n\nThe context window is 512 tokens.\n")
    (docs / "new.md").write_text("# Budget\n\nThe context window is 2048 tokens.\n")
    (docs / "broken.md").write_text(doc("status: [archived", "# Broken\n\nThe window budget is described here.\n"))
    (docs / "gone.md").write_text(doc("expires: 2001-01-01", "# Gone\n\nThe context window budget expired.\n"))
    events: list[IndexProgress] = []
    index = open_index(docs, WordTokenizer(), HashEmbedder(64), index_dir=tmp_path / "idx",
                       progress=events.append, chunking=ChunkSettings(max_tokens=40))
    notices = [e.message for e in events if e.stage == "notice"]
    assert len(notices) == 1 and notices[0].startswith("broken.md: front matter is not valid YAML")
    assert any("broken.md" == c.doc_id for c in index.chunks)  # still indexed, as text
    hits = {h.doc_id: h for h in index.search("context window", k=10, mode="bm25")}
    assert hits["archive/old.md"].outdated and not hits["new.md"].outdated
    assert hits["gone.md"].expires == "2001-01-01"
    assert index.source("archive/old.md").why == "in folder archive/"


def test_an_outdated_chunk_ranks_below_a_current_one_on_a_tie_and_current_only_drops_it(tmp_path: Path):
    docs = tmp_path / "docs"
    (docs / "archive").mkdir(parents=True)
    same = "# Budget\n\nThe context window holds the prompt and the answer.\n"
    (docs / "archive" / "a.md").write_text(same)  # sorts first: without the tie rule it would rank first
    (docs / "b.md").write_text(same)
    for current_only, expected in ((False, ["b.md", "archive/a.md"]), (True, ["b.md"])):
        index = open_index(docs, WordTokenizer(), HashEmbedder(64), index_dir=tmp_path / "idx",
                           chunking=ChunkSettings(max_tokens=40), current_only=current_only)
        index.order = "fused"  # where the tie is: the fused scores of the two copies are equal
        hits = index.search("context window", k=5)
        assert hits[0].score == pytest.approx(hits[-1].score)
        assert [h.doc_id for h in hits] == expected
        index.order = "learned"  # the learned order reads the fused place, so it keeps the current copy first
        assert [h.doc_id for h in index.search("context window", k=5)] == expected
        filtered = index.search("context window", k=5, doc_ids=["archive/a.md"])
        assert [h.doc_id for h in filtered] == ([] if current_only else ["archive/a.md"])
