"""The PostgreSQL store's batched ingest (rag.postgres.ingest.write_documents) against a real server.

A first load writes one transaction per batch with the deferred indexes dropped, then builds them; it must leave
the same rows as writing one document at a time with every index in place, and an interrupted load must be
finished by the next `smoldocs index`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import psycopg
import pytest

from rag.ingest.corpus import Document, default_docs_dir, load_corpus
from rag.ingest.sources import SourceInfo
from rag.postgres import ingest as pg_ingest
from rag.postgres.ingest import Prepared, apply_document, batches, fill_embeddings, from_index, ingest, write_documents
from rag.postgres.schema import (
    DEFERRED,
    SCHEMA,
    build_deferred,
    connect,
    drop_deferred,
    ensure_schema,
    missing_deferred,
)
from rag.postgres.search import PgIndex
from rag.types import Chunk
from tests.test_pg_store import _consistent

S = SCHEMA


def _rows(url: str) -> dict[str, list[tuple]]:
    """Everything a search reads, keyed by chunk id rather than the internal row id."""
    with psycopg.connect(url) as conn:
        return {
            "documents": conn.execute(f"SELECT doc_id, sha256, outdated, why, superseded_by, expires, notice, skipped, "
                                      f"chunk_count FROM {S}.documents ORDER BY doc_id").fetchall(),
            "chunks": conn.execute(f"SELECT chunk_id, doc_id, ordinal, uri, heading, body, line_start, line_end, "
                                   f"page_start, page_end, outdated, length, embedding::text FROM {S}.chunks "
                                   "ORDER BY chunk_id").fetchall(),
            "postings": conn.execute(f"SELECT p.term, c.chunk_id, p.tf, p.length FROM {S}.postings p "
                                     f"JOIN {S}.chunks c ON c.id = p.chunk ORDER BY 1, 2").fetchall(),
            "terms": conn.execute(f"SELECT term, df, prefix FROM {S}.terms ORDER BY term").fetchall(),
            "stats": conn.execute(f"SELECT chunks, total_length, embedded FROM {S}.stats").fetchall(),
        }


@pytest.mark.real
def test_a_first_load_in_batches_leaves_the_rows_of_one_document_at_a_time(pg_server, real_index, monkeypatch):
    monkeypatch.setattr(pg_ingest, "BATCH_CHUNKS", 100)  # docs_corpus's ~400 chunks: several batches
    items = list(from_index(real_index, load_corpus(default_docs_dir()).documents))
    one_by_one, batched = (pg_server.url(pg_server.create_database()) for _ in range(2))
    conn = connect(one_by_one)
    ensure_schema(conn, one_by_one)
    assert all(apply_document(conn, item) for item in items)
    conn.close()

    conn, watcher = connect(batched), connect(batched)
    ensure_schema(conn, batched)
    seen_missing = []

    def watched():  # what another connection sees of the indexes while the load runs
        for item in items:
            seen_missing.append(missing_deferred(watcher))
            yield item

    written = list(write_documents(conn, watched()))
    assert [w.doc.doc_id for w in written] == [i.doc.doc_id for i in items]
    assert seen_missing[-1] == list(DEFERRED) and missing_deferred(watcher) == []
    with psycopg.connect(batched) as check:
        batches_seen = check.execute(f"SELECT generation FROM {S}.stats").fetchone()[0]
    assert 4 <= batches_seen < len(items)  # one transaction per batch, not per document
    conn.close(), watcher.close()

    assert _rows(batched) == _rows(one_by_one)
    _consistent(batched)
    # The vectors arrive bit for bit (sent as binary float4s; text at 8 digits lost the last bit of some).
    stored = _rows(batched)["chunks"]
    by_id = {c.chunk_id: row for row, c in enumerate(real_index.chunks)}
    vectors = np.array([np.array(r[-1][1:-1].split(","), dtype=np.float32) for r in stored])
    assert np.array_equal(vectors, real_index.dense.matrix[[by_id[r[0]] for r in stored]])
    pg = PgIndex(batched, real_index.embedder)
    embedded = real_index.with_embeddings(real_index.dense.matrix)  # in the store's order: fused (test_pg_store)
    embedded.order = pg.order
    for q in ("building the index", "kv cache", "latin encoding"):
        assert [h.chunk_id for h in pg.search(q, k=5)] == [h.chunk_id for h in embedded.search(q, k=5)]
    pg.close()


def test_an_interrupted_first_load_is_finished_by_the_next_index(pg_url, docs, real_tokenizer, monkeypatch):
    monkeypatch.setattr(pg_ingest, "BATCH_CHUNKS", 1)  # the first document is committed before the crash
    first = next(from_index_of(docs, real_tokenizer))
    conn = connect(pg_url)
    ensure_schema(conn, pg_url)

    def crashing():
        yield first
        raise RuntimeError("the ingester died")

    with pytest.raises(RuntimeError):
        for _ in write_documents(conn, crashing()):
            pass
    assert missing_deferred(conn) == list(DEFERRED)  # dropped for the load, never built
    assert not drop_deferred(conn)  # a store with chunks keeps whatever indexes it has
    conn.close()
    update = ingest(pg_url, docs, real_tokenizer, None)
    assert len(update.added) == len(load_corpus(docs).documents) - 1 and update.unchanged == 1
    with connect(pg_url) as conn:
        assert missing_deferred(conn) == []
    _consistent(pg_url)
    pg = PgIndex(pg_url, None)
    assert pg.search("building the index", mode="bm25")
    pg.close()


def test_the_deferred_indexes_are_built_with_the_memory_they_are_given(pg_url):
    """build_deferred's maintenance_work_mem (benchmarks.shared_store --build-memory, for a 1M-row HNSW graph that
    512MB does not hold): a value PostgreSQL refuses fails the first build and leaves every index unbuilt."""
    conn = connect(pg_url)
    ensure_schema(conn, pg_url)
    assert drop_deferred(conn)
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="maintenance_work_mem"):
        build_deferred(conn, memory="63kB")  # below its least, 64kB
    assert missing_deferred(conn) == list(DEFERRED)
    assert build_deferred(conn, memory="1GB") == list(DEFERRED) and missing_deferred(conn) == []
    conn.close()


def from_index_of(docs: Path, tokenizer):
    """The folder's documents prepared as `smoldocs index` would (without embeddings)."""
    from rag.ingest.chunking import ChunkSettings
    from rag.postgres.ingest import prepare
    from rag.retrieval.terms import TermSettings

    for doc in load_corpus(docs).documents:
        yield prepare(doc, tokenizer, ChunkSettings(), TermSettings(), lambda event: None)


def _item(name: str, chunks: int) -> Prepared:
    parts = [Chunk(f"{name}#{n}", name, name, "text") for n in range(chunks)]
    return Prepared(Document(name, Path(name), "", name), parts, [["text"]] * chunks, None, SourceInfo())


def test_batches_close_at_their_size_or_once_their_first_document_has_waited():
    now = [0.0]
    arrivals = [("a", 3, 0.0), ("b", 3, 0.5), ("c", 1, 0.6), ("d", 2, 0.7), ("e", 1, 5.0), ("f", 1, 5.1)]

    def items():
        for name, chunks, at in arrivals:
            now[0] = at
            yield _item(name, chunks)

    got = [[i.doc.doc_id for i in b] for b in batches(items(), chunks=6, seconds=2.0, clock=lambda: now[0])]
    # a+b reach 6 chunks; c opens a batch at 0.6, d joins it; e arrives 4.4 s after c: c+d go, e opens the next.
    assert got == [["a", "b"], ["c", "d"], ["e", "f"]]
    assert list(batches(iter([]))) == []


def _vectors(url: str) -> dict[str, np.ndarray]:
    """Each chunk's stored embedding as float32 (pgvector prints the shortest text that reads back to the same float4)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT chunk_id, embedding::text FROM {S}.chunks ORDER BY id").fetchall()
    return {chunk: np.array(text.strip("[]").split(","), dtype=np.float32) for chunk, text in rows}


@pytest.mark.real
def test_a_store_filled_after_a_load_without_embedder_holds_the_vectors_ingest_stores(pg_server, docs, real_tokenizer,
                                                                                      real_embedder):
    from rag.indexing.dense import embed_texts
    from rag.ingest.chunking import indexed_text

    direct, filled = (pg_server.url(pg_server.create_database()) for _ in range(2))
    ingest(direct, docs, real_tokenizer, real_embedder)
    ingest(filled, docs, real_tokenizer, None)
    assert _rows(filled)["stats"][0][2] == 0  # no chunk embedded yet
    update = ingest(filled, docs, real_tokenizer, real_embedder)  # nothing changed: fill_embeddings does the work
    assert update.chunks_embedded == update.chunks > 4 and update.dense_missing == 0
    assert _rows(filled) == _rows(direct)  # every column, embedding::text included, and the statistics
    with psycopg.connect(filled, autocommit=True) as conn:  # again in batches of 4: several transactions
        conn.execute(f"UPDATE {S}.chunks SET embedding = NULL")
        conn.execute(f"UPDATE {S}.stats SET embedded = 0")
        assert fill_embeddings(conn, real_embedder, batch=4) == update.chunks
        rows = conn.execute(f"SELECT chunk_id, heading, body FROM {S}.chunks ORDER BY id").fetchall()
    texts = [indexed_text(Chunk("", "", "", body, tuple(heading))) for _c, heading, body in rows]
    expected = embed_texts(real_embedder, texts, 4)
    stored = _vectors(filled)
    assert all(np.array_equal(stored[chunk], row) for (chunk, _h, _b), row in zip(rows, expected))
    _consistent(filled)
