"""get_document: one chunk with its provenance, numbered in the run's ledger; unknown ids are a result."""

from __future__ import annotations

import pytest

from agent.turn.tools import Tool, ToolRegistry
from fakes import WordTokenizer
from rag.excerpts.document_tool import (
    GET_DOCUMENT_DESCRIPTION,
    GET_DOCUMENT_NAME,
    GET_DOCUMENT_SCHEMA,
    SOURCE_NOT_FOUND,
    get_document_tool,
)
from rag.excerpts.packing import OUTDATED_TAG, Ledger, source_of, sourced_block

from rag.excerpts.search_tool import search_docs_tool
from rag.types import Chunk, SourceInfo
from tests.test_search_tool import MemoryRetriever

CHUNKS = [
    Chunk("docs/kv.md#1", "docs/kv.md", "docs/kv.md", "The KV cache keeps keys and values.", ("KV", "Stored"), 3, 5),
    Chunk("docs/kv.md#2", "docs/kv.md", "docs/kv.md", "Prefix reuse skips the shared prompt.", ("KV", "Reuse"), 7, 9),
    Chunk("docs/bm25.md#1", "docs/bm25.md", "docs/bm25.md", "BM25 ranks by term frequency.", ("BM25",), 1, 2),
]


def tools(max_tokens=1024):
    retriever, ledger, counter = MemoryRetriever(CHUNKS), Ledger(), WordTokenizer()
    return retriever, ledger, get_document_tool(retriever, ledger, counter, max_tokens), search_docs_tool(retriever, ledger, counter)


def test_returns_the_chunk_with_its_provenance_header():
    _, ledger, get, _ = tools()
    result = get({"source_id": "docs/kv.md#2"})
    assert result.ok and not result.not_found
    assert result.text == (
        "[1] docs/kv.md\n(source: docs/kv.md#2; section: KV > Reuse; lines 7-9)\nPrefix reuse skips the shared prompt.\n"
    )
    assert [c.chunk_id for c in ledger.citations()] == ["docs/kv.md#2"]
    assert source_of(result.text.splitlines()[1]) == "docs/kv.md#2"


def test_a_chunk_already_shown_keeps_its_number_and_a_new_one_gets_the_next():
    _, ledger, get, search = tools()
    searched = search({"query": "cache keys prefix reuse", "k": 2})
    numbers = {c.chunk_id: c.n for c in searched.citations}
    again = get({"source_id": "docs/kv.md#2"})
    assert again.citations[0].n == numbers["docs/kv.md#2"]
    fresh = get({"source_id": "docs/bm25.md#1"})
    assert fresh.citations[0].n == len(numbers) + 1
    assert fresh.text.startswith(f"[{len(numbers) + 1}] docs/bm25.md\n")


def test_unknown_id_is_source_not_found_without_listing_ids():
    _, ledger, get, _ = tools()
    result = get({"source_id": "docs/kv.md#9"})
    assert result.ok and result.not_found
    assert result.text.startswith(f"{SOURCE_NOT_FOUND}: ")
    assert "docs/kv.md#1" not in result.text and "docs/bm25.md" not in result.text
    assert len(ledger) == 0


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ({}, "'source_id' is a required property"),
        ({"source_id": 3}, "source_id: 3 is not of type 'string'"),
        ({"source_id": ""}, "source_id"),
        ({"source_id": "   "}, "not only spaces"),
        ({"source_id": "x" * 501}, "is 501 characters long"),
        ({"source_id": "docs/kv.md#1", "k": 2}, "Additional properties"),
        ("{not json", "not valid JSON"),
    ],
)
def test_bad_arguments_are_one_line_errors(arguments, fragment):
    _, ledger, get, _ = tools()
    result = get(arguments)
    assert not result.ok and fragment in result.error and "\n" not in result.error
    assert result.text == f"Error: {result.error}" and len(ledger) == 0


def test_a_chunk_over_the_budget_is_not_shown_or_cited():
    _, ledger, get, _ = tools(max_tokens=5)
    result = get({"source_id": "docs/kv.md#1"})
    assert result.ok and result.citations == [] and len(ledger) == 0
    assert "more than the 5 left" in result.text
    assert result.packed.omissions[0].reason == "over_budget"


def test_the_whole_text_is_counted_against_the_budget():
    counter = WordTokenizer()
    text = sourced_block(1, CHUNKS[0])
    exact = counter.count(text)
    _, ledger, _, _ = tools()
    fits = get_document_tool(MemoryRetriever(CHUNKS), Ledger(), counter, exact)({"source_id": "docs/kv.md#1"})
    assert fits.packed.tokens == exact and fits.citations
    short = get_document_tool(MemoryRetriever(CHUNKS), Ledger(), counter, exact - 1)({"source_id": "docs/kv.md#1"})
    assert not short.citations


def test_registry_validates_and_returns_not_found_as_a_result():
    _, _, get, _ = tools()
    registry = ToolRegistry({GET_DOCUMENT_NAME: Tool(GET_DOCUMENT_NAME, GET_DOCUMENT_DESCRIPTION, GET_DOCUMENT_SCHEMA, get)})
    assert registry.call(GET_DOCUMENT_NAME, {"source_id": 1}).error
    missing = registry.call(GET_DOCUMENT_NAME, '{"source_id": "nope#1"}')
    assert missing.ok and missing.text.startswith(SOURCE_NOT_FOUND)


@pytest.mark.real
def test_real_index_get_document_counts_with_the_real_tokenizer(real_index, real_tokenizer):
    chunk = real_index.chunks[10]
    ledger = Ledger()
    result = get_document_tool(real_index, ledger, real_tokenizer)({"source_id": chunk.chunk_id})
    assert result.citations[0].chunk_id == chunk.chunk_id
    assert result.packed.tokens == real_tokenizer.count(result.text) <= 1024
    assert chunk.text in result.text


class StandingRetriever(MemoryRetriever):
    """A retriever that knows each document's standing, as HybridIndex does."""

    def __init__(self, chunks, standing):
        super().__init__(chunks)
        self.standing = standing

    def source(self, doc_id):
        return self.standing.get(doc_id, SourceInfo())


def test_an_outdated_document_is_tagged_and_an_expired_one_is_not_shown():
    retriever = StandingRetriever(CHUNKS, {"docs/kv.md": SourceInfo(outdated=True), "docs/bm25.md": SourceInfo(expires="2001-01-01")})
    ledger = Ledger()
    get = get_document_tool(retriever, ledger, WordTokenizer())
    assert get({"source_id": "docs/kv.md#1"}).text.startswith(f"[1] docs/kv.md {OUTDATED_TAG}\n(source: docs/kv.md#1;")
    expired = get({"source_id": "docs/bm25.md#1"})
    assert expired.ok and not expired.citations and "expired on 2001-01-01" in expired.text and len(ledger) == 1
