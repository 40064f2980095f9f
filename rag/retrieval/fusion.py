"""Turning score vectors into rankings, and two rankings into one: reciprocal rank or weighted scores."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from rag import tuned

FUSIONS = ("rrf", "weighted")
RRF_K = 60  # the constant of Cormack et al.; damps the weight of the very first ranks
BM25_WEIGHT = tuned.BM25_WEIGHT  # weighted fusion: share of the BM25 score, the rest is dense


class Ranked(NamedTuple):
    """Rows best first, with their scores."""

    rows: np.ndarray  # int64
    scores: np.ndarray  # float64

    @classmethod
    def empty(cls) -> "Ranked":
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


def top_rows(scores: np.ndarray, depth: int, allowed: np.ndarray | None = None, above: float = 0.0) -> Ranked:
    """The `depth` best rows with a score strictly above `above`, best first; ties go to the lower row."""
    candidates = np.flatnonzero(scores > above)
    if allowed is not None:
        candidates = candidates[allowed[candidates]]
    if candidates.size > depth:
        # argpartition keeps this linear in the number of rows; only the kept part is sorted.
        part = np.argpartition(-scores[candidates], depth - 1)[:depth]
        kth = scores[candidates[part]].min()
        candidates = candidates[scores[candidates] >= kth]  # keep every tie at the cut so the order is stable
    order = np.lexsort((candidates, -scores[candidates]))[:depth]
    rows = candidates[order]
    return Ranked(rows, scores[rows].astype(np.float64))


def rrf(rankings: list[Ranked], k: int = RRF_K) -> dict[int, float]:
    """Reciprocal rank fusion: each ranking adds 1 / (k + rank)."""
    fused: dict[int, float] = {}
    for ranking in rankings:
        for rank, row in enumerate(ranking.rows.tolist(), start=1):
            fused[row] = fused.get(row, 0.0) + 1.0 / (k + rank)
    return fused


def weighted(rankings: list[Ranked], weights: list[float]) -> dict[int, float]:
    """Each ranking's scores min-max normalized over its own candidates, then summed with `weights`."""
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights):
        if not ranking.rows.size:
            continue
        lo, hi = float(ranking.scores.min()), float(ranking.scores.max())
        norm = (ranking.scores - lo) / (hi - lo) if hi > lo else np.ones_like(ranking.scores)
        for row, value in zip(ranking.rows.tolist(), norm.tolist()):
            fused[row] = fused.get(row, 0.0) + weight * value
    return fused


def fuse(
    method: str, bm25: Ranked, dense: Ranked, bm25_weight: float = BM25_WEIGHT, unembedded: np.ndarray | None = None
) -> list[tuple[int, float]]:
    """(row, fused score) best first; ties go to the better best rank, then the lower row.

    Rows marked in `unembedded` have no dense half yet: they rank by BM25 alone, their BM25 share standing in for
    the whole score (weighted: the full weight; rrf: counted for both rankings), so they are not pushed below
    embedded rows only for lack of an embedding.
    """
    if method == "rrf":
        fused = rrf([bm25, dense])
        alone = rrf([bm25])
    elif method == "weighted":
        fused = weighted([bm25, dense], [bm25_weight, 1.0 - bm25_weight])
        alone = weighted([bm25], [1.0])
    else:
        raise ValueError(f"unknown fusion {method!r}: choose one of {', '.join(FUSIONS)}")
    if unembedded is not None and unembedded.any():
        for row in bm25.rows.tolist():
            if unembedded[row]:
                fused[row] = alone[row] if method == "weighted" else 2 * alone[row]
    best_rank: dict[int, int] = {}
    for ranking in (bm25, dense):
        for rank, row in enumerate(ranking.rows.tolist(), start=1):
            best_rank[row] = min(best_rank.get(row, rank), rank)
    return sorted(fused.items(), key=lambda item: (-item[1], best_rank[item[0]], item[0]))
