"""The learned order of search hits: the hybrid's first POOL hits reordered by a linear score over what search
already knows of each one, so the chunk that holds the answer comes before its page's other chunks.

The fused score sees each chunk alone. The features add what the pool says as a whole: how strongly the chunk's
document stands in it (its hits, its best place, its share of the fused score), whether the chunk's heading and
text hold the question's rarer terms (rare within the pool, so "configure" in every hit counts for little), where in
its document it sits, and the raw BM25 score and cosine beside their ranks. The weights are fitted by
`python -m benchmarks.realdocs fit-order` on the fit packages alone (a pairwise logistic loss: each chunk holding a
question's evidence against each one that does not) and kept in rag/tuned.py.

HybridIndex.search applies it to hybrid searches (ORDER "learned"; "fused" keeps the fused order, as `--mode
weighted` does). A hit's score becomes the logistic of its learned score, so the pool is still shown best score
first. A pool whose hits lack either raw score (a BM25-only index, chunks not embedded yet, a store that does not
report them) keeps the retriever's order.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from functools import lru_cache
from typing import Sequence

import numpy as np

from rag import tuned
from rag.retrieval.terms import index_terms
from rag.types import Hit

POOL = 30  # the hybrid's first hits reordered (k = 5 are shown)
ORDERS = ("learned", "fused")
ORDER = tuned.ORDER
FEATURES = (
    "rank", "fused", "bm25_rank", "dense_rank", "bm25", "cosine", "cosine_gap", "doc_hits", "doc_best", "doc_share",
    "heading_weight", "coverage", "heading_share", "ordinal", "first", "length", "doc_lead",
)
WEIGHTS = tuned.ORDER_WEIGHTS
BIAS = tuned.ORDER_BIAS
_ORDINAL = re.compile(r"#(\d+)$")
LENGTH_WORDS = 200  # a chunk's length feature is its words over this, capped at twice it


@lru_cache(maxsize=8192)
def _terms(text: str) -> frozenset[str]:
    """A text's distinct BM25 terms; remembered, since the same chunks come back search after search."""
    return frozenset(index_terms(text))


def orderable(hits: Sequence[Hit]) -> bool:
    """Whether every hit carries both raw scores, which the features read."""
    return all(h.bm25_score is not None and h.dense_score is not None for h in hits)


def _ordinal(chunk_id: str) -> int:
    found = _ORDINAL.search(chunk_id)
    return int(found.group(1)) if found else 0


def features(question: str, hits: Sequence[Hit]) -> np.ndarray:
    """One row of FEATURES per hit, the hits in the retriever's order (best first)."""
    if not hits:
        return np.zeros((0, len(FEATURES)))
    asked = _terms(question)
    top = hits[0].score or 1.0
    bm25_top = max(h.bm25_score or 0.0 for h in hits) or 1.0
    cosine_top = max(h.dense_score or 0.0 for h in hits)
    total = sum(h.score for h in hits) or 1.0
    places: dict[str, list[int]] = {}
    for i, h in enumerate(hits):
        places.setdefault(h.doc_id, []).append(i)
    headings = [_terms(" ".join(h.heading_path)) for h in hits]
    held = [head | _terms(h.text) for head, h in zip(headings, hits)]
    # A question term weighs more the fewer hits of the pool hold it.
    weight = {t: math.log((1 + len(hits)) / (1 + sum(t in terms for terms in held))) + 0.1 for t in asked}
    weight_sum = sum(weight.values()) or 1.0
    rows = []
    for i, h in enumerate(hits):
        same = places[h.doc_id]
        ordinal = _ordinal(h.chunk_id)
        rows.append([
            1.0 / (i + 1), h.score / top,
            1.0 / h.bm25_rank if h.bm25_rank else 0.0, 1.0 / h.dense_rank if h.dense_rank else 0.0,
            (h.bm25_score or 0.0) / bm25_top, h.dense_score or 0.0, (h.dense_score or 0.0) - cosine_top,
            len(same) / len(hits), 1.0 / (same[0] + 1), sum(hits[j].score for j in same) / total,
            sum(weight[t] for t in asked if t in headings[i]) / weight_sum,
            sum(weight[t] for t in asked if t in held[i]) / weight_sum,
            len(asked & headings[i]) / max(1, len(asked)),
            math.log1p(ordinal), float(ordinal == 0),
            min(len(h.text.split()), 2 * LENGTH_WORDS) / LENGTH_WORDS, float(i == same[0]),
        ])
    return np.asarray(rows, dtype=np.float64)


def learned_scores(question: str, hits: Sequence[Hit], weights=None, bias: float | None = None) -> np.ndarray:
    """Each hit's learned score, a logit (`weights`: by FEATURES name; None: the fitted ones)."""
    weights = WEIGHTS if weights is None else weights
    vector = np.asarray([weights.get(name, 0.0) for name in FEATURES], dtype=np.float64)
    return features(question, hits) @ vector + (BIAS if bias is None else bias)


def learned_order(question: str, hits: Sequence[Hit], k: int, weights=None, bias: float | None = None) -> list[Hit]:
    """The first `k` of `hits` by learned score (learned_scores' `weights` and `bias`), each scored by its
    logistic; the retriever's order for a pool that cannot be scored."""
    pool = list(hits[:POOL])
    if len(pool) <= 1 or not orderable(pool):
        return list(hits)[:k]
    scores = learned_scores(question, pool, weights, bias)
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    ranked = [replace(pool[i], score=float(1.0 / (1.0 + math.exp(-scores[i])))) for i in order]
    return (ranked + list(hits[POOL:]))[:k]

