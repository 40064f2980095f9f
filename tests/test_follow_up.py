"""get_document in the agent: the model policy can call it, and "show me the whole section of [2]" uses it."""

from __future__ import annotations

import dataclasses

import pytest

from agent.events import Answer, ContextBuilt, SearchFinished, SearchStarted
from agent.session import ChatSession, Turn
from agent.settings import AgentSettings
from rag.verification.verdicts import CitationVerdict, Verdict
from agent.turn.loop import cited_sources, renumber
from tests.test_agent_loop import final, make_session


def test_renumber_maps_markers_and_leaves_code_and_others_alone():
    assert renumber("whole section of [2], and [3] too", {2: 1}) == "whole section of [1], and [3] too"
    assert renumber("see [2, 3] and `a[2]`", {2: 1, 3: 2}) == "see [1, 2] and `a[2]`"
    assert cited_sources("more on [3] and [1] and [3]", {1: "a#1", 3: "c#1"}) == ["c#1", "a#1"]
    assert cited_sources("more on [4]", {1: "a#1"}) == []


def test_follow_up_reads_the_cited_chunk_whole_and_renumbers_the_question():
    session, model, retriever = make_session(
        ["The kv cache stores keys [1]. BM25 ranks documents by term frequency [2].", "It ranks by term frequency [1]."]
    )
    first = final(session.ask("kv cache keys and bm25 ranks documents"))
    second = {c.n: c.chunk_id for c in first.citations}[2]
    text = retriever.chunk(second).text
    searches = len(retriever.calls)

    events = list(session.ask("show me the whole section of [2]"))
    started = [e for e in events if isinstance(e, SearchStarted)]
    assert [e.query for e in started] == [second]
    assert len(retriever.calls) == searches  # get_document, not another search
    prompt = "\n".join(m["content"] for m in model.calls[-1])
    assert "whole section of [1]" in prompt and f"[1] {second.split('#')[0]}\n{text}" in prompt
    answer = final(events)
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, second)]


def test_model_policy_calls_get_document_and_cites_it():
    session, model, retriever = make_session(
        [
            '<tool_call>{"name": "get_document", "arguments": {"source_id": "docs/sampling.md#0"}}</tool_call>',
            "Temperature scales the logits [1].",
        ],
        policy="model",
        tool_grammar=False,
    )
    answer = final(session.ask("what does temperature do"))
    assert retriever.calls == []
    assert [(c.n, c.chunk_id) for c in answer.citations] == [(1, "docs/sampling.md#0")]
    assert "get_document" in model.calls[0][0]["content"]  # the model is told about the tool


def test_model_policy_source_not_found_goes_back_to_the_model():
    session, model, retriever = make_session(
        [
            '<tool_call>{"name": "get_document", "arguments": {"source_id": "docs/nope.md#4"}}</tool_call>',
            '<tool_call>{"name": "search_docs", "arguments": {"query": "temperature logits"}}</tool_call>',
            "Temperature scales the logits [1].",
        ],
        policy="model",
        tool_grammar=False,
    )
    answer = final(session.ask("what does temperature do"))
    assert "source_not_found" in model.calls[1][-1]["content"]
    assert retriever.calls and answer.citations[0].chunk_id == "docs/sampling.md#0"


def test_with_the_search_only_tool_grammar_the_model_is_not_told_of_get_document():
    session, model, _ = make_session(
        ['<tool_call>{"name": "search_docs", "arguments": {"query": "temperature logits"}}</tool_call>', "Temperature scales the logits [1]."],
        policy="model",
        tool_grammar=True,
    )
    final(session.ask("what does temperature do"))
    assert "search_docs" in model.calls[0][0]["content"] and "get_document" not in model.calls[0][0]["content"]


@pytest.mark.real
def test_real_follow_up_shows_the_cited_excerpt_whole(real_model, real_index, real_embedder):
    settings = AgentSettings(policy="search-first")
    settings = settings.with_(generation=dataclasses.replace(settings.generation, max_tokens=48))
    session = ChatSession(real_model, real_index, embedder=real_embedder, settings=settings)
    # The first answer comes from history: a turn whose [2] is a known chunk, as a restored chat would have it.
    cited = real_index.chunk("docs/kv-cache.md#1")
    first = Answer("What does the KV cache store?", "It stores keys and values [2].", "answered",
                   citations=(CitationVerdict(2, cited.chunk_id, cited.doc_id, cited.uri, Verdict.SUPPORTED),))  # fmt: skip
    session.restore([Turn(first.question, first)])
    events = list(session.ask("Show me the whole section of [2]."))
    assert [e.query for e in events if isinstance(e, SearchStarted)] == [cited.chunk_id]
    built = next(e for e in events if isinstance(e, ContextBuilt))
    assert built.prompt_tokens <= built.n_ctx - built.reserve
    found = next(e for e in events if isinstance(e, SearchFinished))
    assert found.excerpts == ((1, cited.chunk_id),) and cited.text in found.result and found.error is None
    answer = final(events)
    assert answer.status in ("answered", "insufficient_evidence")
    assert {c.chunk_id for c in answer.citations} <= {cited.chunk_id}  # [1] is the only excerpt it was shown
