"""BM25 postings give rank_bm25's scores with Lucene's IDF exactly; terms: identifiers whole and split, Snowball stems, no function words."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from rag.indexing.bm25 import BM25Index
from rag.retrieval.terms import TermSettings, identifier_parts, index_terms
from rag.text import light_stem, stem

class LuceneIdfBM25(BM25Okapi):
    """rank_bm25's Okapi scoring with Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)): the reference for parity."""

    def _calc_idf(self, nd):
        self.idf = {t: math.log(1 + (self.corpus_size - n + 0.5) / (n + 0.5)) for t, n in nd.items()}


_doc = st.lists(st.sampled_from("alpha beta gamma delta eps zeta eta theta".split()), min_size=0, max_size=12)


@settings(max_examples=200, deadline=None)
@given(docs=st.lists(_doc, min_size=1, max_size=12).filter(any), query=st.lists(st.sampled_from(
    "alpha beta gamma delta eps zeta eta theta unknown".split()), max_size=6))
def test_scores_match_rank_bm25_with_lucene_idf_exactly(docs, query):
    expected = LuceneIdfBM25(docs).get_scores(query)
    np.testing.assert_allclose(BM25Index(docs).scores(query), expected, rtol=1e-12, atol=1e-12)


def test_a_repeated_query_term_counts_twice_as_in_rank_bm25():
    docs = [["kv", "cache"], ["cache", "size", "cache"], ["rope"]]
    index = BM25Index(docs)
    np.testing.assert_allclose(index.scores(["cache", "cache"]), 2 * index.scores(["cache"]))
    np.testing.assert_allclose(index.scores(["cache", "cache"]), LuceneIdfBM25(docs).get_scores(["cache", "cache"]))


def test_where_rank_bm25_idf_is_positive_the_ranking_of_one_term_matches_it():
    docs = [["kv", "cache"], ["cache", "size", "cache"], ["rope"], ["rope", "scaling"], ["norm"]]
    for term in ("cache", "rope", "scaling"):
        ours, theirs = BM25Index(docs).scores([term]), BM25Okapi(docs).get_scores([term])
        assert np.argsort(-ours, kind="stable").tolist() == np.argsort(-theirs, kind="stable").tolist()


@pytest.mark.parametrize("docs", [[["cache", "size"]], [["cache", "size"], ["cache", "rope"]]])
def test_a_term_in_every_chunk_still_scores_above_zero(docs):
    assert min(BM25Okapi(docs).get_scores(["cache"])) <= 0  # rank_bm25: the IDF turns negative (or zero)
    assert (BM25Index(docs).scores(["cache"]) > 0).all()


def test_an_empty_corpus_scores_nothing():
    assert BM25Index([]).scores(["x"]).shape == (0,)
    assert BM25Index([[], []]).scores(["x"]).tolist() == [0.0, 0.0]


def test_terms_are_lowercase_words_without_function_words():
    assert index_terms("What is the cache size?") == ["cach", "size"]
    assert index_terms("What is the cache size?", TermSettings(stem=False, stopwords=False)) == [
        "what", "is", "the", "cache", "size",
    ]


def test_identifiers_are_indexed_whole_and_split():
    assert index_terms("n_ctx") == ["n_ctx", "n", "ctx"]
    assert index_terms("fs.readFile") == ["fs", "readfile", "read", "file"]
    assert index_terms("spawnSync") == ["spawnsync", "spawn", "sync"]
    assert index_terms("HTTPServer") == ["httpserver", "http", "server"]
    assert index_terms("KV-cache") == ["kv", "cach"]
    assert index_terms("os.path.join") == ["os", "path", "join"]
    assert index_terms("x86_64") == ["x86_64", "x86", "64"]


def test_an_acronyms_plural_is_the_acronym():
    assert identifier_parts("PDFs") == ["pdf"] and identifier_parts("getURLsFor") == ["get", "url", "for"]
    for plural, one in [("PDFs", "PDF"), ("VMs", "VM"), ("CPUs", "CPU"), ("URLs", "URL"), ("SERVFAILs", "SERVFAIL")]:
        assert index_terms(f"Convert the {plural}") == index_terms(f"Convert the {one}")  # Snowball keeps "pdfs", "cpus"
    assert index_terms("HTTPServer") == ["httpserver", "http", "server"]  # a capital S starts the next word
    assert index_terms("DNSsec") == ["dnssec", "dn", "ssec"]  # a lowercase word after the s: humps as before


def test_dotted_names_whole_on_request():
    token = TermSettings(wholes="token")
    assert index_terms("fs.readFile", token) == ["fs.readfile", "fs", "readfile", "read", "file"]
    assert index_terms("os.path.join", token) == ["os.path.join", "os", "path", "join"]
    with pytest.raises(ValueError, match="choose one of segment, token"):
        TermSettings(wholes="all")


def test_a_question_in_words_meets_the_identifier_in_the_docs():
    question = set(index_terms("How do I read a file synchronously?"))
    assert {"read", "file"} <= set(index_terms("fs.readFileSync(path)"))
    assert {"read", "file"} <= question
    assert "readfil" not in question  # parts are stemmed one by one, never the glued word


def test_identifier_parts_split_at_separators_and_camel_humps():
    assert identifier_parts("getHTTP2Response") == ["get", "http2", "response"]
    assert identifier_parts("__init__") == ["init"]
    assert identifier_parts("naïve-café") == ["naïve", "café"]  # other scripts are not split at case changes


def test_without_identifiers_the_old_word_terms_come_back():
    old = TermSettings(stemmer="light", identifiers=False)
    assert index_terms("What is the KV-cache size?", old) == ["kv", "cache", "size"]
    assert index_terms("n_ctx spawnSync", old) == ["n_ctx", "n", "ctx", "spawnsync"]


def test_the_snowball_stemmer_joins_plural_and_verb_forms():
    assert stem("chunks") == stem("chunk") == stem("chunking") == stem("chunked")
    assert stem("embeddings") == stem("embedding") == stem("embedded") == "embed"
    assert stem("queries") == stem("query")
    assert stem("running") == stem("runs") == "run"
    assert stem("connection") == stem("connected") == stem("connecting")  # Snowball goes past the light stripper
    assert stem("gpu") == "gpu" and stem("2048") == "2048"


def test_the_light_stemmer_is_kept_for_measurement():
    assert light_stem("chunks") == light_stem("chunking") == "chunk" and light_stem("queries") == "query"
    assert stem("connection", "light") != stem("connected", "light")
    with pytest.raises(ValueError, match="choose one of snowball, light, none"):
        TermSettings(stemmer="porter")


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


def _terms_uncached(text: str, settings: TermSettings) -> list[str]:
    """index_terms as it was before token_terms cached each word: every occurrence split and stemmed anew."""
    import re

    from rag.text import INDEX_STOPWORDS as STOPWORDS

    out: list[str] = []
    method = settings.stemmer if settings.stem else "none"
    for match in re.finditer(r"\w+(?:[.\-]+\w+)*", text):
        token = match.group().strip("_")
        segments = [seg for seg in re.split(r"[.\-]+", token) if seg.strip("_")]
        if settings.wholes == "token" and len(segments) > 1:
            out.append(token.lower())
        for segment in segments:
            segment = segment.strip("_")
            parts = identifier_parts(segment) if settings.identifiers else [p for p in segment.lower().split("_") if p]
            lower = segment.lower()
            if len(parts) > 1:
                out.append(lower)
            if len(parts) > 1 and not settings.identifiers:
                out.extend(stem(part, method) for part in parts)
                continue
            seen = {lower} if len(parts) > 1 else set()
            for part in parts:
                if settings.stopwords and part in STOPWORDS:
                    continue
                term = stem(part, method)
                if term not in seen:
                    seen.add(term)
                    out.append(term)
    return out


_TERM_SETTINGS = [TermSettings(), TermSettings(wholes="token"), TermSettings(identifiers=False, stopwords=False),
                  TermSettings(stemmer="light"), TermSettings(stem=False)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ_.-9 é\nthe readFile HTTPServer n_ctx", max_size=80), st.sampled_from(_TERM_SETTINGS))
def test_cached_word_terms_match_splitting_every_occurrence_anew(text, term_settings):
    assert index_terms(text, term_settings) == _terms_uncached(text, term_settings)
