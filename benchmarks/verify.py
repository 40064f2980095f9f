"""Claim verification and the extractive fallback: time per answer, with MiniLM (cold and warm cache) and lexical.

Run: .venv/bin/python -m benchmarks.verify [--repeats N] [--json]
"""

from __future__ import annotations

import argparse
import random

from benchmarks.measure import machine, median, percentile, timed
from benchmarks.table import render, row, to_json
from rag import support
from rag.calibration_set import load_items
from rag.citations import Citation
from rag.extractive import extractive_answer
from rag.verify import verify_answer

SHOWN = 5  # excerpts shown per answer, as search_docs packs them by default
CLAIMS = 4  # claims per answer


def answers(n: int, seed: int = 7):
    """n (question, answer, shown, lookup) workloads: claims from the calibration set citing shown excerpts."""
    items = load_items()
    by_chunk: dict[str, list] = {}
    for item in items:
        by_chunk.setdefault(item.chunk.chunk_id, []).append(item)
    chunk_ids = sorted(by_chunk)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        picked = rng.sample(chunk_ids, SHOWN)
        chunks = {cid: by_chunk[cid][0].chunk for cid in picked}
        shown = {i + 1: Citation(i + 1, c.chunk_id, c.doc_id, c.uri) for i, c in enumerate(chunks.values())}
        lines = []
        for _ in range(CLAIMS):
            n_cited = rng.randint(1, SHOWN)
            item = rng.choice(by_chunk[shown[n_cited].chunk_id])
            lines.append(f"{item.claim.rstrip('.')} [{n_cited}].")
        question = by_chunk[picked[0]][0].source or by_chunk[picked[0]][0].claim
        out.append((question, " ".join(lines), shown, chunks.get))
    return out


def measure(workloads, embedder, repeats: int, cold: bool, fn) -> list[float]:
    times = []
    for _ in range(repeats):
        for work in workloads:
            if cold:
                support._VECTORS.clear()
            times.append(timed(lambda: fn(work, embedder)))
    return times


class _Counting:
    """Passes through to the embedder, recording how many texts each call embeds."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self.sizes = inner, inner.model_id, inner.dim, []

    def embed(self, texts):
        self.sizes.append(len(texts))
        return self.inner.embed(texts)


def _verify(work, embedder):
    _, answer, shown, lookup = work
    return verify_answer(answer, shown, lookup, embedder)


def _extract(work, embedder):
    question, _, shown, lookup = work
    return extractive_answer(question, shown, lookup, embedder)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from models.embedder import load_embedder

    embedder = load_embedder()
    workloads = answers(args.answers)
    _verify(workloads[0], embedder)  # warm-up: first decode allocates buffers
    counter = _Counting(embedder)
    support._VECTORS.clear()
    for work in workloads:
        _verify(work, counter)
        support._VECTORS.clear()
    rows = [row("texts embedded per answer, cold", median(counter.sizes), section="per answer")]
    for what, emb, cold, fn, target in (
        ("verify, MiniLM, cold cache (ms/answer)", embedder, True, _verify, "ours <= 1500"),
        ("verify, MiniLM, warm cache (ms/answer)", embedder, False, _verify, "ours <= 100"),
        ("verify, lexical only (ms/answer)", None, False, _verify, "ours <= 50"),
        ("extractive fallback, MiniLM, cold (ms/answer)", embedder, True, _extract, "ours <= 1500"),
    ):
        ms = [t * 1000 for t in measure(workloads, emb, args.repeats, cold, fn)]
        rows.append(row(what, median(ms), target=target, p90=percentile(ms, 90), section="per answer"))
    if args.json:
        print(to_json(rows, machine()))
    else:
        print(render(rows, f"{SHOWN} excerpts shown, {CLAIMS} claims per answer, {args.answers} answers"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
