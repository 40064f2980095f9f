"""Progressive indexing: BM25 is searchable at once, embeddings fill in behind it in batches, and resume.

A chunk whose embedding row is all zeros has no dense half yet (rag.indexing.dense.embedded_rows): it ranks by BM25 alone,
the stored index keeps the zero row, and the next run embeds it. So an index saved mid-way is a whole index with a
dense coverage below 1, never a half-written one.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Sequence

import numpy as np

from models.protocols import Embedder
from rag.ingest.chunking import indexed_text
from rag.indexing.dense import EMBED_BATCH, embedded_rows
from rag.types import Chunk

# One-shot commands (`search`, `ask`) embed for at most this long before answering; the rest waits for the next
# run or the TUI's background worker. Chosen so a first search on a 2,000-file folder stays under 20 s.
ONE_SHOT_BUDGET = 5.0

BatchFn = Callable[[int, int, float], None]  # (done, total, seconds so far)


def missing_rows(matrix: np.ndarray) -> np.ndarray:
    """Row numbers still without an embedding, in index order."""
    return np.flatnonzero(~embedded_rows(matrix))


def fill_missing(
    matrix: np.ndarray,
    chunks: Sequence[Chunk],
    embedder: Embedder,
    budget: float | None = None,
    on_batch: BatchFn | None = None,
    stop: threading.Event | None = None,
    first: Sequence[int] = (),
    batch: int = EMBED_BATCH,
    limit: int | None = None,
) -> int:
    """Embed the missing rows of `matrix` in place, batch by batch; how many rows were embedded.

    Stops before a batch once `budget` seconds have passed (None: no limit; 0: embed nothing) or `stop` is set,
    so a row is either embedded whole or left at zero. Rows in `first` go before the others (a query's BM25
    candidates, so a one-shot search gets hybrid ranking where it matters). `limit`: at most this many rows.
    """
    if budget is not None and budget <= 0:
        return 0
    todo = missing_rows(matrix).tolist()
    if first:
        wanted = set(todo)
        front = [r for r in dict.fromkeys(int(r) for r in first) if r in wanted]
        front_set = set(front)
        todo = front + [r for r in todo if r not in front_set]
    if limit is not None:
        todo = todo[:limit]
    started = time.perf_counter()
    done = 0
    for lo in range(0, len(todo), batch):
        if stop is not None and stop.is_set():
            break
        if budget is not None and time.perf_counter() - started >= budget:
            break
        rows = todo[lo : lo + batch]
        vectors = np.asarray(embedder.embed([indexed_text(chunks[r]) for r in rows]), dtype=np.float32)
        if vectors.shape != (len(rows), matrix.shape[1]):
            raise ValueError(f"embedder {embedder.model_id} returned shape {vectors.shape} for {len(rows)} texts")
        matrix[rows] = vectors
        done += len(rows)
        if on_batch is not None:
            on_batch(done, len(todo), time.perf_counter() - started)
    return done


def coverage_note(coverage: float) -> str:
    """One line saying how much of the index has its dense half ("" when all of it does)."""
    if coverage >= 1.0:
        return ""
    return f"semantic search covers {coverage:.0%} of the chunks so far; the rest ranks by BM25 alone"
