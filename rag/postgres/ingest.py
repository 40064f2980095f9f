"""Keeping the PostgreSQL store fresh from a docs folder: documents written in batches, by content hash.

A document's chunks, embeddings, postings and the corpus statistics change together in one transaction, so a reader
(whose every search is one statement) sees the old document or the new one, never a mix. Chunking and embedding
happen before the transaction; inside it, under the store's write lock, the stored hashes are read again, so two
ingesters of the same folder take turns and the second finds the work done. A transaction holds a batch of
documents (batches), each table written by one COPY; into an empty store the indexes a search needs are built once
after the load instead of row by row (rag.postgres.schema.DEFERRED).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Sequence

import numpy as np

from models.locate import SEMANTIC_OFF
from models.protocols import Embedder, Tokenizer
from models.redaction import redact_url
from rag.errors import DocsNotFound, RagError, StoreRefused, Unreadable
from rag.indexing.build import IndexProgress, IndexUpdate, ProgressFn, index_settings
from rag.postgres.schema import (
    DEFAULT_DIM,
    SCHEMA,
    build_deferred,
    connect,
    drop_deferred,
    drop_schema,
    embedding_dim,
    ensure_schema,
    read_settings,
    unavailable,
    write_settings,
    write_transaction,
)
from rag.ingest.chunking import ChunkSettings, chunk_layout, indexed_text
from rag.ingest.corpus import Document, check_docs_dir, load_corpus
from rag.ingest.formats import read_layout
from rag.ingest.sources import SourceInfo, source_info
from rag.indexing.collections import SEPARATOR, Collections
from rag.indexing.dense import EMBED_BATCH, embed_texts
from rag.retrieval.terms import TermSettings, index_terms
from rag.retrieval.vocabulary import PREFIX
from rag.types import Chunk

S = SCHEMA
CHUNK_KEYS = ("tokenizer", "chunker", "bm25_terms")  # settings every chunk and posting depends on
# Chunks per write transaction: each table gets one COPY a batch. 10k real chunks, vectors precomputed, a first
# load (load average ~10): 3,094 chunks per CPU-second of client and server, against 793 before (one document a transaction,
# indexes kept up row by row).
BATCH_CHUNKS = 2000
BATCH_SECONDS = 2.0  # a batch waits at most this long for more documents (see batches)


@dataclass(frozen=True)
class Prepared:
    """A document ready to write: its chunks, their BM25 terms and embeddings (None: not embedded), standing."""

    doc: Document
    chunks: list[Chunk]
    terms: list[list[str]]
    vectors: np.ndarray | None
    info: SourceInfo
    skipped: str | None = None  # why no format could read it; then there are no chunks


def vector_text(row: np.ndarray) -> str:
    """pgvector's text form of one embedding."""
    return "[" + ",".join(f"{x:.8g}" for x in row.tolist()) + "]"


def prepare(doc: Document, tokenizer: Tokenizer, chunking: ChunkSettings, term_settings: TermSettings,
            progress: ProgressFn) -> Prepared:
    """A document read, chunked and turned into BM25 terms; not embedded yet (EmbedQueue does that)."""
    info = source_info(doc.doc_id, doc.text)
    try:
        layout = read_layout(doc.doc_id, doc.path, doc.text, doc.sha256,
                             lambda done, total: progress(IndexProgress("read", done, total, message=doc.doc_id)))
    except Unreadable as exc:
        return Prepared(doc, [], [], None, info, skipped=exc.reason)
    chunks = chunk_layout(doc.doc_id, layout, tokenizer, chunking.max_tokens)
    chunk_terms = [index_terms(indexed_text(c, term_settings.headings), term_settings) for c in chunks]
    return Prepared(doc, chunks, chunk_terms, None, info)


class EmbedQueue:
    """Documents waiting for their embeddings, embedded in full batches across documents, released in order.

    llama.cpp's vectors depend on which texts share a batch (by up to 1e-4 here), so batching the folder's chunks
    in order, EMBED_BATCH at a time, as rag.indexing.fill does, gives the embedded index's vectors exactly.
    """

    def __init__(self, embedder: Embedder | None, batch: int = EMBED_BATCH, progress: ProgressFn | None = None):
        self.embedder = embedder
        self.batch = batch
        self.progress = progress or (lambda event: None)
        self._items: list[Prepared] = []
        self._texts: list[str] = []  # chunks of the waiting documents, in order
        self._vectors: list[np.ndarray] = []  # embeddings of the first len(_vectors) of them
        self.embedded = 0
        self._started = time.perf_counter()

    def add(self, item: Prepared) -> list[Prepared]:
        """Queue one document; the documents whose every chunk is now embedded, in the order they came."""
        if self.embedder is None:
            return [item]
        self._items.append(item)
        self._texts.extend(indexed_text(c) for c in item.chunks)
        return self._drain(self.embedder, final=False)

    def finish(self) -> list[Prepared]:
        """Embed what is left (a last, shorter batch) and release every waiting document."""
        return self._drain(self.embedder, final=True) if self.embedder is not None else []

    def _drain(self, embedder: Embedder, final: bool) -> list[Prepared]:
        while len(self._texts) - len(self._vectors) >= self.batch or (final and len(self._texts) > len(self._vectors)):
            lo = len(self._vectors)
            part = self._texts[lo : lo + self.batch]
            self._vectors.extend(embed_texts(embedder, part, len(part)))
            self.embedded += len(part)
            rate = self.embedded / max(time.perf_counter() - self._started, 1e-9)
            self.progress(IndexProgress("embed", self.embedded, 0, rate=rate))
        ready = []
        while self._items and len(self._items[0].chunks) <= len(self._vectors):
            item = self._items.pop(0)
            n = len(item.chunks)
            vectors = np.asarray(self._vectors[:n], dtype=np.float32).reshape(n, -1) if n else None
            del self._vectors[:n], self._texts[:n]
            ready.append(replace(item, vectors=vectors))
        return ready


def from_index(index, documents: Sequence[Document]) -> Iterator[Prepared]:
    """The documents of an embedded rag.indexing.hybrid.HybridIndex, ready to write with its chunks, terms and embeddings.

    Moving a folder's index into the store this way costs no embedding; `documents` give the content hashes.
    """
    rows: dict[str, list[int]] = {}
    for row, chunk in enumerate(index.chunks):
        rows.setdefault(chunk.doc_id, []).append(row)
    settings = index.term_settings
    for doc in documents:
        mine = rows.get(doc.doc_id)
        if not mine:
            continue
        chunks = [index.chunks[r] for r in mine]
        vectors = index.dense.matrix[mine] if index.has_dense and bool(index.embedded[mine].all()) else None
        chunk_terms = [index_terms(indexed_text(c, settings.headings), settings) for c in chunks]
        yield Prepared(doc, chunks, chunk_terms, vectors, index.source(doc.doc_id))


def _delete(conn, doc_ids: list[str]) -> None:
    """Remove documents with their chunks and postings, taking them out of the corpus statistics (in a transaction)."""
    counts = conn.execute(
        f"SELECT count(*), coalesce(sum(length), 0), count(embedding) FROM {S}.chunks WHERE doc_id = ANY(%s)", (doc_ids,)
    ).fetchone()
    gone = f"""gone AS (SELECT p.term, count(*) AS n FROM {S}.postings p JOIN {S}.chunks c ON c.id = p.chunk
                           WHERE c.doc_id = ANY(%s) GROUP BY p.term)"""
    conn.execute(f"WITH {gone} DELETE FROM {S}.terms t USING gone WHERE t.term = gone.term AND t.df - gone.n <= 0",
                 (doc_ids,))
    conn.execute(f"WITH {gone} UPDATE {S}.terms t SET df = t.df - gone.n FROM gone WHERE t.term = gone.term", (doc_ids,))
    # By hand, not only by the foreign key's cascade: a first load runs without it (rag.postgres.schema.DEFERRED).
    conn.execute(f"DELETE FROM {S}.postings WHERE chunk IN (SELECT id FROM {S}.chunks WHERE doc_id = ANY(%s))",
                 (doc_ids,))
    conn.execute(f"DELETE FROM {S}.documents WHERE doc_id = ANY(%s)", (doc_ids,))  # cascades to chunks
    conn.execute(
        f"UPDATE {S}.stats SET chunks = chunks - %s, total_length = total_length - %s, embedded = embedded - %s, "
        "generation = generation + 1",
        counts,
    )


def _binary_vectors(conn) -> None:
    """Teach this connection to send numpy rows as pgvector's binary form (dim, 0, big-endian float4s) in a COPY:
    formatting them as text cost 0.3 ms a chunk, a third of the ingest's own time (measured on 5k real chunks)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format
    from psycopg.types import TypeInfo

    info = TypeInfo.fetch(conn, "vector")
    if info is None or conn.adapters.types.get("vector") is not None:
        return
    info.register(conn)

    class VectorDumper(Dumper):
        format = Format.BINARY
        oid = info.oid

        def dump(self, obj):
            row = np.asarray(obj, dtype=">f4")
            return len(row).to_bytes(2, "big") + b"\0\0" + row.tobytes()

    conn.adapters.register_dumper(np.ndarray, VectorDumper)


_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _copy_text(term: str) -> str:
    """A term as COPY's text format reads it (terms are words: the translation is for what a tokenizer might let by)."""
    return term.translate(_COPY_ESCAPES) if not term.isalnum() else term


CHUNK_TYPES = ("int8", "text", "text", "int4", "text", "text[]", "text", "int4", "int4", "int4", "int4", "bool", "int4",
               "vector")
CHUNK_COLUMNS = "id, chunk_id, doc_id, ordinal, uri, heading, body, line_start, line_end, page_start, page_end, " \
                "outdated, length, embedding"


def _insert(conn, items: list[Prepared]) -> None:
    """Add prepared documents, their chunks, postings and statistics (in a transaction; old versions deleted first).

    Each table gets one binary COPY per batch; chunk ids are taken from the identity's sequence beforehand, so the
    postings need not wait for the chunks to be read back.
    """
    with conn.cursor() as cur, cur.copy(
        f"COPY {S}.documents (doc_id, sha256, outdated, why, superseded_by, expires, notice, skipped, chunk_count) "
        "FROM STDIN"
    ) as copy:
        for item in items:
            info = item.info
            copy.write_row((item.doc.doc_id, item.doc.sha256, info.outdated, info.why, info.superseded_by, info.expires,
                            info.notice, item.skipped, len(item.chunks)))
    total = sum(len(item.chunks) for item in items)
    if not total:
        conn.execute(f"UPDATE {S}.stats SET generation = generation + 1")
        return
    ids = [r[0] for r in conn.execute(
        f"SELECT nextval(pg_get_serial_sequence('{S}.chunks', 'id')) FROM generate_series(1, %s)", (total,)
    ).fetchall()]
    _binary_vectors(conn)
    length_sum = embedded = 0
    df: Counter[str] = Counter()
    next_id = iter(ids)
    with conn.cursor() as cur:
        with cur.copy(f"COPY {S}.chunks ({CHUNK_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(CHUNK_TYPES)
            for item in items:
                outdated = item.info.outdated
                embedded += len(item.chunks) if item.vectors is not None else 0
                for n, chunk in enumerate(item.chunks):
                    vector = item.vectors[n] if item.vectors is not None else None
                    copy.write_row((next(next_id), chunk.chunk_id, chunk.doc_id, n, chunk.uri, list(chunk.heading_path),
                                    chunk.text, chunk.line_start, chunk.line_end, chunk.page_start, chunk.page_end,
                                    outdated, len(item.terms[n]), vector))
        next_id = iter(ids)
        with cur.copy(f"COPY {S}.postings (term, chunk, tf, length) FROM STDIN") as copy:
            lines: list[str] = []
            for item in items:
                for chunk_terms in item.terms:
                    chunk, length = next(next_id), len(chunk_terms)
                    length_sum += length
                    counts = Counter(chunk_terms)
                    df.update(counts.keys())
                    lines.extend([f"{_copy_text(term)}\t{chunk}\t{tf}\t{length}\n" for term, tf in counts.items()])
            copy.write("".join(lines))
    names = sorted(df)
    conn.execute(
        f"""INSERT INTO {S}.terms (term, df, prefix)
            SELECT t, n, left(t, {PREFIX}) FROM unnest(%s::text[], %s::int[]) AS u(t, n)
            ON CONFLICT (term) DO UPDATE SET df = {S}.terms.df + excluded.df""",
        (names, [df[t] for t in names]),
    )
    conn.execute(
        f"UPDATE {S}.stats SET chunks = chunks + %s, total_length = total_length + %s, embedded = embedded + %s, "
        "generation = generation + 1",
        (total, length_sum, embedded),
    )


def write_batch(conn, items: Sequence[Prepared]) -> list[Prepared]:
    """Replace the stored documents by `items` in one transaction; those written (not those the store already had,
    which another ingester wrote meanwhile)."""
    with write_transaction(conn):
        names = [item.doc.doc_id for item in items]
        stored = dict(conn.execute(f"SELECT doc_id, sha256 FROM {S}.documents WHERE doc_id = ANY(%s)", (names,)).fetchall())
        fresh = [item for item in items if stored.get(item.doc.doc_id) != item.doc.sha256]
        old = [item.doc.doc_id for item in fresh if item.doc.doc_id in stored]
        if old:
            _delete(conn, old)
        if fresh:
            _insert(conn, fresh)
    return fresh


def batches(items: Iterable[Prepared], chunks: int | None = None, seconds: float | None = None,
            clock=time.monotonic) -> Iterator[list[Prepared]]:
    """Documents grouped for one transaction each: a batch closes at `chunks` chunks (BATCH_CHUNKS), or when a
    document arrives after the batch's first waited `seconds` (BATCH_SECONDS: embedding is slow, and a watched
    folder's change should show at once)."""
    chunks, seconds = chunks or BATCH_CHUNKS, BATCH_SECONDS if seconds is None else seconds
    batch: list[Prepared] = []
    size, opened = 0, 0.0
    for item in items:
        if batch and clock() - opened >= seconds:
            yield batch
            batch, size = [], 0
        if not batch:
            opened = clock()
        batch.append(item)
        size += len(item.chunks)
        if size >= chunks:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def write_documents(conn, items: Iterable[Prepared]) -> Iterator[Prepared]:
    """Write documents batch by batch (see batches), yielding each one written. Into a store with no chunk yet, the
    deferred indexes (rag.postgres.schema.DEFERRED) are dropped first and built once at the end."""
    dropped = drop_deferred(conn)
    for batch in batches(items):
        yield from write_batch(conn, batch)
    if dropped:
        build_deferred(conn)


def apply_document(conn, item: Prepared) -> bool:
    """Replace the stored document by `item` in one transaction; False when the store already had this content."""
    return bool(write_batch(conn, [item]))


def remove_document(conn, doc_id: str) -> bool:
    """Delete one document in one transaction; False when it was not there (any more)."""
    with write_transaction(conn):
        if conn.execute(f"SELECT 1 FROM {S}.documents WHERE doc_id = %s", (doc_id,)).fetchone() is None:
            return False
        _delete(conn, [doc_id])
    return True


def vacuum(conn) -> None:
    """Mark the written pages all-visible and refresh the planner's statistics, so searches read postings from the
    index alone at once instead of after autovacuum (measured at 20k chunks just after a bulk load: BM25 p50 166 ms
    before, ~30 ms after). VACUUM skips pages already all-visible: after a small update it is quick."""
    conn.execute(f"VACUUM (ANALYZE) {S}.postings, {S}.chunks, {S}.terms, {S}.documents, {S}.stats")


def write_vectors(conn, ids: Sequence[int], vectors: np.ndarray) -> int:
    """Store the embeddings of chunks that have none in one UPDATE, the vectors sent binary; how many were stored.

    Row by row it was a round trip a chunk, and the text form (vector_text, 8 digits) does not always read back as
    the float32 that ingest's binary COPY stores. 3,000 synthetic rows in fill's batches of 16, load average ~2.9:
    1.0-1.1k rows/s row by row, 8-19k this way, 2k through a COPY into a temp table (its catalog churn); with the
    HNSW index kept up, as a real fill has it, the index dominates: ~300 rows/s before, ~410 after.
    """
    _binary_vectors(conn)
    return conn.execute(
        f"UPDATE {S}.chunks c SET embedding = f.embedding FROM unnest(%b::int8[], %b::vector[]) AS f(id, embedding) "
        "WHERE c.id = f.id AND c.embedding IS NULL",
        (list(ids), list(vectors)),
    ).rowcount


def fill_embeddings(conn, embedder: Embedder, batch: int = EMBED_BATCH, progress: ProgressFn | None = None) -> int:
    """Embed every stored chunk that has no embedding yet (a store first filled without MiniLM); how many."""
    done = 0
    total = conn.execute(f"SELECT count(*) FROM {S}.chunks WHERE embedding IS NULL").fetchone()[0]
    started = time.perf_counter()
    while True:
        rows = conn.execute(
            f"SELECT id, heading, body FROM {S}.chunks WHERE embedding IS NULL ORDER BY id LIMIT %s", (batch,)
        ).fetchall()
        if not rows:
            return done
        texts = [indexed_text(Chunk("", "", "", body, tuple(heading))) for _id, heading, body in rows]
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        with write_transaction(conn):
            updated = write_vectors(conn, [chunk for chunk, _h, _b in rows], vectors)
            conn.execute(f"UPDATE {S}.stats SET embedded = embedded + %s, generation = generation + 1", (updated,))
        done += len(rows)
        if progress is not None:
            progress(IndexProgress("embed", done, total, rate=done / max(time.perf_counter() - started, 1e-9)))


def store_settings(tokenizer: Tokenizer, embedder: Embedder | None, chunking: ChunkSettings,
                   term_settings: TermSettings) -> dict:
    """What the stored chunks, postings and embeddings depend on (rag.indexing.build.index_settings plus the BM25 terms)."""
    return index_settings(tokenizer, embedder, chunking) | {"bm25_terms": term_settings.to_dict()}


def check_settings(conn, url: str, wanted: dict, embedder: Embedder | None) -> None:
    """Record the settings of a new store; refuse one whose chunks or embeddings were made otherwise."""
    with write_transaction(conn):  # two ingesters starting on a new store: the first records, the second checks
        _check_settings(conn, url, wanted, embedder)


def _check_settings(conn, url: str, wanted: dict, embedder: Embedder | None) -> None:
    stored = read_settings(conn)
    if not stored:
        write_settings(conn, wanted)
        return
    differ = [k for k in CHUNK_KEYS if stored.get(k) != wanted[k]]
    if differ:
        raise StoreRefused(f"the store {redact_url(url)} was indexed with other {', '.join(differ)}: index with the same "
                           "--model, or re-index it with `smoldocs index --rebuild --store URL`")
    if embedder is None:
        return
    model, dim = stored.get("embedding_model"), embedding_dim(conn)
    if model is None:
        write_settings(conn, {k: wanted[k] for k in ("embedding_model", "embedding_dim", "embedded_text")})
    elif model != wanted["embedding_model"] or stored.get("embedded_text") != wanted["embedded_text"]:
        raise StoreRefused(f"the store {redact_url(url)} holds embeddings of {model}, not {wanted['embedding_model']}: "
                           "use the same embedder, or re-index with `smoldocs index --rebuild --store URL`")
    if dim != int(embedder.dim):
        raise StoreRefused(f"the store {redact_url(url)} holds {dim}-dimensional embeddings; {embedder.model_id} gives "
                           f"{embedder.dim}: re-index with `smoldocs index --rebuild --store URL`")


def _documents(root, emit: ProgressFn) -> tuple[list[tuple[str, Document]], dict[str, int], tuple[str, ...]]:
    """Every document to store, each with the prefix of its id (`notes:` when several collections are stored, as
    rag.indexing.collections names them), what was skipped, and the prefixes of sources that could not be read:
    their stored documents are kept (one notice), not removed."""
    if not isinstance(root, Collections):
        corpus = load_corpus(root, on_document=lambda n: emit(IndexProgress("scan", n, 0)))
        return [("", d) for d in corpus.documents], dict(corpus.skipped), ()
    documents: list[tuple[str, Document]] = []
    skipped: dict[str, int] = {}
    failed: list[str] = []
    for c in root:
        prefix = c.name + SEPARATOR if root.joined else ""
        try:
            if c.problem:
                raise DocsNotFound(c.problem)
            corpus = load_corpus(c.source, on_document=lambda n: emit(IndexProgress("scan", len(documents) + n, 0)))
        except RagError as exc:
            if not root.joined:
                raise
            emit(IndexProgress("notice", message=f"collection {c.name} ({c.source}): {exc}; its stored documents are kept"))
            failed.append(prefix)
            continue
        documents += [(prefix, d) for d in corpus.documents]
        for why, n in corpus.skipped.items():
            skipped[why] = skipped.get(why, 0) + n
    if root.joined and len(failed) == len(root):
        raise DocsNotFound("no collection could be read: the store is left as it was")
    return documents, skipped, tuple(failed)


def named(item: Prepared, prefix: str) -> Prepared:
    """A prepared document under its collection's prefix (`notes:todo.md`, chunk `notes:todo.md#2`)."""
    if not prefix:
        return item
    chunks = [replace(c, chunk_id=prefix + c.chunk_id, doc_id=prefix + c.doc_id) for c in item.chunks]
    return replace(item, doc=replace(item.doc, doc_id=prefix + item.doc.doc_id), chunks=chunks)


def ingest(
    url: str,
    docs_dir,
    tokenizer: Tokenizer,
    embedder: Embedder | None,
    chunking: ChunkSettings = ChunkSettings(),
    term_settings: TermSettings = TermSettings(),
    rebuild: bool = False,
    progress: ProgressFn | None = None,
) -> IndexUpdate:
    """Bring the store at `url` up to date with `docs_dir` (a folder, --man's pages, or several named sources, a
    rag.indexing.collections.Collections): changed and new documents written, removed ones deleted."""
    import psycopg

    started = time.perf_counter()
    emit = progress or (lambda event: None)
    root = docs_dir if isinstance(docs_dir, Collections) else check_docs_dir(docs_dir)
    conn = connect(url)
    try:
        if rebuild:
            drop_schema(conn)
        ensure_schema(conn, url, int(embedder.dim) if embedder is not None else DEFAULT_DIM)
        wanted = store_settings(tokenizer, embedder, chunking, term_settings)
        check_settings(conn, url, wanted, embedder)
        if embedder is None:
            emit(IndexProgress("notice", message=SEMANTIC_OFF))
        emit(IndexProgress("scan", 0, 0))
        documents, skipped, kept = _documents(root, emit)
        with write_transaction(conn):  # PgIndex.collection reads a hit's collection from its id's prefix
            write_settings(conn, {"collections": root.names if isinstance(root, Collections) and root.joined else []})
        stored = dict(conn.execute(f"SELECT doc_id, sha256 FROM {S}.documents").fetchall())
        added: list[str] = []
        changed: list[str] = []
        queue = EmbedQueue(embedder, progress=emit)

        def ready() -> Iterator[Prepared]:
            for n, (prefix, doc) in enumerate(documents, start=1):
                emit(IndexProgress("chunk", n - 1, len(documents), message=prefix + doc.doc_id))
                if stored.get(prefix + doc.doc_id) == doc.sha256:
                    continue
                item = named(prepare(doc, tokenizer, chunking, term_settings, emit), prefix)
                if item.info.notice:
                    emit(IndexProgress("notice", message=f"{doc.doc_id}: {item.info.notice}"))
                if item.skipped:
                    skipped[item.skipped] = skipped.get(item.skipped, 0) + 1
                yield from queue.add(item)
            yield from queue.finish()

        build_deferred(conn)  # an earlier first load that was interrupted left them unbuilt
        for item in write_documents(conn, ready()):
            (changed if item.doc.doc_id in stored else added).append(item.doc.doc_id)
        present = {prefix + d.doc_id for prefix, d in documents}
        removed = [d for d in sorted(stored) if d not in present and not d.startswith(kept) and remove_document(conn, d)]
        embedded = queue.embedded + (fill_embeddings(conn, embedder, progress=emit) if embedder is not None else 0)
        if added or changed or removed or embedded:
            vacuum(conn)
        totals = conn.execute(f"SELECT chunks, embedded FROM {S}.stats").fetchone()
        chunk_count, with_vectors = int(totals[0]), int(totals[1])
    except psycopg.Error as exc:
        raise unavailable(exc, url, during="while indexing") from None
    finally:
        conn.close()
    fresh = len(added) + len(changed)
    update = IndexUpdate(
        index_dir=redact_url(url),
        rebuilt=rebuild or not stored,
        reason="rebuild requested" if rebuild else ("new store" if not stored else ""),
        added=tuple(added),
        changed=tuple(changed),
        removed=tuple(removed),
        unchanged=len(documents) - fresh,
        chunks=chunk_count,
        chunks_embedded=embedded,
        skipped=skipped,
        seconds=time.perf_counter() - started,
        parts=("bm25", "dense") if embedder is not None else ("bm25",),
        dense_missing=chunk_count - with_vectors if embedder is not None else 0,
    )
    emit(IndexProgress("done", chunk_count, chunk_count, update.summary()))
    return update

