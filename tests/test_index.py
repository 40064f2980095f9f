"""The persistent hybrid index: incremental updates, stable ids, crash safety, corruption, filters, search."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import CountingEmbedder, WordTokenizer
from rag.indexing import store
from rag.ingest.chunking import ChunkSettings, indexed_text
from rag.indexing.build import IndexProgress, open_index
from rag.types import Chunk, Retriever


def open_(docs: Path, index_dir: Path, embedder=None, **kw):
    events: list[IndexProgress] = []
    index = open_index(docs, WordTokenizer(), embedder or CountingEmbedder(512), index_dir=index_dir,
                       progress=events.append, chunking=ChunkSettings(max_tokens=40), **kw)
    return index, events


def test_first_open_builds_and_saves_then_reopens_without_embedding(docs, tmp_path):
    first, events = open_(docs, tmp_path / "idx")
    assert first.update.rebuilt and first.update.reason == "new index"
    assert isinstance(first, Retriever)
    assert {e.stage for e in events} >= {"scan", "chunk", "embed", "save", "done"}
    embedder = CountingEmbedder(512)
    again, _ = open_(docs, tmp_path / "idx", embedder)
    assert not again.update.modified and embedder.seen == []
    assert [c.chunk_id for c in again.chunks] == [c.chunk_id for c in first.chunks]
    np.testing.assert_array_equal(again.dense.matrix, first.dense.matrix)


def test_reopening_loads_the_stored_bm25_postings_unless_term_settings_differ(docs, tmp_path, monkeypatch):
    from rag.indexing import hybrid
    from rag.retrieval.terms import TermSettings

    first, _ = open_(docs, tmp_path / "idx")

    def no_rebuild(*args, **kwargs):
        raise AssertionError("BM25 was rebuilt from the chunks")

    with monkeypatch.context() as m:
        m.setattr(hybrid, "BM25Index", no_rebuild)
        again, _ = open_(docs, tmp_path / "idx")
    np.testing.assert_array_equal(again.bm25.scores(["weight"]), first.bm25.scores(["weight"]))
    assert first.bm25.scores(["weight"]).max() > 0  # "weights" stemmed
    plain, _ = open_(docs, tmp_path / "idx", term_settings=TermSettings(stem=False))
    assert not plain.update.modified and plain.bm25.scores(["weight"]).max() == 0  # built unstemmed, in memory


def test_postings_of_an_older_terms_version_are_rebuilt_from_the_chunks_and_saved(docs, tmp_path, monkeypatch):
    from rag.indexing import build, hybrid

    open_(docs, tmp_path / "idx")
    monkeypatch.setattr(build, "TERMS_VERSION", 99)  # this smoldocs splits words another way than the stored index
    built = []
    real = hybrid.BM25Index
    monkeypatch.setattr(hybrid, "BM25Index", lambda *a, **kw: built.append(1) or real(*a, **kw))
    embedder = CountingEmbedder(512)
    newer, _ = open_(docs, tmp_path / "idx", embedder)
    assert built and embedder.seen == []  # postings rebuilt, no chunk embedded again
    assert store.load(tmp_path / "idx").bm25_terms["version"] == 99
    built.clear()
    open_(docs, tmp_path / "idx")
    assert not built  # saved: the next start loads them


def test_editing_one_file_reembeds_only_its_chunks_and_keeps_other_ids(docs, tmp_path):
    before, _ = open_(docs, tmp_path / "idx")
    (docs / "guide.md").write_text("# Install guide\n\nA new first paragraph.\n\n## Extra\n\nMore words here.\n")
    embedder = CountingEmbedder(512)
    after, _ = open_(docs, tmp_path / "idx", embedder)
    assert after.update.changed == ("guide.md",) and after.update.added == () and after.update.unchanged == 5
    guide = [c for c in after.chunks if c.doc_id == "guide.md"]
    assert len(embedder.seen) == len(guide)
    untouched = lambda index: {c.chunk_id: c for c in index.chunks if c.doc_id != "guide.md"}  # noqa: E731
    assert untouched(after) == untouched(before)
    old_rows = {c.chunk_id: r for r, c in enumerate(before.chunks)}
    for row, c in enumerate(after.chunks):
        if c.doc_id != "guide.md":
            np.testing.assert_array_equal(after.dense.matrix[row], before.dense.matrix[old_rows[c.chunk_id]])


def test_added_and_deleted_files_are_picked_up(docs, tmp_path):
    open_(docs, tmp_path / "idx")
    (docs / "readme.txt").unlink()
    (docs / "new.md").write_text("# New page\n\nAbout speculative decoding.\n")
    index, _ = open_(docs, tmp_path / "idx")
    assert index.update.added == ("new.md",) and index.update.removed == ("readme.txt",)
    assert index.chunk("readme.txt#0") is None and index.chunk("new.md#0") is not None
    assert index.search("speculative decoding", k=1)[0].chunk_id == "new.md#0"


def test_a_crash_while_saving_leaves_the_old_index_usable(docs, tmp_path, monkeypatch):
    before, _ = open_(docs, tmp_path / "idx")
    (docs / "guide.md").write_text("# Changed\n\nEntirely different text.\n")
    real_write = store.atomic_write

    def crash_on_manifest(path, data):
        if path.name == store.MANIFEST:
            # Die halfway through writing the manifest's temp file, as a killed process would.
            (path.parent / f".{path.name}.crash.tmp").write_bytes(data[: len(data) // 2])
            raise KeyboardInterrupt
        real_write(path, data)

    monkeypatch.setattr(store, "atomic_write", crash_on_manifest)
    with pytest.raises(KeyboardInterrupt):
        open_(docs, tmp_path / "idx")
    monkeypatch.setattr(store, "atomic_write", real_write)
    stored = store.load(tmp_path / "idx")  # the old generation, intact
    assert [c.chunk_id for c in stored.chunks] == [c.chunk_id for c in before.chunks]
    assert stored.chunks == before.chunks
    orphans = [p for p in (tmp_path / "idx").iterdir() if p.name not in (store.MANIFEST, *_generation(tmp_path / "idx"))]
    # The interrupted save removed the generation files it wrote; only the temp file a kill leaves remains.
    assert [p.name for p in orphans] == [".manifest.json.crash.tmp"]
    for path in orphans:  # as if the crash was a while ago; younger files may be a concurrent save
        os.utime(path, (time.time() - store.STALE_SECONDS - 1,) * 2)
    index, _ = open_(docs, tmp_path / "idx")
    assert index.update.changed == ("guide.md",) and not index.update.rebuilt
    leftovers = {p.name for p in (tmp_path / "idx").iterdir()}
    assert leftovers == {store.MANIFEST, *_generation(tmp_path / "idx")}  # old generation and crash debris gone


def _generation(index_dir: Path) -> tuple[str, str, str]:
    manifest = json.loads((index_dir / store.MANIFEST).read_text())
    return manifest["chunks_file"], manifest["embeddings_file"], manifest["bm25_file"]


def test_a_young_unreferenced_generation_is_left_for_its_writer(docs, tmp_path):
    open_(docs, tmp_path / "idx")
    other = tmp_path / "idx" / "chunks-concurrent.jsonl"
    other.write_text("")  # another process is between writing its files and committing its manifest
    (docs / "readme.txt").write_text("Changed.\n")
    open_(docs, tmp_path / "idx")
    assert other.exists()
    assert {p.name for p in (tmp_path / "idx").iterdir()} == {store.MANIFEST, other.name, *_generation(tmp_path / "idx")}


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: (d / store.MANIFEST).write_text("{not json"),
        lambda d: (d / store.MANIFEST).write_text(json.dumps({"format": "smoldocs-index", "format_version": 999})),
        lambda d: next(d.glob("chunks-*.jsonl")).write_text('{"id": "x"}\n'),
        lambda d: next(d.glob("embeddings-*.npy")).write_bytes(b"garbage"),
        lambda d: next(d.glob("embeddings-*.npy")).unlink(),
        lambda d: next(d.glob("bm25-*.npz")).write_bytes(b"PK\x03\x04 truncated"),
    ],
    ids=["manifest-not-json", "format-version", "chunks-tampered", "embeddings-garbage", "embeddings-missing",
         "bm25-garbage"],
)
def test_a_damaged_index_is_rebuilt_with_one_notice(docs, tmp_path, damage):
    before, _ = open_(docs, tmp_path / "idx")
    damage(tmp_path / "idx")
    index, events = open_(docs, tmp_path / "idx")
    notices = [e.message for e in events if e.stage == "notice"]
    assert len(notices) == 1 and "rebuilding" in notices[0] and "\n" not in notices[0]
    assert index.update.rebuilt and index.update.reason == "unusable index"
    assert [c.chunk_id for c in index.chunks] == [c.chunk_id for c in before.chunks]
    assert store.load(tmp_path / "idx") is not None


def test_other_settings_rebuild_with_a_notice_naming_them(docs, tmp_path):
    open_(docs, tmp_path / "idx")
    events: list[IndexProgress] = []
    index = open_index(docs, WordTokenizer(), CountingEmbedder(512), index_dir=tmp_path / "idx",
                       progress=events.append, chunking=ChunkSettings(max_tokens=30))
    assert index.update.rebuilt and "chunker" in index.update.reason
    assert any("chunker" in e.message for e in events if e.stage == "notice")


def test_a_chunking_change_reembeds_only_chunks_whose_text_changed(docs, tmp_path):
    before, _ = open_(docs, tmp_path / "idx")
    embedder = CountingEmbedder(512)
    events: list[IndexProgress] = []
    index = open_index(docs, WordTokenizer(), embedder, index_dir=tmp_path / "idx", progress=events.append,
                       chunking=ChunkSettings(max_tokens=30))
    assert index.update.rebuilt and "chunker" in index.update.reason
    old = {indexed_text(c): row for row, c in enumerate(before.chunks)}
    same = [row for row, c in enumerate(index.chunks) if indexed_text(c) in old]
    assert 0 < len(same) < len(index.chunks)  # the fixture's short files keep their chunks; long ones are re-cut
    assert len(embedder.seen) == len(index.chunks) - len(same) == index.update.chunks_embedded
    for row in same:
        np.testing.assert_array_equal(index.dense.matrix[row], before.dense.matrix[old[indexed_text(index.chunks[row])]])
    assert any(e.message == f"kept {len(same)} of {len(index.chunks)} embeddings from the previous index"
               for e in events if e.stage == "notice")
    other = open_index(docs, WordTokenizer(), CountingEmbedder(256), index_dir=tmp_path / "idx",
                       chunking=ChunkSettings(max_tokens=40))
    assert other.update.chunks_embedded == len(other.chunks)  # another embedder's vectors are never carried


def test_opening_without_an_embedder_keeps_the_stored_embeddings(docs, tmp_path):
    first, _ = open_(docs, tmp_path / "idx")
    plain = open_index(docs, WordTokenizer(), None, index_dir=tmp_path / "idx", chunking=ChunkSettings(max_tokens=40))
    assert not plain.has_dense and plain.search("index cache folder docs", k=1)  # BM25 alone this time
    (docs / "new.md").write_text("# New\n\nA page added while semantic search was off.\n")
    plain = open_index(docs, WordTokenizer(), None, index_dir=tmp_path / "idx", chunking=ChunkSettings(max_tokens=40))
    assert plain.update.added == ("new.md",)
    embedder = CountingEmbedder(512)
    again, _ = open_(docs, tmp_path / "idx", embedder)
    assert len(embedder.seen) == again.update.chunks_embedded == 1  # only the new page's chunk is embedded
    rows = {c.chunk_id: r for r, c in enumerate(first.chunks)}
    for r, c in enumerate(again.chunks):
        if c.chunk_id in rows:
            np.testing.assert_array_equal(again.dense.matrix[r], first.dense.matrix[rows[c.chunk_id]])


def test_the_default_index_dir_is_a_cache_folder_per_docs_folder(docs, tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLDOCS_CACHE", str(tmp_path / "cache"))
    index = open_index(docs, WordTokenizer(), CountingEmbedder(512))
    assert index.update.index_dir.parent == tmp_path / "cache" / "indexes"
    assert index.update.index_dir == store.default_index_dir(docs)
    assert store.default_index_dir(docs) != store.default_index_dir(tmp_path)


def test_search_filters_by_doc_ids_and_k(docs, tmp_path):
    index, _ = open_(docs, tmp_path / "idx")
    hits = index.search("index cache folder docs", k=2)
    assert len(hits) == 2 and hits[0].doc_id == "guide.md"
    only = index.search("quantization perplexity weights", k=5, doc_ids=["notes.rst", "manual.adoc"])
    assert only and {h.doc_id for h in only} <= {"notes.rst", "manual.adoc"}
    assert index.search("quantization", doc_ids=["guide.md"]) == []
    assert index.search("quantization", doc_ids=["no-such-doc.md"]) == []
    assert index.search("quantization", doc_ids=[]) == index.search("quantization")


def test_hits_carry_both_ranks_and_the_chunk_fields(docs, tmp_path):
    index, _ = open_(docs, tmp_path / "idx")
    hit = index.search("asciidoc quantization four-bit weights", k=1)[0]
    chunk = index.chunk(hit.chunk_id)
    assert hit.chunk == chunk  # a hit holds its chunk (rag.types.Hit wraps Chunk)
    assert (hit.doc_id, hit.text, hit.heading_path, hit.lines) == (chunk.doc_id, chunk.text, chunk.heading_path, chunk.lines)
    assert hit.bm25_rank == 1 and hit.dense_rank is not None
    assert index.search("asciidoc quantization", k=3, mode="bm25")[0].dense_rank is None


def test_a_query_matching_nothing_returns_an_empty_list(docs, tmp_path):
    index, _ = open_(docs, tmp_path / "idx", min_dense_score=0.5)
    assert index.search("xylophone zeppelin") == []
    assert index.search("   ") == []
    assert index.search("the of and") == []  # function words only


def test_bad_mode_and_k_are_refused(docs, tmp_path):
    index, _ = open_(docs, tmp_path / "idx")
    with pytest.raises(ValueError, match="hybrid, bm25, dense"):
        index.search("x", mode="fancy")
    with pytest.raises(ValueError, match="at least 1"):
        index.search("x", k=0)


def test_chunk_lookup_by_id(docs, tmp_path):
    index, _ = open_(docs, tmp_path / "idx")
    assert index.chunk("notes.rst#1").heading_path == ("Rst notes", "Overview", "Details")
    assert index.chunk("notes.rst#99") is None and index.chunk("nope") is None
    assert len(index) == len(index.chunks) and "sub/deep.markdown" in index.doc_ids


def test_an_unwritable_index_folder_still_gives_a_working_index_and_one_notice(docs, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    index, events = open_(docs, blocked / "idx")
    notices = [e.message for e in events if e.stage == "notice"]
    assert len(notices) == 1 and "cannot save the index" in notices[0] and "--index DIR" in notices[0]
    assert index.search("asciidoc quantization", k=1)[0].doc_id == "manual.adoc"


# Every code point that str.splitlines() treats as a line end, and lone surrogates (a file name that is not UTF-8).
AWKWARD = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\ud800\udc80\udfff\x00\"\\"
any_text = st.text(st.one_of(st.sampled_from(AWKWARD), st.characters(exclude_categories=())), max_size=40)


@settings(max_examples=25, deadline=None)
@given(texts=st.lists(any_text, min_size=1, max_size=4), heading=any_text, doc_id=any_text)
def test_any_text_round_trips_through_the_stored_index(tmp_path_factory, texts, heading, doc_id):
    from rag.indexing.bm25 import BM25Index

    chunks = [Chunk(f"{doc_id}#{n}", doc_id, doc_id, text, (heading,), 1, 2) for n, text in enumerate(texts)]
    index_dir = tmp_path_factory.mktemp("roundtrip")
    files = {doc_id: {"sha256": "0" * 64, "chunks": [c.chunk_id for c in chunks]}}
    bm25 = BM25Index([["w"] for _ in chunks])
    store.save(index_dir, {"s": doc_id}, files, chunks, np.zeros((len(chunks), 4), np.float32), bm25, {})
    loaded = store.load(index_dir)
    assert loaded.chunks == chunks and loaded.settings == {"s": doc_id} and list(loaded.files) == [doc_id]


def test_a_load_racing_a_save_reads_the_new_generation_not_a_damage_notice(docs, tmp_path, monkeypatch):
    open_(docs, tmp_path / "idx")
    (docs / "guide.md").write_text("# Changed\n\nBrand new words.\n")
    real_read = store._read_verified
    raced: list[str] = []

    def racing(index_dir, name, checksums):
        if not raced:
            raced.append(name)
            open_(docs, tmp_path / "idx")  # another process commits a generation and deletes this one
        return real_read(index_dir, name, checksums)

    monkeypatch.setattr(store, "_read_verified", racing)
    stored = store.load(tmp_path / "idx")
    assert raced and any("Brand new words" in c.text for c in stored.chunks)
