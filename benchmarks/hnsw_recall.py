"""HNSW recall on real MiniLM rows: the real-docs suite's chunks in pgvector, its questions as queries.

Run: .venv/bin/python -m benchmarks.hnsw_recall   (after `python -m benchmarks.realdocs build` has indexed the suite)
     .venv/bin/python -m benchmarks.hnsw_recall --extra [--corpus DIR] --build 16,64 --build 32,128

benchmarks.shared_store measures recall on synthetic rows (docs_corpus's few hundred MiniLM rows plus noise), where
the ten nearest rows of a question are picked out of thousands at nearly the same distance. This measures the same
index, pgvector's HNSW with its default build settings, on the suite's own embeddings (every package's index, fit and
held, rows deduplicated) against exact cosine search in numpy, at several ef_search values. --extra adds the rows
benchmarks.real_vectors has cached (real chunks of this machine's documentation, embedded by the same MiniLM), so
that the suite's questions look for their ten nearest among more real rows; --build M,EF_CONSTRUCTION (repeatable)
builds the graph with other settings, each reported with its size on disk, which is the memory a search wants
cached.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.measure import load_average, percentile
from benchmarks.realdocs.suite import load_packages
from benchmarks.shared_store import memory_size
from benchmarks.table import render, row
from rag.postgres.ingest import vector_text
from rag.postgres.schema import BUILD_MEMORY

SECTION = "hnsw_recall"
EF_SEARCH = (40, 100, 400)
BUILDS = ((16, 64),)  # (m, ef_construction): pgvector's defaults, as the store builds its graph


def _rows_and_questions(tokenizer, embedder) -> tuple[np.ndarray, list[str], list[str]]:
    from rag.indexing.build import open_index

    rows, questions, used = [], [], []
    for package in load_packages():
        folder = package.folder()
        if not folder.exists():
            continue
        # Only the packages whose index is embedded already: several of the fit split's newer ones are not (their
        # MiniLM rows would take hours to compute here), and a half-embedded matrix holds rows of zeros.
        index = open_index(folder, tokenizer, embedder, embed_budget=0)
        if not index.has_dense or index.dense_coverage < 1.0:
            continue
        rows.append(np.asarray(index.dense.matrix, dtype=np.float32))
        for path in package.questions:
            questions += [json.loads(line)["q"] for line in path.read_text().splitlines() if line.strip()]
        used.append(package.name)
    if not rows:
        raise RuntimeError("no real-docs package is built and embedded: run `python -m benchmarks.realdocs build`, then `score`")
    matrix = np.unique(np.concatenate(rows), axis=0)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True), questions, used


def _docs_corpus_rows(tokenizer, embedder) -> tuple[np.ndarray, list[str], list[str]]:
    """The smoke workload: the bundled docs_corpus index's rows and its first five questions."""
    from rag.evaluation import load_questions
    from rag.indexing.build import open_index

    matrix = np.asarray(open_index(None, tokenizer, embedder).dense.matrix, dtype=np.float32)
    return matrix, [q.q for q in load_questions()[:5]], ["docs_corpus"]


def _with_extra(matrix: np.ndarray, corpus: Path | None, model_id: str) -> tuple[np.ndarray, int]:
    """The rows with benchmarks.real_vectors' cached rows added (deduplicated, normalized); how many those were."""
    from benchmarks import real_corpus, real_vectors

    _ids, more = real_vectors.load(real_vectors.folder_for(corpus or real_corpus.corpus_dir(), model_id))
    if not len(more):
        raise RuntimeError("no real rows cached: run `python -m benchmarks.real_vectors --minutes M` first")
    both = np.unique(np.concatenate([matrix, more.astype(np.float32)]), axis=0)
    return both / np.linalg.norm(both, axis=1, keepdims=True), len(more)


def _exact(matrix: np.ndarray, queries: np.ndarray) -> list[set[int]]:
    """Each query's ten nearest rows by cosine, ties in row order (queries taken 256 at a time)."""
    out = []
    for lo in range(0, len(queries), 256):
        for scores in queries[lo : lo + 256] @ matrix.T:
            out.append(set(np.argsort(-scores, kind="stable")[:10].tolist()))
    return out


def run(quick: bool = False, smoke: bool = False, extra: bool = False, corpus: Path | None = None,
        builds: tuple[tuple[int, int], ...] = BUILDS, memory: str = BUILD_MEMORY) -> list[dict]:
    """Rows: per build setting, the build time and the graph's size, then recall@10 and query p50 at each
    ef_search (quick: the first two only). `memory`: maintenance_work_mem for the builds (the store's by default;
    a graph larger than it is built far more slowly, not differently in kind).

    Smoke: docs_corpus's rows and five of its questions at the first ef_search, to prove the module runs
    without the real-docs suite built (its figures mean nothing)."""
    import psycopg

    from models.llama_cpp.embedder import load_embedder
    from models.llama_cpp.tokenizer import load_tokenizer
    from tests.pg_support import running_server

    embedder = load_embedder()
    rows_of = _docs_corpus_rows if smoke else _rows_and_questions
    matrix, questions, used = rows_of(load_tokenizer(), embedder)
    added = 0
    if extra:
        matrix, added = _with_extra(matrix, corpus, embedder.model_id)
    queries = np.asarray(embedder.embed(questions), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = _exact(matrix, queries)
    more = f" + {added:,} of benchmarks.real_vectors" if added else ""
    label = f"{len(matrix):,} real MiniLM rows ({len(used)} packages{more}), {len(questions)} questions"
    rows = []
    with running_server() as server, psycopg.connect(server.url(server.create_database()), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE vectors (id int PRIMARY KEY, embedding vector({matrix.shape[1]}))")
        with conn.cursor().copy("COPY vectors (id, embedding) FROM STDIN") as copy:
            for i, vector in enumerate(matrix):
                copy.write_row((i, vector_text(vector)))
        conn.execute("VACUUM ANALYZE vectors")
        conn.execute(f"SET maintenance_work_mem = '{memory}'")  # by default as the store builds its graph
        for m, ef_construction in builds:
            conn.execute("DROP INDEX IF EXISTS vectors_hnsw")
            start = time.perf_counter()
            conn.execute(f"CREATE INDEX vectors_hnsw ON vectors USING hnsw (embedding vector_cosine_ops) "
                         f"WITH (m = {int(m)}, ef_construction = {int(ef_construction)})")
            setting = f"m {m}, ef_construction {ef_construction}"
            built = f"HNSW build, {setting}, {label}" + ("" if memory == BUILD_MEMORY else f", {memory} build memory")
            rows.append(row(f"{built} (s)", time.perf_counter() - start, section=SECTION))
            size = conn.execute("SELECT pg_relation_size('vectors_hnsw')").fetchone()[0] / 2**20
            rows.append(row(f"  graph size MB, {setting}", size, section=SECTION))
            rows += _recalls(conn, queries, truth, EF_SEARCH[:1] if smoke else EF_SEARCH[:2] if quick else EF_SEARCH,
                             setting)
    return rows


def _recalls(conn, queries: np.ndarray, truth: list[set[int]], efs, setting: str) -> list[dict]:
    """Recall@10 against exact search and query p50 at each ef_search."""
    rows = []
    for ef in efs:
        conn.execute(f"SET hnsw.ef_search = {ef}")
        recall, ms = [], []
        for q, best in zip(queries, truth):
            start = time.perf_counter()
            got = conn.execute("SELECT id FROM vectors ORDER BY embedding <=> %s::vector LIMIT 10",
                               (vector_text(q),)).fetchall()
            ms.append((time.perf_counter() - start) * 1000)
            recall.append(len({r[0] for r in got} & best) / 10)
        rows.append(row(f"HNSW recall@10 against exact search, {setting}, ef_search {ef}", float(np.mean(recall)),
                        target="ours >= 0.95", section=SECTION))
        rows.append(row(f"  query p50 ms, ef_search {ef}", percentile(ms, 50), section=SECTION))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ef_search 40 and 100 only")
    parser.add_argument("--extra", action="store_true", help="add the rows benchmarks.real_vectors has cached")
    parser.add_argument("--corpus", type=Path, default=None, help="with --extra: the real corpus cache folder")
    parser.add_argument("--build", action="append", default=None, metavar="M,EF_CONSTRUCTION",
                        help="HNSW build settings (repeatable; default 16,64)")
    parser.add_argument("--build-memory", type=memory_size, default=BUILD_MEMORY,
                        help=f"maintenance_work_mem for the builds (default {BUILD_MEMORY}, as the store builds)")
    args = parser.parse_args()
    try:
        builds = tuple(tuple(int(x) for x in b.split(",")) for b in args.build) if args.build else BUILDS
    except ValueError:
        builds = ()
    if not builds or any(len(b) != 2 or min(b) < 1 for b in builds):
        parser.error("--build takes two whole numbers, M,EF_CONSTRUCTION (e.g. 16,64)")
    print(render(run(quick=args.quick, extra=args.extra, corpus=args.corpus, builds=builds, memory=args.build_memory)))
    print(f"{os.cpu_count()} cores, load average {', '.join(f'{x:.1f}' for x in load_average())}")


if __name__ == "__main__":
    main()
