"""Claim verification and the extractive fallback: time per answer, against embedding every cited sentence.

Run: .venv/bin/python -m benchmarks.verify [--quick] [--json]
"""

from __future__ import annotations

import argparse
import random

from benchmarks.measure import interleaved, machine, median, timed
from benchmarks.table import render, row, to_json
from benchmarks.workload import implements
from models.protocols import Embedder
from rag.verification import support
from benchmarks.fitting.calibration_set import load_items
from rag.citations import Citation
from rag.answering.extractive import extractive_answer
from rag.verification.support import gather, judge
from rag.verification.verifier import DENSE, verify_answer

SHOWN = 5  # excerpts shown per answer, as search_docs packs them by default
CLAIMS = 4  # claims per answer


def answers(n: int, seed: int = 7):
    """n (question, answer, shown, lookup) workloads: calibration claims citing the excerpts shown."""
    by_chunk: dict[str, list] = {}
    for item in load_items():
        by_chunk.setdefault(item.chunk.chunk_id, []).append(item)
    chunk_ids = sorted(by_chunk)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        chunks = [by_chunk[cid][0].chunk for cid in rng.sample(chunk_ids, SHOWN)]
        shown = {i: Citation(i, c.chunk_id, c.doc_id, c.uri) for i, c in enumerate(chunks, start=1)}
        lines = []
        for _ in range(CLAIMS):
            n_cited = rng.randint(1, SHOWN)
            item = rng.choice(by_chunk[shown[n_cited].chunk_id])
            lines.append(f"{item.claim.rstrip('.')} [{n_cited}].")
        question = by_chunk[chunks[0].chunk_id][0].claim
        out.append((question, " ".join(lines), shown, {c.chunk_id: c for c in chunks}.get))
    return out


class _Counting:
    """Passes through to the embedder, recording how many texts each call embeds."""

    def __init__(self, inner):
        self.inner, self.model_id, self.dim, self.sizes = inner, inner.model_id, inner.dim, []
        implements(self, Embedder)

    def embed(self, texts):
        self.sizes.append(len(texts))
        return self.inner.embed(texts)


def _verify(work, embedder):
    return verify_answer(work[1], work[2], work[3], embedder)


def _verify_unpruned(work, embedder):
    """The baseline: the same judgement after embedding every sentence of every cited chunk."""
    from rag.verification.claims import factual_claims

    _, answer, shown, lookup = work
    pairs = [(c.text, lookup(shown[n].chunk_id)) for c in factual_claims(answer) for n in c.citations if n in shown]
    return [judge(ev, DENSE) for ev in gather(pairs, embedder)]


def _extract(work, embedder):
    return extractive_answer(work[0], work[2], work[3], embedder)


def _cold(fn, work, embedder):
    def once() -> float:
        support._VECTORS.clear()
        return timed(lambda: fn(work, embedder))

    return once


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: two answers once, to prove the module runs."""
    from models.llama_cpp.embedder import load_embedder

    quick = quick or smoke
    embedder = load_embedder()
    workloads = answers(2 if smoke else 4 if quick else 12)
    repeats = 1 if quick else 3
    _verify(workloads[0], embedder)  # warm-up: the first decode allocates buffers
    counting = _Counting(embedder)
    for work in workloads:
        support._VECTORS.clear()
        _verify(work, counting)
    baseline_sizes = _Counting(embedder)
    for work in workloads:
        support._VECTORS.clear()
        _verify_unpruned(work, baseline_sizes)
    rows = [row("texts embedded per answer (cold)", median(counting.sizes), median(baseline_sizes.sizes))]
    cold, unpruned = [], []
    for work in workloads:
        ours, base = interleaved(_cold(_verify, work, embedder), _cold(_verify_unpruned, work, embedder), repeats)
        cold += ours
        unpruned += base
    rows.append(row("verify with MiniLM, cold cache (ms/answer)", 1000 * median(cold), 1000 * median(unpruned),
                    target="ratio <= 0.6"))  # fmt: skip
    for what, emb in (("verify with MiniLM, warm cache (ms/answer)", embedder), ("verify, lexical (ms/answer)", None)):
        times = [timed(lambda w=w: _verify(w, emb)) for _ in range(repeats) for w in workloads]
        rows.append(row(what, 1000 * median(times), target="ours <= 50"))
    extract = [_cold(_extract, w, embedder)() for _ in range(repeats) for w in workloads]
    rows.append(row("extractive fallback with MiniLM, cold (ms/answer)", 1000 * median(extract)))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = run(args.quick)
    header = f"{SHOWN} excerpts shown, {CLAIMS} claims per answer; baseline: every sentence of cited chunks embedded"
    print(to_json(rows, machine()) if args.json else render(rows, header))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
