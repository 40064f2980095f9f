"""Loading a docs folder: which files are read, which are skipped and counted, and the errors a user sees."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rag.ingest.corpus import default_docs_dir, load_corpus
from rag.errors import DocsNotFound

DATA = Path(__file__).parent / "data" / "retrieval_docs"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A copy of the tiny corpus plus folders that must be skipped and a symlink pointing outside."""
    root = tmp_path / "docs"
    shutil.copytree(DATA, root)
    for folder in (".hidden", "build", "node_modules"):
        (root / folder).mkdir()
        (root / folder / "page.md").write_text("# Not docs\n\nShould never be read.\n")
    (root / ".dotfile.md").write_text("# Hidden file\n")
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nSecret text outside the docs folder.\n")
    os.symlink(outside, root / "link-out.md")
    os.symlink(root / "guide.md", root / "link-in.md")
    return root


def test_text_files_of_every_kind_are_loaded_and_sorted(docs):
    corpus = load_corpus(docs)
    assert [d.doc_id for d in corpus.documents] == [
        "guide.md", "latin1.md", "link-in.md", "manual.adoc", "notes.rst", "readme.txt", "sub/deep.markdown",
    ]


def test_skipped_files_are_counted_by_reason(docs):
    skipped = load_corpus(docs).skipped
    assert skipped == {"empty": 2, "not text": 1, "hidden": 2, "build folder": 2, "symlink outside": 1}


def test_bad_bytes_are_replaced_not_fatal(docs):
    doc = next(d for d in load_corpus(docs).documents if d.doc_id == "latin1.md")
    assert "Caf\ufffd cr\ufffdme" in doc.text


def test_crlf_and_bom_are_normalized(tmp_path):
    (tmp_path / "win.md").write_bytes(b"\xef\xbb\xbf# Title\r\n\r\nBody line.\r\n")
    doc = load_corpus(tmp_path).documents[0]
    assert doc.text == "# Title\n\nBody line.\n"


def test_the_hash_is_of_the_file_bytes(docs):
    import hashlib

    doc = next(d for d in load_corpus(docs).documents if d.doc_id == "guide.md")
    assert doc.sha256 == hashlib.sha256((docs / "guide.md").read_bytes()).hexdigest()


def test_missing_folder_is_one_clear_error(tmp_path):
    with pytest.raises(DocsNotFound, match="--docs DIR"):
        load_corpus(tmp_path / "nope")


def test_a_file_instead_of_a_folder_is_refused(tmp_path):
    (tmp_path / "a.md").write_text("# A\n")
    with pytest.raises(DocsNotFound, match="not a folder"):
        load_corpus(tmp_path / "a.md")


def test_a_folder_without_text_files_is_refused(tmp_path):
    (tmp_path / "img.png").write_bytes(b"\x89PNG")
    (tmp_path / "empty.md").write_text("")
    with pytest.raises(DocsNotFound, match="no text files"):
        load_corpus(tmp_path)


def test_the_default_docs_folder_is_the_bundled_corpus():
    root = default_docs_dir()
    assert root.name == "docs_corpus" and root.is_dir()
    assert len(load_corpus(root).documents) >= 30
