"""Retrieval benchmark: index build, unchanged re-index, query latency at docs_corpus / 10k / 100k chunks, memory.

Run: .venv/bin/python -m benchmarks.retrieval [--quick]

Latency is one whole `HybridIndex.search` (MiniLM query embedding + BM25 + dense + fusion + the learned order of the
first 30 hits) per distinct question
of docs_corpus/questions.jsonl. The baseline for queries is the straightforward build: rank_bm25's
BM25Okapi.get_scores over every chunk, the same dense product and fusion. Synthetic corpora reuse docs_corpus:
chunk texts are words drawn from its word frequencies at its chunk lengths, and embeddings are its chunk
embeddings plus noise (so cosines, and the dense floor, behave as on real text); embedding 100k real chunks
would take hours on this CPU.
"""

from __future__ import annotations

import argparse
import os
import re
import tempfile
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from benchmarks.measure import load_average, percentile
from benchmarks.table import render, row
from benchmarks.workload import implements
from models.protocols import Embedder
from rag.indexing import store
from rag.ingest.chunking import indexed_text
from rag.retrieval.fusion import fuse, top_rows
from rag.indexing.hybrid import CANDIDATE_DEPTH, HybridIndex
from rag.indexing.build import open_index
from rag.evaluation import load_questions
from rag.retrieval.terms import index_terms
from rag.types import Chunk

SECTION = "retrieval"


def rss_mb() -> float:
    """Resident memory of this process now, in MB (Linux /proc; nan elsewhere)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def synthetic_chunks(base: list[Chunk], n: int, seed: int = 0) -> list[Chunk]:
    """n chunks whose words follow docs_corpus's word frequencies and whose lengths follow its chunk lengths."""
    rng = np.random.default_rng(seed)
    words = [w for c in base for w in re.findall(r"\S+", c.text)]
    lengths = np.array([len(re.findall(r"\S+", c.text)) for c in base])
    pool = np.array(words, dtype=object)
    out = []
    for i in range(n):
        src = base[i % len(base)]
        text = " ".join(pool[rng.integers(0, len(pool), size=int(lengths[i % len(base)]))])
        doc_id = f"synthetic/{i // 20:05d}.md"
        out.append(Chunk(f"{doc_id}#{i % 20}", doc_id, doc_id, text, src.heading_path, 1, 1))
    return out


def synthetic_embeddings(base: np.ndarray, n: int, noise: float = 0.6, seed: int = 0) -> np.ndarray:
    """Row i is base row i mod len(base) plus Gaussian noise, renormalized."""
    rng = np.random.default_rng(seed)
    rows = base[np.arange(n) % len(base)] + rng.normal(0, noise / np.sqrt(base.shape[1]), (n, base.shape[1]))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows.astype(np.float32)


class NaiveSearch:
    """The straightforward hybrid: BM25Okapi.get_scores over every chunk, then the same dense and fusion."""

    def __init__(self, index: HybridIndex) -> None:
        self.index = index
        settings = index.term_settings
        self.bm25 = BM25Okapi([index_terms(indexed_text(c, settings.headings), settings) for c in index.chunks])

    def search(self, query: str, k: int = 5) -> list[tuple[int, float]]:
        lexical = top_rows(np.asarray(self.bm25.get_scores(index_terms(query, self.index.term_settings))), CANDIDATE_DEPTH)
        semantic = self.index.rank_dense(query, CANDIDATE_DEPTH)
        return fuse(self.index.fusion, lexical, semantic, self.index.bm25_weight)[:k]


def latencies_ms(search, queries: list[str], clock=time.perf_counter) -> list[float]:
    """Milliseconds per query: wall time by default; time.process_time gives CPU time, which load does not inflate."""
    out = []
    for q in queries:
        start = clock()
        search(q)
        out.append((clock() - start) * 1000)
    return out


def query_rows(label: str, index: HybridIndex, queries: list[str], target_p50: str, baseline_n: int) -> list[dict]:
    """p50/p95 of whole searches, the embedding share, and the naive baseline on a subset of the queries."""
    index.search(queries[0])  # warm up: first-call allocations are not what a user waits for
    ours = latencies_ms(lambda q: index.search(q, k=5), queries)
    cpu = latencies_ms(lambda q: index.search(q, k=5), queries, clock=time.process_time)
    embed = latencies_ms(lambda q: index.embedder.embed([q]), queries)
    vectors = {q: index.embedder.embed([q]) for q in queries}
    embedder, index.embedder = index.embedder, _Known(vectors, index.embedder)
    order = index.order
    try:
        rest = latencies_ms(lambda q: index.search(q, k=5), queries)
        index.order = "fused"
        fused = latencies_ms(lambda q: index.search(q, k=5), queries)
    finally:
        index.embedder, index.order = embedder, order
    naive_index = NaiveSearch(index)
    naive = latencies_ms(naive_index.search, queries[:baseline_n])
    return [
        row(f"query p50 ms, {label} (baseline: rank_bm25 get_scores)", percentile(ours, 50),
            percentile(naive, 50), target_p50, section=SECTION),
        row(f"query p95 ms, {label}", percentile(ours, 95), percentile(naive, 95), section=SECTION),
        row(f"  query CPU ms p50 (all threads; unaffected by load), {label}", percentile(cpu, 50), section=SECTION),
        row(f"  of which MiniLM query embedding p50 ms, {label}", percentile(embed, 50), section=SECTION),
        row(f"  of which BM25 + dense + fusion + {order} order p50 ms, {label} (baseline: the fused order)",
            percentile(rest, 50), percentile(fused, 50), section=SECTION),
    ]


class _Known:
    """Hands back embeddings computed beforehand, to time the rest of a search on its own."""

    def __init__(self, vectors: dict, embedder) -> None:
        self.vectors, self.model_id, self.dim = vectors, embedder.model_id, embedder.dim
        implements(self, Embedder)

    def embed(self, texts):
        return np.vstack([self.vectors[t] for t in texts])


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows with keys what / ours / baseline / ratio / target (ratio = ours / baseline); smoke: one doc, three
    queries, 1k synthetic chunks, to prove the module runs."""
    quick = quick or smoke
    from models.llama_cpp.embedder import load_embedder
    from models.llama_cpp.tokenizer import load_tokenizer

    tokenizer, embedder = load_tokenizer(), load_embedder()
    questions = [q.q for q in load_questions()]
    n_queries = 3 if smoke else 20 if quick else len(questions)
    queries = questions[:n_queries]
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="smoldocs-bench-") as tmp:
        # Quick: the build is timed on a few docs (chunks/s is the figure), queries run on the cached full index.
        n_docs = 1 if smoke else QUICK_BUILD_DOCS
        docs = _subset_docs(Path(tmp) / "docs", n_docs) if quick else None
        index_dir = Path(tmp) / "index"
        start = time.perf_counter()
        built = open_index(docs, tokenizer, embedder, index_dir=index_dir)
        build_s = time.perf_counter() - start
        update = built.update
        name = f"{n_docs} docs of docs_corpus" if quick else "docs_corpus"
        rows.append(row(f"index build, {name}, {update.files} files -> {len(built)} chunks (s)", build_s,
                        section=SECTION))
        rows.append(row("  build rate, chunks/s (chunk + embed + save)", len(built) / build_s, section=SECTION))
        rows.append(row("  embedding rate, chunks/s", update.chunks_embedded / update.embed_seconds, section=SECTION))
        reopen = []
        for _ in range(1 if smoke else 3):
            start = time.perf_counter()
            again = open_index(docs, tokenizer, embedder, index_dir=index_dir)
            reopen.append(time.perf_counter() - start)
            assert not again.update.modified
        rows.append(row("re-index, nothing changed (s) (baseline: full build)", float(np.median(reopen)), build_s,
                        "ours <= 1", section=SECTION))
    index = open_index(None, tokenizer, embedder) if quick else built
    rows += query_rows(f"docs_corpus {len(index)} chunks", index, queries, "", len(queries))

    sizes = (1_000,) if smoke else (10_000,) if quick else (10_000, 100_000)
    targets = {10_000: "ours <= 15", 100_000: "ours <= 100"}
    for n in sizes:
        rss_before = rss_mb()
        start = time.perf_counter()
        big = HybridIndex(synthetic_chunks(index.chunks, n), synthetic_embeddings(index.dense.matrix, n), embedder)
        load_s = time.perf_counter() - start
        rows += query_rows(f"{n // 1000}k chunks", big, queries, targets.get(n, ""), 10 if n > 10_000 else len(queries))
        rows.append(row(f"  open stored index, {n // 1000}k chunks (s) (baseline: build from chunk texts)",
                        _reopen_seconds(big), load_s, section=SECTION))
        held = (big.dense.matrix.nbytes + big.bm25.nbytes) / 2**20
        rows.append(row(f"  memory MB, {n // 1000}k chunks: embeddings + postings (baseline: RSS growth)", held,
                        rss_mb() - rss_before, section=SECTION))
        del big
    return rows


QUICK_BUILD_DOCS = 4


def _subset_docs(dest: Path, n: int) -> Path:
    """A copy of the first n docs of docs_corpus/docs/ in `dest`, to time an index build in seconds, not minutes."""
    import shutil

    from rag.ingest.corpus import default_docs_dir

    dest.mkdir(parents=True)
    for path in sorted((default_docs_dir() / "docs").glob("*.md"))[:n]:
        shutil.copy(path, dest / path.name)
    return dest


def _reopen_seconds(index: HybridIndex) -> float:
    """Save `index` like open_index does, then time loading it back into a searchable HybridIndex."""
    files: dict[str, dict] = {}
    for c in index.chunks:
        files.setdefault(c.doc_id, {"sha256": "-", "chunks": []})["chunks"].append(c.chunk_id)
    with tempfile.TemporaryDirectory(prefix="smoldocs-bench-") as tmp:
        store.save(Path(tmp), {}, files, index.chunks, index.dense.matrix, index.bm25, index.term_settings.to_dict())
        start = time.perf_counter()
        stored = store.load(Path(tmp))
        HybridIndex(stored.chunks, stored.embeddings, index.embedder, bm25=stored.bm25)
        return time.perf_counter() - start


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer queries, no 100k corpus")
    args = parser.parse_args()
    rows = run(quick=args.quick)
    load = ", ".join(f"{x:.1f}" for x in load_average())
    print(render(rows))
    # The process's own peak, only meaningful run alone (in `python -m benchmarks` it is the whole runner's).
    print(f"{os.cpu_count()} cores, load average {load}, peak RSS of this process {_peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
