"""BM25 postings give rank_bm25's scores exactly; terms are lowercased, lightly stemmed, function words dropped."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from rag.bm25 import BM25Index
from rag.terms import TermSettings, stem, terms

_doc = st.lists(st.sampled_from("alpha beta gamma delta eps zeta eta theta".split()), min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(_doc, min_size=1, max_size=12).filter(any), query=st.lists(st.sampled_from(
    "alpha beta gamma delta eps zeta eta theta unknown".split()), max_size=6))
def test_scores_match_rank_bm25_exactly(docs, query):
    expected = BM25Okapi(docs).get_scores(query)
    np.testing.assert_allclose(BM25Index(docs).scores(query), expected, rtol=1e-12, atol=1e-12)


def test_a_repeated_query_term_counts_twice_as_in_rank_bm25():
    docs = [["kv", "cache"], ["cache", "size", "cache"], ["rope"]]
    index = BM25Index(docs)
    np.testing.assert_allclose(index.scores(["cache", "cache"]), 2 * index.scores(["cache"]))
    np.testing.assert_allclose(index.scores(["cache", "cache"]), BM25Okapi(docs).get_scores(["cache", "cache"]))


def test_an_empty_corpus_scores_nothing():
    assert BM25Index([]).scores(["x"]).shape == (0,)
    assert BM25Index([[], []]).scores(["x"]).tolist() == [0.0, 0.0]


def test_terms_are_lowercase_words_without_function_words():
    assert terms("What is the KV-cache size?") == ["kv", "cache", "size"]
    assert terms("What is the KV-cache size?", TermSettings(stem=False, stopwords=False)) == [
        "what", "is", "the", "kv", "cache", "size",
    ]


def test_identifiers_with_underscores_also_match_their_parts():
    assert terms("n_ctx") == ["n_ctx", "n", "ctx"]


def test_the_stemmer_joins_plural_and_verb_forms():
    assert stem("chunks") == stem("chunk") == stem("chunking") == stem("chunked") == "chunk"
    assert stem("embeddings") == stem("embedding") == "embed"
    assert stem("queries") == "query"
    assert stem("running") == "run"
    assert stem("class") == "class" and stem("bus") == "bus" and stem("gpu") == "gpu"


def test_postings_survive_a_round_trip_through_arrays():
    import io

    docs = [["kv", "cache", "size"], ["cache", "rope"], [], ["n_ctx", "kv"]]
    index = BM25Index(docs)
    buf = io.BytesIO()
    np.savez(buf, **index.to_arrays())
    buf.seek(0)
    again = BM25Index.from_arrays(np.load(buf, allow_pickle=False))
    for query in (["kv"], ["cache", "rope", "zzz"], ["n_ctx"]):
        np.testing.assert_array_equal(again.scores(query), index.scores(query))
    assert BM25Index.from_arrays(BM25Index([]).to_arrays()).scores(["x"]).shape == (0,)
