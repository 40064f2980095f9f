"""`smoldocs index --store` filled from several sources (folders and --man's pages), searched with --collection,
against a real PostgreSQL (tests/pg_support.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.cli import main
from agent.surfaces.commands import common
from fakes import HashEmbedder, WordTokenizer
from json_support import read_output

MAN = Path(__file__).parent / "data" / "manpages"


@pytest.fixture
def sources(tmp_path, monkeypatch):
    """A notes folder and a man tree (on MANPATH); the tokenizer and embedder faked: the store is what is tested."""
    monkeypatch.setattr(common, "load_tokenizer_from_args", lambda settings: WordTokenizer())
    monkeypatch.setattr(common, "load_embedder_from_args", lambda settings: HashEmbedder(64))
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "disks.md").write_text("# Disks\n\nStay on one filesystem when you back up the grey disk.\n")
    tree = tmp_path / "man"
    shutil.copytree(MAN, tree)
    monkeypatch.setenv("MANPATH", str(tree))
    return notes, tree


def test_index_fills_a_store_from_a_folder_and_man_pages_each_a_collection(pg_url, sources, capsys):
    notes, tree = sources
    argv = ["index", "--store", pg_url, "--docs", str(notes), "--man", "8", "-q"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "index of 2 collections (man, notes): 2 files, 3 chunks; rebuilt (new store)" in out
    assert main(["search", "--store", pg_url, "one filesystem", "--collection", "man", "--json"]) == 0
    hits = read_output("search", capsys.readouterr().out)["hits"]
    assert hits and {(h["doc_id"], h["collection"], h["uri"]) for h in hits} == {("man:man8/toold.8", "man", "toold(8)")}
    assert main(["search", "--store", pg_url, "one filesystem", "--json"]) == 0
    both = {h["collection"] for h in read_output("search", capsys.readouterr().out)["hits"]}
    assert both == {"man", "notes"}
    assert main(argv) == 0
    assert "2 files" in (out := capsys.readouterr().out) and "up to date" in out


def test_a_source_that_cannot_be_read_keeps_its_stored_documents(pg_url, sources, capsys):
    """One notice; the other collection is brought up to date, and the missing one is not emptied from the store."""
    notes, tree = sources
    assert main(["index", "--store", pg_url, "--docs", str(notes), "--man", "8", "-q"]) == 0
    capsys.readouterr()
    shutil.rmtree(notes)
    (tree / "man8" / "newd.8").write_text(".TH NEWD 8\n.SH NAME\nnewd \\- a daemon a package just added\n")
    assert main(["index", "--store", pg_url, "--docs", str(notes), "--man", "8"]) == 0
    out, err = capsys.readouterr()
    assert "1 added, 0 changed, 0 removed" in out and "added: man:man8/newd.8" in out
    assert "collection notes" in err and "its stored documents are kept" in err
    assert main(["search", "--store", pg_url, "grey disk", "--collection", "notes", "--json"]) == 0
    assert [h["doc_id"] for h in read_output("search", capsys.readouterr().out)["hits"]] == ["notes:disks.md"]


def test_mcp_over_a_store_stays_inside_its_collection_filter(pg_url, sources, capsys):
    """What `smoldocs mcp --store URL --collection man` serves: only the man pages are listed, searched and read."""
    from agent.surfaces.mcp_server import StoredDocs
    from rag.indexing.collections import UnknownCollection
    from rag.postgres.search import PgIndex

    notes, tree = sources
    assert main(["index", "--store", pg_url, "--docs", str(notes), "--man", "8", "-q"]) == 0
    index = PgIndex(pg_url, None)
    served = StoredDocs(index, WordTokenizer(), None, ("man",))
    shown, _ = served.current()
    assert shown.doc_ids == ["man:man8/toold.8"]
    assert [h.doc_id for h in shown.search("grey disk filesystem", k=5, mode="bm25")] == ["man:man8/toold.8"]
    assert served.document("notes:disks.md") is None and "one filesystem" in (served.document("man:man8/toold.8") or "")
    with pytest.raises(UnknownCollection, match="the collections are man, notes"):
        StoredDocs(index, WordTokenizer(), None, ("recipes",))
    index.close()
