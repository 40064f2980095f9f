"""Several sources in one index: names, ids, the collection filter, and a source that fails while the others answer."""

from __future__ import annotations

import pytest

from rag.errors import DocsNotFound
from rag.indexing.build import IndexProgress, open_index
from rag.indexing.collections import (
    UnknownCollection,
    collection_doc_ids,
    collections_of,
    narrowed,
    open_collections,
)


def write(folder, files: dict[str, str]):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


@pytest.fixture
def notes(tmp_path):
    return write(tmp_path / "notes", {
        "README.md": "# Notes\n\nThe backup of the photo library runs every Sunday night to the grey disk.\n",
        "garden.md": "# Garden\n\nWater the tomatoes twice a week in July; the basil wants shade.\n",
    })


@pytest.fixture
def project(tmp_path):
    return write(tmp_path / "project", {
        "README.md": "# Project\n\nThe server listens on port 8443 and rotates its logs at midnight.\n",
        "docs/deploy.md": "# Deploy\n\nRun make deploy; the release tag must be signed.\n",
    })


def test_one_source_keeps_its_ids_and_names_its_hits(real_tokenizer, tmp_path):
    """docs/kv-cache.md#3 stays docs/kv-cache.md#3 when one --docs is given; the hit says its collection."""
    plain = open_index(None, real_tokenizer, None, index_dir=tmp_path / "plain")
    named = open_collections(collections_of([(None, plain.docs_dir)], index_dir=tmp_path / "named"),
                             real_tokenizer, None)
    assert [c.chunk_id for c in named.chunks] == [c.chunk_id for c in plain.chunks]
    assert "docs/kv-cache.md#3" in {c.chunk_id for c in named.chunks}
    hit = named.search("kv cache size", k=1)[0]
    assert hit.collection == "docs_corpus" and hit.chunk_id.startswith("docs/")


def test_several_sources_prefix_ids_with_their_collection(notes, project, real_tokenizer, real_embedder):
    index = open_collections(collections_of([(None, notes), (None, project)]), real_tokenizer, real_embedder)
    assert index.doc_ids == ["notes:README.md", "notes:garden.md", "project:README.md", "project:docs/deploy.md"]
    hits = index.search("which port does the server listen on", k=4)
    assert hits[0].chunk_id == "project:README.md#0" and hits[0].collection == "project"
    assert hits[0].uri == "README.md"  # what a citation shows is the file's own name
    assert {h.collection for h in index.search("backup photo library", k=4)} >= {"notes"}
    assert index.search("backup photo library", k=1)[0].doc_id == "notes:README.md"
    assert index.has_dense and index.dense_coverage == 1.0


def test_the_collection_filter_searches_only_its_documents(notes, project, real_tokenizer, real_embedder):
    index = open_collections(collections_of([(None, notes), (None, project)]), real_tokenizer, real_embedder)
    only = collection_doc_ids(index, ["notes"])
    assert only == ["notes:README.md", "notes:garden.md"]
    hits = index.search("backup server port", k=5, doc_ids=only)
    assert hits and {h.collection for h in hits} == {"notes"}
    assert collection_doc_ids(index, ["notes", "project"]) is None  # the whole index: no filter
    # With doc_ids (the ag.08 filter) inside a collection, both hold; outside it, nothing is left to search.
    assert narrowed(["notes:garden.md", "project:README.md"], only) == ["notes:garden.md"]
    assert narrowed(["project:README.md"], only) == []
    with pytest.raises(UnknownCollection, match="unknown collection 'recipes': the collections are notes, project"):
        collection_doc_ids(index, ["recipes"])


def test_a_missing_source_is_one_notice_and_the_others_answer(notes, tmp_path, real_tokenizer, real_embedder):
    events: list[IndexProgress] = []
    chosen = collections_of([(None, notes), ("gone", tmp_path / "nowhere")])
    index = open_collections(chosen, real_tokenizer, real_embedder, progress=events.append)
    notices = [e.message for e in events if e.stage == "notice" and "gone" in e.message]
    assert len(notices) == 1 and "docs folder not found" in notices[0] and "searching the other" in notices[0]
    assert index.search("tomatoes", k=1)[0].chunk_id == "notes:garden.md#0"  # still prefixed: two were named


def test_an_unreadable_source_is_one_notice_each(notes, tmp_path, real_tokenizer, real_embedder):
    """A source that is a file, and one that holds nothing readable, are one notice each; notes still answers."""
    events: list[IndexProgress] = []
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "blob.md").write_bytes(b"\x00\x01\x02" * 1000)
    (tmp_path / "single.md").write_text("# One file\n\nNot a folder.\n")
    chosen = collections_of([(None, notes), (None, tmp_path / "junk"), (None, tmp_path / "single.md")])
    index = open_collections(chosen, real_tokenizer, real_embedder, progress=events.append)
    notices = [e.message for e in events if e.stage == "notice"]
    assert len([n for n in notices if n.startswith("collection junk ")]) == 1
    assert any(n.startswith("collection single.md ") and "not a folder" in n for n in notices)
    assert {index.collection(d) for d in index.doc_ids} == {"notes"}
    assert index.search("basil shade", k=1)[0].collection == "notes"


def test_no_source_opens_is_one_error_naming_each(tmp_path, real_tokenizer, real_embedder):
    chosen = collections_of([("a", tmp_path / "x"), ("b", tmp_path / "y")])
    with pytest.raises(DocsNotFound, match=r"no collection could be opened: collection a .*; collection b "):
        open_collections(chosen, real_tokenizer, real_embedder)


def test_names_are_unique_and_plain(tmp_path):
    chosen = collections_of([(None, tmp_path / "a" / "docs"), (None, tmp_path / "b" / "docs")])
    assert chosen.names == ["docs", "docs-2"]
    with pytest.raises(DocsNotFound, match="collection name 'my notes' is not usable"):
        collections_of([("my notes", tmp_path)])
    with pytest.raises(DocsNotFound, match="collection 'n' is named twice"):
        collections_of([("n", tmp_path / "a"), ("n", tmp_path / "b")])
    with pytest.raises(DocsNotFound, match=r"is named twice \(as a too\): give each folder once"):
        collections_of([("a", tmp_path), ("b", tmp_path / "x" / "..")])


def test_a_joined_index_reopens_without_embedding_again(notes, project, real_tokenizer, real_embedder, tmp_path):
    """Each collection keeps its own stored index: opening both again re-reads and re-embeds nothing."""
    chosen = collections_of([(None, notes), (None, project)], index_dir=tmp_path / "idx")
    first = open_collections(chosen, real_tokenizer, real_embedder)
    assert first.update.chunks_embedded == len(first)
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["notes", "project"]
    again = open_collections(chosen, real_tokenizer, real_embedder)
    assert again.update.chunks_embedded == 0 and not again.update.modified
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in first.chunks]


def test_a_live_index_of_two_folders_watches_both_and_saves_each(notes, project, real_tokenizer, real_embedder,
                                                                 tmp_path):
    """What chat and mcp open: an edit in either folder is searchable under its collection's ids, and each
    collection's embeddings are saved into its own stored index, so the next open embeds nothing."""
    import time

    from rag.indexing.live import open_live_index

    chosen = collections_of([(None, notes), (None, project)], index_dir=tmp_path / "idx")
    live = open_live_index(chosen, real_tokenizer, real_embedder)
    try:
        deadline = time.monotonic() + 60
        while not (live.watcher.ready.is_set() and live.dense_coverage == 1.0) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live.dense_coverage == 1.0 and len(live.watcher.watchers) == 2
        (project / "docs" / "deploy.md").write_text("# Deploy\n\nThe heliotrope quota of a tenant is seventeen.\n")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            hits = live.search("heliotrope quota of a tenant", k=1)
            if hits and hits[0].chunk_id == "project:docs/deploy.md#0":
                break
            time.sleep(0.1)
        assert hits and hits[0].chunk_id == "project:docs/deploy.md#0" and hits[0].collection == "project"
        deadline = time.monotonic() + 20
        while live.dense_coverage < 1.0 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        live.close()
    again = open_collections(chosen, real_tokenizer, real_embedder, embed_budget=0)
    assert again.update.dense_missing == 0 and again.update.chunks_embedded == 0


def test_a_chat_session_over_two_folders_answers_inside_its_collection(notes, project, real_model, real_embedder,
                                                                       tmp_path):
    """What `smoldocs chat --docs A --docs B --collection notes` opens: a live joined index, every search of
    the session inside notes (SmolLM2-135M answers extractively)."""
    from agent.events import AnswerFinished
    from agent.session import open_session

    write(project, {"backup.md": "# Backup\n\nThe backup of the build server runs every Sunday night too.\n"})
    chosen = collections_of([(None, notes), (None, project)], index_dir=tmp_path / "idx")
    session = open_session(chosen, open_model=lambda: real_model, open_embedder=lambda: real_embedder, live=True,
                           only=["notes"])
    try:
        assert session.docs_dir is None and set(session.retriever.doc_ids) == {"notes:README.md", "notes:garden.md"}
        answer = [e for e in session.ask("When does the backup run?") if isinstance(e, AnswerFinished)][0].answer
        cited = [c.chunk_id for c in answer.citations if c.chunk_id]
        assert cited and all(cid.startswith("notes:") for cid in cited)
    finally:
        session.close()
    with pytest.raises(UnknownCollection, match="unknown collection 'recipes'"):
        open_session(chosen, open_model=lambda: real_model, open_embedder=lambda: real_embedder, only=["recipes"])
