"""Real MiniLM rows beyond the real-docs suite's: benchmarks.real_corpus's chunks embedded by the real embedder, cached.

Run: nice -n 19 .venv/bin/python -m benchmarks.real_vectors --minutes 60 [--threads 1] [--corpus DIR]

For benchmarks.hnsw_recall, which needs more real rows than the suite's indexes hold (about 58k) to say whether
HNSW keeps its recall at 100k and beyond. Embedding runs at 10-20 chunks/s on one core here, so it is done once, in
parts that a later run continues: each part is an .npz of chunk ids and float32 rows under <corpus>/vectors-<model>/.
The suite's own chunks are left out (their rows are in the suite's indexes already); the rest are taken in a fixed
shuffled order, so any number of rows is a sample of man pages, info manuals and /usr/share/doc alike.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from rag.ingest.chunking import indexed_text
from rag.types import Chunk

PART = 1000  # rows per cached part
SEED = 40  # the shuffle's seed (issue #40)


def _embedder(threads: int):
    from models.llama_cpp.bert_gguf import ensure_minilm_gguf
    from models.llama_cpp.embedder import LlamaEmbedder, minilm_model_id

    cached = ensure_minilm_gguf()
    return LlamaEmbedder(cached.path, minilm_model_id(cached), n_threads=threads)


def candidates(chunks: list[Chunk]) -> list[Chunk]:
    """The chunks to embed, in the order they are embedded: not the suite's, shuffled with a fixed seed."""
    rest = [c for c in chunks if not c.doc_id.startswith("realdocs/")]
    order = np.random.default_rng(SEED).permutation(len(rest))
    return [rest[i] for i in order]


def folder_for(corpus: Path, model_id: str) -> Path:
    return corpus / f"vectors-{model_id}"


def load(folder: Path) -> tuple[list[str], np.ndarray]:
    """The cached rows: (chunk ids, float32 matrix), in the order embedded; empty when none are."""
    parts = sorted(folder.glob("part-*.npz")) if folder.is_dir() else []
    ids: list[str] = []
    rows = []
    for path in parts:
        with np.load(path) as part:
            ids += part["ids"].tolist()
            rows.append(part["rows"])
    return ids, (np.concatenate(rows) if rows else np.zeros((0, 384), dtype=np.float32))


def build(corpus: Path | None = None, minutes: float = 60.0, threads: int = 1, progress=print) -> int:
    """Embed the next chunks until `minutes` pass, a part at a time; the number of rows cached in all."""
    from benchmarks import real_corpus

    corpus = corpus or real_corpus.corpus_dir()
    embedder = _embedder(threads)
    folder = folder_for(corpus, embedder.model_id)
    folder.mkdir(parents=True, exist_ok=True)
    done = len(load(folder)[0])
    todo = candidates(real_corpus.load_chunks(folder=corpus))
    deadline = time.perf_counter() + minutes * 60
    started, fresh = time.perf_counter(), 0
    while done < len(todo) and time.perf_counter() < deadline:
        part = todo[done : done + PART]
        rows = np.asarray(embedder.embed([indexed_text(c) for c in part]), dtype=np.float32)
        tmp = folder / f"part-{done // PART:05d}.tmp.npz"
        np.savez(tmp, ids=np.array([c.chunk_id for c in part]), rows=rows)
        tmp.replace(folder / f"part-{done // PART:05d}.npz")
        done, fresh = done + len(part), fresh + len(part)
        progress(f"{done:,} rows cached, {fresh / (time.perf_counter() - started):.1f} chunks/s")
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0, help="stop after this long (a part at a time)")
    parser.add_argument("--threads", type=int, default=1, help="embedding threads (default 1)")
    parser.add_argument("--corpus", type=Path, default=None, help="the real corpus cache folder (default: current)")
    args = parser.parse_args()
    print(f"{build(args.corpus, args.minutes, args.threads):,} rows cached")


if __name__ == "__main__":
    main()
