"""Passages reordered by the cross-encoder before packing: the hybrid's first POOL hits, each scored by its best
sentences read together with the question, blended with the hybrid's own rank.

A chunk's score is the reranker's best logit over its SENTENCES_PER_CHUNK sentences that share most words with the
question (each under its heading path, as quotes are read: the same texts, so a reranker that remembers its scores
pays for them once). The blend is reciprocal-rank fusion of the two orders, the hybrid's weighted by HYBRID_WEIGHT,
so an exact match the hybrid ranks first is not buried by a paraphrase the reranker likes a little more.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from models.protocols import Reranker
from rag import tuned
from rag.answering.quote_features import FEATURES, candidates, feature_matrix
from rag.citations import Citation
from rag.types import Hit

POOL = 20  # hybrid hits reranked (k=5 shown)
SENTENCES_PER_CHUNK = 2
RRF_K = 10
HYBRID_WEIGHT = tuned.HYBRID_WEIGHT  # 1.0: the two orders count alike


PASSAGE_CHARS = 1500  # a passage read whole is cut here (the window, 256 tokens, holds about 1,000 characters)


def passage_text(heading_path: Sequence[str], text: str) -> str:
    """A whole chunk as the passage reranker reads it, in training and at run time alike: its heading path, then
    its text, cut to PASSAGE_CHARS."""
    heading = " > ".join(heading_path)
    body = " ".join(text.split())[:PASSAGE_CHARS]
    return f"{heading}: {body}" if heading else body


def chunk_texts(question: str, hit: Hit, limit: int = SENTENCES_PER_CHUNK) -> list[str]:
    """The chunk's quotable sentences under its heading path that share most words with the question."""
    shown = {1: Citation(1, hit.chunk_id, hit.doc_id, hit.uri)}
    found = candidates(shown, lambda chunk_id: hit.chunk if chunk_id == hit.chunk_id else None)
    if not found:
        heading = " > ".join(hit.heading_path)
        return [f"{heading}: {hit.text[:400]}" if heading else hit.text[:400]]
    coverage = feature_matrix(question, found, None)[:, FEATURES.index("coverage")]
    best = np.argsort(-coverage, kind="stable")[:limit]
    return [found[i].in_context for i in best]


class PassageReranker:
    """search_docs' `reorder` hook (rag.excerpts.search_tool): the hybrid's first POOL hits in the blended order."""

    pool = POOL

    def __init__(self, reranker: Reranker) -> None:
        self.reranker = reranker

    def __call__(self, question: str, hits: Sequence[Hit], k: int) -> list[Hit]:
        return rerank_hits(question, hits, self.reranker, k)


def rerank_hits(question: str, hits: Sequence[Hit], reranker: Reranker, k: int) -> list[Hit]:
    """The first `k` of `hits` (best first) in the blended order of the module docstring."""
    if len(hits) <= 1:
        return list(hits)[:k]
    if reranker.reads == "passages":
        texts = [[passage_text(h.heading_path, h.text)] for h in hits]
    else:
        texts = [chunk_texts(question, h) for h in hits]
    flat = [t for group in texts for t in group]
    logits = reranker.score(question, flat)
    best, at = [], 0
    for group in texts:
        best.append(float(logits[at : at + len(group)].max()) if group else float("-inf"))
        at += len(group)
    by_reranker = {i: r for r, i in enumerate(sorted(range(len(hits)), key=lambda i: (-best[i], i)))}
    fused = [HYBRID_WEIGHT / (RRF_K + i) + 1.0 / (RRF_K + by_reranker[i]) for i in range(len(hits))]
    order = sorted(range(len(hits)), key=lambda i: (-fused[i], i))
    return [hits[i] for i in order[:k]]
