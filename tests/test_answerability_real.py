"""Answerability with the real index and MiniLM, through the agent's extractive mode (no model call)."""

from __future__ import annotations

import pytest

from agent.events import AnswerFinished
from agent.session import ChatSession
from agent.settings import AgentSettings

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def session(real_model, real_index, real_embedder):
    return ChatSession(real_model, real_index, embedder=real_embedder,
                       settings=AgentSettings(policy="search-first", decoding="extractive"))


def _answer(session, question):
    session.new_chat()
    return next(e.answer for e in session.ask(question) if isinstance(e, AnswerFinished))


def test_the_b_parameter_question_is_answered_with_a_quote_from_the_bm25_doc(session):
    answer = _answer(session, "What does the b parameter in BM25 control?")
    assert answer.status == "answered" and answer.quoted
    assert any(c.doc_id == "docs/bm25.md" and c.verdict == "supported" for c in answer.citations)
    quotes = answer.text.split("\n\n")[1:]  # the quotes, after the label
    # How long chunks are penalised is quoted. Since the learned order of hits (rag.indexing.ordering) it is the
    # second quote, not the first: the order ranks the IDF section above the `b` one, and the quote scorer's rank
    # prior then leads with that section's "controlled by its `epsilon` parameter" (benchmarks/realdocs/RESULTS.md).
    assert any("`b`" in q and ("long" in q or "length" in q) for q in quotes[:2])


@pytest.mark.parametrize("question", [
    "How do I run the course lab inside a Docker container?",
    "How do I connect smoldocs to a Qdrant or Chroma vector database?",
])
def test_questions_the_docs_do_not_cover_are_declined(session, question):
    answer = _answer(session, question)
    assert answer.status == "insufficient_evidence" and not answer.quoted


def test_the_far_question_of_the_fake_loop_tests_is_declined_with_minilm_over_their_chunks(real_model, real_embedder):
    # tests/test_agent_loop.py pins the decline path with a hash embedder; this is the same question and chunks with
    # MiniLM, so the fake's bucket count is not what makes it decline.
    from tests.test_agent_loop import CHUNKS, FAR_QUESTION, MemoryRetriever

    session = ChatSession(real_model, MemoryRetriever(CHUNKS), embedder=real_embedder,
                          settings=AgentSettings(policy="search-first", decoding="extractive"))
    answer = _answer(session, FAR_QUESTION)
    assert answer.status == "insufficient_evidence" and not answer.quoted


def test_a_decline_says_which_name_the_docs_never_mention(session):
    answer = _answer(session, "How do I back the KV cache with Redis?")
    assert answer.status == "insufficient_evidence" and not answer.quoted
    assert answer.text == "The docs do not cover this. The docs never mention Redis."
    assert answer.missing_from_docs == ("Redis",) and answer.missing_from_excerpts == ()
