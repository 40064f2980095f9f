"""The answerability rule: its signals and its decision, with exact values on tiny vocabularies."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from rag.answering.answerability import (
    SIGNALS, absent_names, assess, decide, signals, unknown_names, unknown_share, unshown_names,
)
from rag.retrieval.vocabulary import PREFIX, TermCounts
from rag.retrieval.terms import index_terms

DOCS = ["BM25 ranks chunks with the b parameter and controls length.", "The cache holds keys; SmolLM2 is small.",
        "A proposal for length normalization.", "The cache is freed."]
VOCAB = TermCounts.of(Counter(t for doc in DOCS for t in set(index_terms(doc))), documents=len(DOCS))


def idf(df: int, n: int = len(DOCS)) -> float:
    return math.log((n - df + 0.5) / (df + 0.5) + 1)


def test_a_name_the_docs_never_mention_is_unknown_and_a_known_one_is_not():
    assert unknown_names("How do I fine-tune SmolLM2 with LoRA?", VOCAB) == ("LoRA",)
    assert unknown_names("Which FAISS or HNSW settings?", VOCAB) == ("FAISS", "HNSW")
    # Sentence-initial capitals are ordinary words; names inside a hyphenated word still count.
    assert unknown_names("What does BM25 control? Why cache?", VOCAB) == ()
    assert unknown_names("How does ColBERT-style retrieval work?", VOCAB) == ("ColBERT-style",)
    assert unknown_names("LoRA?", None) == ()


def test_unknown_share_weights_each_missing_term_by_its_idf_and_forgives_morphological_variants():
    # "docker" is unknown; "cache" (2 docs) is known; "normalisation" is known through the PREFIX-letter
    # stem it shares with "normalization" (terms: "normalis" and "normal").
    assert (VOCAB.frequency("normalis"), VOCAB.frequency("normalis", prefix=False), PREFIX) == (1, 0, 6)
    expected = idf(0) / (idf(0) + idf(2) + idf(1))
    assert unknown_share("Docker cache normalisation", VOCAB) == pytest.approx(expected)
    assert unknown_share("docker", None) == 0.0
    # "doesn't" reads as "does not": "not" is a term these docs never hold; "doesn" is not a term at all.
    assert unknown_share("the cache doesn't", VOCAB) == pytest.approx(idf(0) / (idf(0) + idf(2)))


def test_decide_is_the_logistic_of_the_weighted_signals():
    values = dict(zip(SIGNALS, (1.0, 0.5, 0.25, 0.5, 1.0)))
    z = 0.1 + 2.0 * 1.0 + 1.0 * 0.5 - 2.0 * 0.25 - 1.0 * 0.5 + 0.75 * 1.0
    assert decide(values, (2.0, 1.0, -2.0, -1.0, 0.75), 0.1) == pytest.approx(1 / (1 + math.exp(-z)))


def test_signals_take_the_best_score_and_cosine():
    assert signals("Is Docker a cache?", [0.2, 0.7], [0.9, 0.1], VOCAB) == {
        "unknown_name": 1.0, "unknown_share": pytest.approx(unknown_share("Is Docker a cache?", VOCAB)),
        "best_score": 0.7, "best_cosine": 0.9, "unshown_name": 1.0,
    }


def test_a_name_the_docs_hold_but_no_shown_excerpt_mentions_is_unshown():
    shown = ["The cache holds keys.", "The cache is freed."]
    # SmolLM2 is in the index (DOCS[1]) but not in these two excerpts; BM25 neither; "Why" opens a sentence.
    assert unknown_names("Does SmolLM2 use the cache?", VOCAB) == ()
    assert unshown_names("Does SmolLM2 use the cache? Why BM25?", shown) == ("SmolLM2", "BM25")
    assert unshown_names("Does SmolLM2 use the cache?", [*shown, "SmolLM2 is small."]) == ()
    assert unshown_names("Is the cache freed?", shown) == ()  # no name asked, nothing unshown
    assert unshown_names("Does SmolLM2 cache?", []) == ("SmolLM2",)


def test_a_decline_names_each_absent_name_once_as_unknown_to_the_docs_or_only_unshown():
    shown = ["The cache holds keys."]
    assert absent_names("Does SmolLM2 cache with LoRA?", shown, VOCAB) == (("LoRA",), ("SmolLM2",))
    assert absent_names("Does SmolLM2 cache with LoRA?", [*shown, "SmolLM2 is small."], VOCAB) == (("LoRA",), ())
    assert absent_names("Does SmolLM2 cache with LoRA?", shown, None) == ((), ("SmolLM2", "LoRA"))  # no term counts


def test_the_unshown_signal_reads_the_shown_excerpts_and_without_them_falls_back_to_the_index():
    question = "Does SmolLM2 use the cache?"
    assert signals(question, [0.5], [0.5], VOCAB, ["The cache holds keys."])["unshown_name"] == 1.0
    assert signals(question, [0.5], [0.5], VOCAB, ["SmolLM2 is small; the cache holds keys."])["unshown_name"] == 0.0
    assert signals(question, [0.5], [0.5], VOCAB)["unshown_name"] == 0.0  # excerpts not known: as unknown_name
    assert signals("Does LoRA use the cache?", [0.5], [0.5], VOCAB)["unshown_name"] == 1.0


def test_no_shown_sentence_is_never_answerable_and_an_unknown_name_with_weak_quotes_is_declined():
    assert not assess("What is the cache?", [], [], VOCAB).answerable
    declined = assess("How do I run it in Docker with Qdrant?", [0.3], [0.3], VOCAB)
    assert not declined.answerable and declined.reason == "the docs never mention Docker, Qdrant"
    answered = assess("What does the b parameter in BM25 control?", [0.8], [0.7], VOCAB)
    assert answered.answerable and answered.reason == ""


def test_a_decline_for_a_name_no_shown_excerpt_mentions_says_so(monkeypatch):
    import rag.answering.answerability as ab

    # only the unshown name counts: the decline is for it alone, and its reason names it
    monkeypatch.setattr(ab, "WEIGHTS", (0.0, 0.0, 0.0, 0.0, 2.0))
    monkeypatch.setattr(ab, "BIAS", -1.0)
    declined = assess("Does SmolLM2 use the cache?", [0.8], [0.7], VOCAB, ["The cache holds keys."])
    assert not declined.answerable and declined.unshown_names == ("SmolLM2",) and declined.unknown_names == ()
    assert declined.reason == "no shown excerpt mentions SmolLM2"
    answered = assess("Does SmolLM2 use the cache?", [0.8], [0.7], VOCAB, ["SmolLM2 is small; the cache holds keys."])
    assert answered.answerable and answered.unshown_names == () and answered.reason == ""


def test_the_hybrid_index_gives_its_term_counts_as_a_vocabulary():
    import numpy as np

    from fakes import HashEmbedder
    from rag.indexing.hybrid import HybridIndex
    from rag.types import Chunk

    chunks = [Chunk(f"docs/a.md#{i}", "docs/a.md", "docs/a.md", text) for i, text in
              enumerate(["BM25 ranks chunks.", "The b parameter controls length normalisation of chunks."])]
    index = HybridIndex(chunks, np.zeros((2, 64), dtype=np.float32), HashEmbedder())
    vocabulary = index.vocabulary
    assert vocabulary is index.vocabulary and vocabulary.documents == 2
    assert (vocabulary.frequency("chunk"), vocabulary.frequency("bm25"), vocabulary.frequency("docker")) == (2, 1, 0)
    assert unknown_names("Can BM25 run in Docker?", vocabulary) == ("Docker",)


def test_a_chat_judges_answerability_by_the_live_index_after_a_reindex(tmp_path):
    """The answer path reads the term counts of the snapshot it searches, not those of the index at start-up."""
    from agent.session import ChatSession
    from agent.settings import AgentSettings
    from fakes import HashEmbedder, ScriptedChatModel, WordTokenizer
    from rag.indexing.live import open_live_index

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Heliotrope\n\nThe heliotrope quota of a tenant is seventeen parcels.\n")
    (docs / "b.md").write_text("# Logs\n\nThe logs rotate nightly at two in the morning.\n")
    live = open_live_index(docs, WordTokenizer(), HashEmbedder(256), index_dir=tmp_path / "i", watch=False)
    try:
        session = ChatSession(ScriptedChatModel([]), live, embedder=HashEmbedder(256), docs_dir=docs,
                              settings=AgentSettings(policy="search-first", decoding="extractive"))

        def status(question: str) -> str:
            return [e for e in session.ask(question)][-1].answer.status

        assert status("When do the logs rotate?") == "answered"
        (docs / "a.md").unlink()  # "heliotrope" is in no document now
        (docs / "c.md").write_text("# Frobnicator\n\nThe frobnicator cleans the cache every hour.\n")
        assert live.refresh(timeout=60)
        assert status("When do the heliotrope logs rotate?") == "insufficient_evidence"  # was: a logs quote, answered
        assert status("What does the frobnicator clean?") == "answered"  # was: the docs do not cover this
        # the standout is asked of the same snapshot, by the quotes and by quote decoding's candidates alike
        pinned = session.agent.retriever
        assert session._quoter.standout == pinned.standout and session._candidates.standout == pinned.standout
    finally:
        live.close()


def test_without_cosines_the_lexical_rule_decides():
    from rag.answering.answerability import BIAS, LEXICAL_BIAS, LEXICAL_WEIGHTS, WEIGHTS

    question = "What does the b parameter in BM25 control?"
    lexical = assess(question, [0.6], [], VOCAB)  # no embedder: no sentence has a cosine
    values = signals(question, [0.6], [], VOCAB)
    assert values["best_cosine"] == 0.0 and LEXICAL_WEIGHTS[SIGNALS.index("best_cosine")] == 0.0
    assert lexical.probability == pytest.approx(decide(values, LEXICAL_WEIGHTS, LEXICAL_BIAS))
    assert assess(question, [0.6], [0.0], VOCAB).probability == pytest.approx(decide(values, WEIGHTS, BIAS))
    # with no cosine the embedder's rule would decline a question its words answer; the lexical rule does not
    assert decide(values, WEIGHTS, BIAS) >= 0.5 and lexical.answerable


def test_standout_is_the_closest_cosine_minus_the_fifth_closest():
    import numpy as np

    from rag.indexing.dense import standout

    # the fifth closest of these is 0.2
    assert standout(np.array([0.2, 0.9, 0.5, 0.4, 0.3, 0.1], dtype=np.float32)) == pytest.approx(0.7, abs=1e-6)
    assert standout(np.array([0.5] * 7, dtype=np.float32)) == 0.0  # many chunks at one distance: nothing stands out
    assert standout(np.array([0.9, 0.5, 0.4, 0.3], dtype=np.float32)) is None  # fewer than five chunks: no say


def test_the_hybrid_index_says_how_far_its_closest_chunk_stands_out():
    import numpy as np

    from fakes import HashEmbedder
    from rag.indexing.hybrid import HybridIndex
    from rag.types import Chunk

    texts = ["heliotrope quota parcels", "logs rotate nightly", "cache holds keys", "frobnicator cleans cache",
             "tenant quota seventeen", "proposal length normalisation"]
    embedder = HashEmbedder(256)
    chunks = [Chunk(f"docs/a.md#{i}", "docs/a.md", "docs/a.md", text) for i, text in enumerate(texts)]
    index = HybridIndex(chunks, embedder.embed(texts), embedder)
    question = "heliotrope quota parcels"
    cosines = np.sort(embedder.embed(texts) @ embedder.embed([question])[0])[::-1]
    assert index.standout(question) == pytest.approx(float(cosines[0] - cosines[4]), abs=1e-6)
    assert index.standout(question) > 0.5  # the one chunk that holds every word stands out
    # an unembedded row does not count: five embedded chunks are needed
    rows = embedder.embed(texts)
    rows[1:3] = 0.0
    assert HybridIndex(chunks, rows, embedder).standout(question) is None
    assert HybridIndex(chunks, np.zeros((6, 0), dtype=np.float32), None).standout(question) is None  # BM25 only


def test_a_search_remembers_its_question_s_standout_so_the_answer_does_not_embed_it_again():
    from fakes import CountingEmbedder
    from rag.indexing.hybrid import HybridIndex
    from rag.types import Chunk

    texts = ["heliotrope quota parcels", "logs rotate nightly", "cache holds keys", "frobnicator cleans cache",
             "tenant quota seventeen"]
    embedder = CountingEmbedder(256)
    chunks = [Chunk(f"docs/a.md#{i}", "docs/a.md", "docs/a.md", text) for i, text in enumerate(texts)]
    index = HybridIndex(chunks, embedder.embed(texts), embedder)
    embedder.seen.clear()
    index.search("heliotrope quota", k=3)
    remembered = index.standout(" heliotrope quota ")  # as the quotes ask it: the question, spaces and all
    assert embedder.seen == ["heliotrope quota"] and remembered is not None
    fresh = HybridIndex(chunks, index.dense.matrix, embedder)  # a new index computes it, and gets the same
    assert fresh.standout("heliotrope quota") == remembered and embedder.seen == ["heliotrope quota"] * 2
    other = embedder.embed(["heliotrope", "quota", "logs", "cache", "tenant"])
    twin = index.with_embeddings(other)  # other vectors: nothing remembered carries over
    embedder.seen.clear()
    assert twin.standout("heliotrope quota") != remembered and embedder.seen == ["heliotrope quota"]


def test_with_a_standout_its_own_rule_decides_and_without_cosines_it_is_not_read(monkeypatch):
    import rag.answering.answerability as ab

    question = "What does the b parameter in BM25 control?"
    monkeypatch.setattr(ab, "STANDOUT_WEIGHTS", (0.0, 0.0, 0.0, 0.0, 0.0, -10.0))
    monkeypatch.setattr(ab, "STANDOUT_BIAS", 1.0)
    flat, clear = assess(question, [0.8], [0.7], VOCAB, standout=0.02), assess(question, [0.8], [0.7], VOCAB, standout=0.3)
    assert flat.signals["standout"] == 0.02 and flat.probability == pytest.approx(1 / (1 + math.exp(-(1.0 - 0.2))))
    assert not flat.answerable and clear.answerable  # nothing stands out: declined; a passage well ahead: answered
    without = assess(question, [0.8], [0.7], VOCAB)  # an index that cannot say (the PostgreSQL store): the old rule
    assert "standout" not in without.signals
    assert without.probability == pytest.approx(decide(without.signals, ab.WEIGHTS, ab.BIAS))
    lexical = assess(question, [0.8], [], VOCAB, standout=0.02)  # no embedder: no cosines, the lexical rule
    assert "standout" not in lexical.signals
    assert lexical.probability == pytest.approx(decide(lexical.signals, ab.LEXICAL_WEIGHTS, ab.LEXICAL_BIAS))


def test_the_quote_fallback_asks_the_index_for_its_standout_once_per_question(monkeypatch):
    import rag.answering.answerability as ab
    from fakes import HashEmbedder
    from rag.answering.extractive import QuoteFallback
    from rag.citations import Citation
    from rag.types import Chunk

    chunk = Chunk("docs/a.md#0", "docs/a.md", "docs/a.md", "The b parameter in BM25 controls length normalisation.")
    shown = {1: Citation(1, chunk.chunk_id, chunk.doc_id, chunk.uri)}
    asked: list[str] = []

    def standout(question: str) -> float:
        asked.append(question)
        return 0.01

    monkeypatch.setattr(ab, "STANDOUT_WEIGHTS", (0.0, 0.0, 0.0, 0.0, 0.0, -10.0))
    monkeypatch.setattr(ab, "STANDOUT_BIAS", 1.0)
    question = "What does the b parameter in BM25 control?"
    assert QuoteFallback(HashEmbedder(), VOCAB, standout=standout)(question, shown, lambda _: chunk) is None
    assert asked == [question]
    assert QuoteFallback(HashEmbedder(), VOCAB)(question, shown, lambda _: chunk) is not None  # no standout: old rule
    assert QuoteFallback(None, VOCAB, standout=standout)(question, shown, lambda _: chunk) is not None
    assert asked == [question]  # without an embedder the lexical rule decides and the index is not asked
