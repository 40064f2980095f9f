"""HNSW recall on real MiniLM rows: the real-docs suite's chunks in pgvector, its questions as queries.

Run: .venv/bin/python -m benchmarks.hnsw_recall   (after `python -m benchmarks.realdocs build` has indexed the suite)

benchmarks.shared_store measures recall on synthetic rows (docs_corpus's few hundred MiniLM rows plus noise), where
the ten nearest rows of a question are picked out of thousands at nearly the same distance. This measures the same
index, pgvector's HNSW with its default build settings, on the suite's own embeddings (every package's index, fit and
held, rows deduplicated) against exact cosine search in numpy, at several ef_search values.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from benchmarks.measure import load_average, percentile
from benchmarks.realdocs.suite import load_packages
from benchmarks.table import render, row
from rag.postgres.ingest import vector_text

SECTION = "hnsw_recall"
EF_SEARCH = (40, 100, 400)


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


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows: the build time, then recall@10 and query p50 at each ef_search (quick: the first two only).

    Smoke: docs_corpus's rows and five of its questions at the first ef_search, to prove the module runs
    without the real-docs suite built (its figures mean nothing)."""
    import psycopg

    from models.llama_cpp.embedder import load_embedder
    from models.llama_cpp.tokenizer import load_tokenizer
    from tests.pg_support import running_server

    embedder = load_embedder()
    rows_of = _docs_corpus_rows if smoke else _rows_and_questions
    matrix, questions, used = rows_of(load_tokenizer(), embedder)
    queries = np.asarray(embedder.embed(questions), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    truth = [set(np.argsort(-(matrix @ q), kind="stable")[:10].tolist()) for q in queries]
    label = f"{len(matrix):,} real MiniLM rows ({len(used)} packages), {len(questions)} questions"
    rows = []
    with running_server() as server, psycopg.connect(server.url(server.create_database()), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE vectors (id int PRIMARY KEY, embedding vector({matrix.shape[1]}))")
        with conn.cursor().copy("COPY vectors (id, embedding) FROM STDIN") as copy:
            for i, vector in enumerate(matrix):
                copy.write_row((i, vector_text(vector)))
        start = time.perf_counter()
        conn.execute("CREATE INDEX ON vectors USING hnsw (embedding vector_cosine_ops)")
        rows.append(row(f"HNSW build, {label} (s)", time.perf_counter() - start, section=SECTION))
        conn.execute("VACUUM ANALYZE vectors")
        for ef in EF_SEARCH[:1] if smoke else EF_SEARCH[:2] if quick else EF_SEARCH:
            conn.execute(f"SET hnsw.ef_search = {ef}")
            recall, ms = [], []
            for q, best in zip(queries, truth):
                start = time.perf_counter()
                got = conn.execute("SELECT id FROM vectors ORDER BY embedding <=> %s::vector LIMIT 10",
                                   (vector_text(q),)).fetchall()
                ms.append((time.perf_counter() - start) * 1000)
                recall.append(len({r[0] for r in got} & best) / 10)
            rows.append(row(f"HNSW recall@10 against exact search, ef_search {ef}", float(np.mean(recall)),
                            target="ours >= 0.95", section=SECTION))
            rows.append(row(f"  query p50 ms, ef_search {ef}", percentile(ms, 50), section=SECTION))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ef_search 40 and 100 only")
    args = parser.parse_args()
    print(render(run(quick=args.quick)))
    print(f"{os.cpu_count()} cores, load average {', '.join(f'{x:.1f}' for x in load_average())}")


if __name__ == "__main__":
    main()
