"""Retrieval quality and behaviour with the real SmolLM2 tokenizer and MiniLM embedder on docs_corpus."""

from __future__ import annotations

import pytest

from rag.indexing.hybrid import DEFAULT_FUSION, HybridIndex
from rag.evaluation import MemoEmbedder, evaluate, load_questions, ungraded

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def scores(real_index, real_embedder):
    index = HybridIndex(real_index.chunks, real_index.dense.matrix, MemoEmbedder(real_embedder))
    rows = evaluate(index, load_questions())
    return {(r.name, r.level): r for r in rows}


def test_every_answerable_question_has_a_gold_chunk(real_index):
    assert ungraded(real_index, load_questions()) == []


def test_hybrid_beats_both_single_retrievers_and_reaches_recall_at_5_of_0_9(scores):
    hybrid = scores[(DEFAULT_FUSION, "chunk")]
    bm25, dense = scores[("bm25", "chunk")], scores[("dense", "chunk")]
    assert hybrid.recall_at_5 >= 0.9
    for single in (bm25, dense):
        assert hybrid.recall_at_5 > single.recall_at_5
        assert hybrid.mrr_at_10 > single.mrr_at_10


def test_an_off_topic_query_returns_no_hits(real_index):
    assert real_index.search("chocolate cake with strawberries") == []
    assert real_index.search("giraffes and volcanoes") == []


def test_doc_id_filter_with_real_embeddings(real_index):
    hits = real_index.search("How much memory does the cache need?", k=4, doc_ids=["docs/kv-cache.md"])
    assert len(hits) == 4 and {h.doc_id for h in hits} == {"docs/kv-cache.md"}
    assert all(h.bm25_rank is not None or h.dense_rank is not None for h in hits)
