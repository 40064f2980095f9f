"""Rankings from score vectors, and the two fusions: reciprocal rank and weighted normalized scores."""

from __future__ import annotations

import numpy as np
import pytest

from rag.retrieval.fusion import Ranked, fuse, rrf, top_rows, weighted


def ranked(rows, scores) -> Ranked:
    return Ranked(np.asarray(rows, dtype=np.int64), np.asarray(scores, dtype=np.float64))


def test_top_rows_keeps_only_scores_above_the_floor_best_first():
    got = top_rows(np.array([0.0, 3.0, 1.0, 0.2, 5.0]), depth=10, above=0.5)
    assert got.rows.tolist() == [4, 1, 2]
    assert got.scores.tolist() == [5.0, 3.0, 1.0]


def test_top_rows_breaks_ties_by_lower_row_and_honours_depth_and_mask():
    scores = np.array([1.0, 2.0, 2.0, 2.0, 0.5])
    assert top_rows(scores, depth=2).rows.tolist() == [1, 2]
    allowed = np.array([True, False, True, False, True])
    assert top_rows(scores, depth=5, allowed=allowed).rows.tolist() == [2, 0, 4]


def test_top_rows_on_a_large_vector_equals_a_full_sort():
    rng = np.random.default_rng(0)
    scores = rng.random(5000)
    assert top_rows(scores, depth=50).rows.tolist() == np.argsort(-scores)[:50].tolist()


def test_rrf_adds_one_over_k_plus_rank():
    fused = rrf([ranked([7, 3], [9, 8]), ranked([3, 5], [0.9, 0.8])], k=60)
    assert fused[3] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[7] == pytest.approx(1 / 61)
    assert fused[5] == pytest.approx(1 / 62)


def test_weighted_min_max_normalizes_each_ranking():
    fused = weighted([ranked([1, 2, 3], [10.0, 5.0, 0.0]), ranked([3, 1], [0.8, 0.4])], [0.5, 0.5])
    assert fused == pytest.approx({1: 0.5, 2: 0.25, 3: 0.5})


def test_fuse_orders_ties_by_the_better_single_rank():
    order = fuse("weighted", ranked([1, 2, 3], [10.0, 5.0, 0.0]), ranked([3, 1], [0.8, 0.4]))
    assert [row for row, _ in order] == [1, 3, 2]


def test_unknown_fusion_lists_the_choices():
    with pytest.raises(ValueError, match="rrf, weighted"):
        fuse("max", Ranked.empty(), Ranked.empty())
