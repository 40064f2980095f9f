"""The extractive fallback quotes shown excerpts only, marks them as quotes, and verifies as supported."""

from __future__ import annotations

import pytest

from fakes import HashEmbedder
from rag.citations import Citation
from rag.verification.claims import split_claims
from rag.answering.extractive import QUOTE_LABEL, best_quotes, extractive_answer, rank_sentences, scores_of, select
from rag.types import Chunk
from rag.verification.verifier import verify_answer

KV = Chunk(
    "docs/kv-cache.md#2",
    "docs/kv-cache.md",
    "docs/kv-cache.md",
    "## Memory\n\nThe KV cache stores the keys and values of every processed token. "
    "Its size grows linearly with the context length n_ctx.\n\n- The cache is freed when the model is closed.\n",
    ("KV cache", "Memory"),
)
BM25 = Chunk(
    "docs/bm25.md#1",
    "docs/bm25.md",
    "docs/bm25.md",
    "BM25 ranks chunks by term frequency and inverse document frequency.\n\n```python\nbm25 = BM25Okapi(corpus)\n```",
)
HIDDEN = Chunk("docs/hidden.md#1", "docs/hidden.md", "docs/hidden.md", "The KV cache size grows with context length.")
INDEX = {c.chunk_id: c for c in (KV, BM25, HIDDEN)}
SHOWN = {1: Citation(1, KV.chunk_id, KV.doc_id, KV.uri), 2: Citation(2, BM25.chunk_id, BM25.doc_id, BM25.uri)}


@pytest.mark.parametrize("embedder", [None, HashEmbedder()])
def test_quotes_the_sentences_closest_to_the_question_each_with_its_marker(embedder):
    text, used = extractive_answer("How does the KV cache size grow with context length?", SHOWN, INDEX.get, embedder)
    lines = text.split("\n")
    assert lines[0] == QUOTE_LABEL
    quotes = [line for line in lines[1:] if line]
    assert all(line.startswith("> ") for line in quotes)
    # "Its" points back: the sentence before comes with it, each with its marker
    assert quotes[0] == ("> The KV cache stores the keys and values of every processed token. [1] "
                         "Its size grows linearly with the context length n_ctx. [1]")
    assert used[0] == 1 and len(quotes) <= 4


@pytest.mark.parametrize("embedder", [None, HashEmbedder()])
def test_the_quoted_answer_verifies_as_all_supported(embedder):
    text, used = extractive_answer("What does BM25 rank chunks by, and what does the KV cache store?", SHOWN,
                                   INDEX.get, embedder)  # fmt: skip
    assert set(used) == {1, 2}
    result = verify_answer(text, SHOWN, INDEX.get, embedder)
    assert result.claims and all(c.verdict == "supported" for c in result.claims)
    assert sorted({n for c in result.claims for n in c.citations}) == sorted(used)


def test_never_quotes_an_excerpt_that_was_not_shown_or_no_longer_resolves():
    stale = {3: Citation(3, HIDDEN.chunk_id, "docs/renamed.md", HIDDEN.uri)}
    assert extractive_answer("How does the KV cache size grow?", stale, INDEX.get, None) == ("", ())
    text, used = extractive_answer("How does the KV cache size grow?", SHOWN, INDEX.get, None, max_sentences=5)
    assert HIDDEN.text not in text and set(used) <= {1, 2}


def test_headings_and_code_are_not_quoted():
    quotes = best_quotes("memory BM25Okapi corpus", SHOWN, INDEX.get, None, max_sentences=10, min_score=0.0)
    assert all(q.sentence not in ("Memory", "bm25 = BM25Okapi(corpus)") for q in quotes)


def test_max_sentences_and_min_score_bound_the_quote():
    assert len(best_quotes("cache", SHOWN, INDEX.get, None, max_sentences=1)) == 1
    assert extractive_answer("quantum chromodynamics", SHOWN, INDEX.get, None) == ("", ())


def test_the_orders_first_sentences_pass_the_gate_once_any_sentence_reaches_it():
    ranked = rank_sentences("when is the cache freed?", SHOWN, INDEX.get, None)
    close = scores_of(ranked.features, False, only=("coverage", "cosine"))
    freed = "The cache is freed when the model is closed."
    assert [c.sentence for c, v in zip(ranked.candidates, close) if v >= 0.5] == [freed]
    assert [q.sentence for q in select(ranked, False, min_score=0.5, exempt=0)] == [freed]
    # the order's first three: freed, then the two KV sentences (the second shown as the first one's context);
    # BM25's sentence, fourth, stays out
    opened = select(ranked, False, min_score=0.5, exempt=3)
    assert [q.sentence for q in opened] == [freed, "The KV cache stores the keys and values of every processed token."]
    assert opened[1].passage[1] == "Its size grows linearly with the context length n_ctx."
    # none reaches the gate: nothing is quoted, exempt or not (the gate is still a decline)
    assert select(ranked, False, min_score=float(close.max()) + 0.01, exempt=3) == []


def test_when_the_best_few_share_an_excerpt_the_best_of_another_excerpt_follows():
    first = Chunk("docs/a.md#0", "docs/a.md", "docs/a.md", "The cache holds keys. The cache holds values. "
                  "The cache holds both for every token. The cache is large.")  # fmt: skip
    other = Chunk("docs/b.md#0", "docs/b.md", "docs/b.md", "Eviction drops the oldest cache entries first.")
    shown = {1: Citation(1, first.chunk_id, first.doc_id, first.uri),
             2: Citation(2, other.chunk_id, other.doc_id, other.uri)}  # fmt: skip
    lookup = {first.chunk_id: first, other.chunk_id: other}.get
    plain = best_quotes("what does the cache hold", shown, lookup, None, max_sentences=3, min_score=0.0)
    assert [q.n for q in plain] == [1, 1, 1]
    widened = best_quotes("what does the cache hold", shown, lookup, None, max_sentences=3, min_score=0.0,
                          other_excerpt=1)  # fmt: skip
    assert widened[:3] == plain and [q.n for q in widened[3:]] == [2]
    assert widened[3].sentence == "Eviction drops the oldest cache entries first."
    fewer = best_quotes("what does the cache hold", shown, lookup, None, max_sentences=5, min_score=0.0,
                        other_excerpt=1)  # fmt: skip
    assert [q.n for q in fewer] == [1, 1, 1, 2]  # fewer than five quotable: all of them, nothing added twice
    text, used = extractive_answer("what does the cache hold", shown, lookup, None, min_score=0.0)
    assert used == (1, 2) and text.count("\n> ") == 4


def test_near_duplicate_sentences_are_quoted_once():
    twin = Chunk("docs/twin.md#1", "docs/twin.md", "docs/twin.md", KV.text)
    shown = {**SHOWN, 3: Citation(3, twin.chunk_id, twin.doc_id, twin.uri)}
    quotes = best_quotes("KV cache size context length", shown, {**INDEX, twin.chunk_id: twin}.get, None)
    sentences = [q.sentence for q in quotes]
    assert len(sentences) == len(set(sentences))


def test_a_list_of_citations_works_like_the_ledger_mapping():
    text, used = extractive_answer("What does BM25 rank by?", list(SHOWN.values()), INDEX.get, None)
    assert used[0] == 2
    assert [c.citations for c in split_claims(text) if c.citations][0] == (2,)


@pytest.mark.real
def test_real_quotes_answer_the_question_and_verify_as_supported(real_embedder):
    from benchmarks.fitting.calibration_set import load_items

    chunks = {i.chunk.chunk_id: i.chunk for i in load_items()}
    picked = [chunks[c] for c in ("docs/kv-cache.md#1", "docs/bm25.md#2", "docs/quantization.md#1")]
    shown = {n: Citation(n, c.chunk_id, c.doc_id, c.uri) for n, c in enumerate(picked, start=1)}
    text, used = extractive_answer("What does the KV cache keep for each position?", shown, chunks.get, real_embedder)
    assert text.startswith(QUOTE_LABEL) and used[0] == 1
    assert "key" in text.split("\n")[2].lower()
    result = verify_answer(text, shown, chunks.get, real_embedder)
    assert result.claims and all(c.verdict == "supported" for c in result.claims)


class _QuoteEncoder(HashEmbedder):
    """A hash embedder whose quote encoder maps every question onto one sentence's vector: that sentence leads."""

    def __init__(self, favourite: str | None) -> None:
        super().__init__()
        self.favourite = favourite

    def embed_quote_query(self, text):
        return None if self.favourite is None else self.embed([self.favourite])[0]


def test_the_quote_encoder_orders_the_quotes_and_nothing_else(monkeypatch):
    from rag.answering import extractive
    from rag.answering.extractive import QUOTE_TOWER_WEIGHT, QuoteFallback, assess_ranked, rank_sentences

    question = "How does the KV cache size grow with context length?"
    favourite = "The cache is freed when the model is closed."  # close enough to be quoted, not first by the score
    without = rank_sentences(question, SHOWN, INDEX.get, _QuoteEncoder(None))
    assert without.tuned is None and (without.order == without.scores).all()
    ranked = rank_sentences(question, SHOWN, INDEX.get, _QuoteEncoder(favourite))
    assert ranked.tuned is not None and (ranked.scores == without.scores).all()  # the score itself is unchanged
    assert ranked.order == pytest.approx(ranked.scores + QUOTE_TOWER_WEIGHT * ranked.tuned)
    monkeypatch.setattr(extractive, "QUOTE_TOWER_WEIGHT", 10.0)  # the encoder's cosine outweighs the score
    best = max(range(len(ranked.candidates)), key=lambda i: ranked.order[i])
    assert ranked.candidates[best].sentence == favourite and ranked.tuned[best] == pytest.approx(
        float(HashEmbedder().embed([ranked.candidates[best].in_context])[0] @ HashEmbedder().embed([favourite])[0]))
    # the quotes follow the order; whether to answer at all is decided as before
    plain = QuoteFallback(_QuoteEncoder(None))(question, SHOWN, INDEX.get)
    tuned = QuoteFallback(_QuoteEncoder(favourite))(question, SHOWN, INDEX.get)
    assert plain is not None and tuned is not None
    assert plain.quotes[0].sentence != favourite and tuned.quotes[0].sentence == favourite
    assert assess_ranked(question, ranked, None, None) == assess_ranked(question, without, None, None)


def test_the_ranked_sentences_carry_the_shown_excerpts_texts_for_the_answerability_rule():
    from rag.answering.extractive import assess_ranked

    gone = Citation(3, "docs/gone.md#0", "docs/gone.md", "docs/gone.md")  # no longer in the index: not read
    ranked = rank_sentences("Does the KV cache hold BM25 scores?", {**SHOWN, 3: gone}, INDEX.get, None)
    assert ranked.excerpts == (KV.text, BM25.text)
    # BM25 is in the second excerpt; a name in neither is unshown
    assert assess_ranked("Does the KV cache hold BM25 scores?", ranked, None, None).signals["unshown_name"] == 0.0
    unshown = assess_ranked("Does the KV cache hold FAISS scores?", ranked, None, None)
    assert unshown.signals["unshown_name"] == 1.0 and unshown.unshown_names == ("FAISS",)
