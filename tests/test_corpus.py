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


def test_folders_nested_deeper_than_the_recursion_limit_are_walked(tmp_path):
    import sys

    depth = sys.getrecursionlimit() + 100  # 1,100 nested folders once ended in RecursionError
    folder = tmp_path
    for _ in range(depth):  # one level at a time: Path.mkdir(parents=True) recurses too
        folder = folder / "d"
        folder.mkdir()
    (folder / "deep.md").write_text("# Deep\n\nAt the bottom.\n")
    (tmp_path / "top.md").write_text("# Top\n\nAt the top.\n")
    try:
        ids = [d.doc_id for d in load_corpus(tmp_path).documents]
    finally:  # bottom up: pytest's own clean-up (shutil.rmtree) recurses and would fail at exit
        (folder / "deep.md").unlink()
        for _ in range(depth):
            folder.rmdir()
            folder = folder.parent
    assert ids == ["d/" * depth + "deep.md", "top.md"]


@pytest.mark.parametrize("blank", ["", "   "])
def test_an_empty_docs_path_is_one_clear_error_not_the_current_folder(tmp_path, monkeypatch, blank):
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DocsNotFound, match="--docs is empty"):
        load_corpus(blank)


def test_a_text_file_over_the_size_cap_is_skipped_from_its_size_unread(tmp_path):
    from rag.ingest.corpus import MAX_TEXT_FILE_BYTES

    (tmp_path / "a.md").write_text("# A\n\nKept.\n")
    with open(tmp_path / "big.md", "wb") as fh:  # 40 KB of text, then a sparse tail: cheap unless read whole
        fh.write(b"# Big\n\n" + b"word " * 8000)
        fh.truncate(MAX_TEXT_FILE_BYTES + 1)
    corpus = load_corpus(tmp_path)
    assert [d.doc_id for d in corpus.documents] == ["a.md"]
    assert corpus.skipped == {"too large (over 20 MB)": 1} and MAX_TEXT_FILE_BYTES == 20 * 2**20


def test_a_text_file_whose_size_lies_is_read_no_further_than_the_cap(tmp_path, monkeypatch):
    """A file can lie in stat (/proc files say 0 bytes) or grow while it is read: the read itself stops at the cap."""
    import rag.ingest.corpus as corpus_module

    monkeypatch.setattr(corpus_module, "MAX_TEXT_FILE_BYTES", 100)
    (tmp_path / "a.md").write_text("# A\n\nKept.\n")
    (tmp_path / "grows.md").write_text("# Grows\n\n" + "word " * 100)
    real_fstat = os.fstat

    def zero_size(fd):
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 0,
                               st.st_atime, st.st_mtime, st.st_ctime))

    with monkeypatch.context() as m:
        m.setattr(os, "fstat", zero_size)
        corpus = load_corpus(tmp_path)
    assert [d.doc_id for d in corpus.documents] == ["a.md"]
    assert corpus.skipped == {corpus_module._too_large(): 1}


@pytest.mark.parametrize("encoding, bom", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff")])
def test_a_utf16_file_with_a_bom_is_decoded_not_skipped_as_binary(tmp_path, encoding, bom):
    text = "# Título\r\n\r\nThe frobnicator runs nightly.\r\n"
    (tmp_path / "wide.md").write_bytes(bom + text.encode(encoding))
    doc = load_corpus(tmp_path).documents[0]
    assert doc.text == "# Título\n\nThe frobnicator runs nightly.\n"
