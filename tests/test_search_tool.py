"""The search_docs tool: argument validation, retrieval with k and doc_ids, packing with the run's ledger."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fakes import WordTokenizer
from rag import markers
from rag.citations import Citation, problem
from rag.verification.verifier import verify_answer
from rag.errors import BudgetError
from rag.excerpts.packing import Ledger
from rag.excerpts.search_tool import (
    NO_RESULTS,
    SEARCH_DOCS_NAME,
    SEARCH_DOCS_SCHEMA,
    search_docs_tool,
    tool_spec,
    search_problem,
)
from rag.types import Chunk, Hit, RetrieverDefaults
from json_support import read_output

DOCS = Path(__file__).resolve().parent.parent / "docs_corpus"
BLOCK_HEAD = re.compile(r"^\[(\d+)\] (\S+)$", re.MULTILINE)


class MemoryRetriever(RetrieverDefaults):
    """Ranks chunks by how many query words they share; records every call."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.by_id = {c.chunk_id: c for c in chunks}
        self.chunks = list(self.by_id.values())
        self.calls: list[tuple[str, int, list[str] | None]] = []

    def search(self, query, k=5, doc_ids=None):
        self.calls.append((query, k, None if doc_ids is None else list(doc_ids)))
        words = set(query.lower().split())
        scored = []
        for c in self.chunks:
            if doc_ids is not None and c.doc_id not in doc_ids:
                continue
            score = len(words & set(c.text.lower().split()))
            if score:
                scored.append((score, c))
        scored.sort(key=lambda sc: -sc[0])
        return [Hit(c, float(s)) for s, c in scored[:k]]

    def chunk(self, chunk_id):
        return self.by_id.get(chunk_id)

    @property
    def doc_ids(self):
        return sorted({c.doc_id for c in self.chunks})


def chunk(chunk_id: str, text: str) -> Chunk:
    doc_id = chunk_id.split("#")[0]
    return Chunk(chunk_id, doc_id, doc_id, text)


CHUNKS = [
    chunk("docs/kv-cache.md#0", "the kv cache stores keys and values"),
    chunk("docs/kv-cache.md#1", "cache reuse makes the prompt faster"),
    chunk("docs/tokens.md#0", "a token budget bounds the prompt"),
    chunk("docs/bm25.md#0", "bm25 ranks documents by term weight"),
    chunk("docs/bm25.md#1", "the cache of bm25 scores"),
]


@pytest.fixture
def retriever():
    return MemoryRetriever(CHUNKS)


@pytest.fixture
def tool(retriever):
    return search_docs_tool(retriever, Ledger(), WordTokenizer())


def test_schema_has_exactly_the_documented_properties():
    assert SEARCH_DOCS_NAME == "search_docs"
    assert set(SEARCH_DOCS_SCHEMA["properties"]) == {"query", "k", "doc_ids", "collections"}  # collections: added by #39, optional
    assert SEARCH_DOCS_SCHEMA["required"] == ["query"]
    assert SEARCH_DOCS_SCHEMA["additionalProperties"] is False
    assert tool_spec()["function"]["parameters"] is SEARCH_DOCS_SCHEMA


@pytest.mark.parametrize(
    "arguments, named",
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "x" * 1001}, "query"),
        ({"query": 42}, "query"),
        ({"query": "cache", "k": 0}, "k"),
        ({"query": "cache", "k": 21}, "k"),
        ({"query": "cache", "k": "5"}, "k"),
        ({"query": "cache", "k": True}, "k"),
        ({"query": "cache", "doc_ids": "docs/bm25.md"}, "doc_ids"),
        ({"query": "cache", "doc_ids": [3]}, "doc_ids"),
        ({"query": "cache", "top_k": 3}, "top_k"),
        ("not json", "JSON"),
        (["cache"], "object"),
    ],
)
def test_bad_arguments_give_an_error_result_naming_the_problem(tool, retriever, arguments, named):
    result = tool(arguments)
    assert result.text.startswith("Error: ")
    assert named in result.error
    assert result.hits == [] and result.citations == [] and result.packed is None
    assert retriever.calls == []
    assert search_problem(arguments) == result.error


def test_good_arguments_validate():
    assert search_problem({"query": "cache"}) is None
    assert search_problem({"query": "x" * 1000, "k": 20, "doc_ids": ["docs/a.md"]}) is None
    assert search_problem('{"query": "cache", "k": 1}') is None


def test_nothing_matched_is_the_answer_no_results(tool):
    result = tool({"query": "zebra"})
    assert result.text == NO_RESULTS == "no results"
    assert result.error is None and result.ok
    assert result.citations == []


def test_arguments_given_as_a_json_string_search_as_a_mapping_does(tool, retriever):
    # the model's tool call arrives as a JSON string; the collections filter read it as a mapping and raised
    result = tool(json.dumps({"query": "cache", "k": 2, "doc_ids": ["docs/bm25.md"]}))
    assert result.ok and retriever.calls == [("cache", 2, ["docs/bm25.md"])]
    assert [h.chunk_id for h in result.hits] == ["docs/bm25.md#1"]


def test_k_and_doc_ids_reach_the_retriever(tool, retriever):
    result = tool({"query": "cache", "k": 2, "doc_ids": ["docs/bm25.md"]})
    assert retriever.calls == [("cache", 2, ["docs/bm25.md"])]
    assert [h.chunk_id for h in result.hits] == ["docs/bm25.md#1"]
    assert [m.group(2) for m in BLOCK_HEAD.finditer(result.text)] == ["docs/bm25.md"]


def test_an_unknown_doc_id_is_an_error_naming_it(tool, retriever):
    result = tool({"query": "cache", "doc_ids": ["docs/bm25.md", "docs/bm-25.md"]})
    assert result.text.startswith("Error: ") and "'docs/bm-25.md'" in result.error
    assert "did you mean docs/bm25.md" in result.error
    assert retriever.calls == []


def test_many_unknown_doc_ids_are_named_up_to_five_then_counted(tool, retriever):
    ids = [f"docs/missing-{i}.md" for i in range(200_000)] + ["x" * 100_000]
    result = tool({"query": "cache", "doc_ids": ids})
    assert "'docs/missing-0.md'" in result.error and "'docs/missing-4.md'" in result.error
    assert "missing-5.md" not in result.error and "and 199996 more" in result.error
    assert len(result.error) < 1_000 and retriever.calls == []
    result = tool({"query": "cache", "doc_ids": ["y" * 100_000]})
    assert len(result.error) < 1_000 and "100000 characters" in result.error


def test_a_retriever_that_cannot_list_documents_gets_the_filter_as_given():
    class Unlisted(MemoryRetriever):
        doc_ids = None

    retriever = Unlisted(CHUNKS)
    result = search_docs_tool(retriever, Ledger(), WordTokenizer())({"query": "cache", "doc_ids": ["docs/x.md"]})
    assert result.text == NO_RESULTS
    assert retriever.calls == [("cache", 5, ["docs/x.md"])]


def test_an_empty_doc_ids_list_means_every_document(tool, retriever):
    result = tool({"query": "cache", "doc_ids": []})
    assert retriever.calls == [("cache", 5, None)]
    assert len({h.doc_id for h in result.hits}) > 1


def test_k_defaults_to_five_and_limits_the_hits(retriever):
    tool = search_docs_tool(retriever, Ledger(), WordTokenizer())
    tool({"query": "the cache"})
    result = tool({"query": "the cache", "k": 1})
    assert [call[1] for call in retriever.calls] == [5, 1]
    assert len(result.hits) == 1


def test_the_model_sees_the_packed_text_and_its_citations(tool):
    result = tool({"query": "kv cache"})
    assert result.ok and result.packed is not None
    assert result.text == result.packed.text
    assert [int(m.group(1)) for m in BLOCK_HEAD.finditer(result.text)] == [c.n for c in result.citations]
    assert result.citations[0] == Citation(1, "docs/kv-cache.md#0", "docs/kv-cache.md", "docs/kv-cache.md")


def test_a_second_search_keeps_the_first_searchs_number(tool):
    first = tool({"query": "bm25 ranks"})
    second = tool({"query": "kv cache scores"})
    number = {c.chunk_id: c.n for c in first.citations}
    shared = [c for c in second.citations if c.chunk_id in number]
    assert shared, "the two searches share a chunk"
    assert all(c.n == number[c.chunk_id] for c in shared)
    new = [c.n for c in second.citations if c.chunk_id not in number]
    assert new == list(range(len(first.citations) + 1, len(first.citations) + 1 + len(new)))


def test_max_tokens_bounds_what_the_model_sees(retriever):
    counter = WordTokenizer()
    tool = search_docs_tool(retriever, Ledger(), counter, max_tokens=12)
    result = tool({"query": "the cache prompt"})
    assert 0 < result.packed.tokens <= 12 == result.packed.max_tokens
    assert counter.count(result.text) == result.packed.tokens
    assert result.packed.dropped > 0


def test_hits_that_fit_nowhere_say_so_without_an_error(retriever):
    result = search_docs_tool(retriever, Ledger(), WordTokenizer(), max_tokens=2)({"query": "cache"})
    assert result.ok and result.text.startswith(NO_RESULTS + ":")
    assert result.citations == []


def test_a_negative_max_tokens_is_refused(retriever):
    with pytest.raises(BudgetError):
        search_docs_tool(retriever, Ledger(), WordTokenizer(), max_tokens=-5)


def test_the_order_option_reaches_the_packer(retriever):
    tool = search_docs_tool(retriever, Ledger(), WordTokenizer(), order="lost_in_middle")
    result = tool({"query": "the cache prompt bm25 kv"})
    numbers = [int(m.group(1)) for m in BLOCK_HEAD.finditer(result.text)]
    assert len(numbers) >= 3 and numbers[:2] == [1, 3] and numbers[-1] == 2


def test_json_string_arguments_work(tool, retriever):
    result = tool(json.dumps({"query": "bm25", "k": 1}))
    assert retriever.calls == [("bm25", 1, None)]
    assert result.citations[0].chunk_id.startswith("docs/bm25.md")


# --- real components: SmolLM2 tokenizer for counting, hybrid index over docs_corpus ---


@pytest.fixture(scope="module")
def real(real_tokenizer, real_index):
    return real_tokenizer, real_index


QUESTIONS = [
    "What does the KV cache store?",
    "How does BM25 rank documents?",
    "How are chunks given stable ids?",
    "What limits the context window?",
]


@pytest.mark.real
def test_real_search_citations_resolve_and_fit_the_budget(real):
    tokenizer, index = real
    ledger = Ledger()
    tool = search_docs_tool(index, ledger, tokenizer, max_tokens=600)
    results = [tool({"query": q, "k": 5}) for q in QUESTIONS]
    for result in results:
        assert result.ok and result.packed is not None and result.packed.used
        assert result.packed.tokens <= 600
        assert result.packed.tokens == tokenizer.count(result.text)
        for c, h in zip(result.citations, result.packed.used):
            assert f"[{c.n}] {h.uri}\n{index.chunk(c.chunk_id).text}\n" in result.text
    cited = ledger.citations()
    assert [c.n for c in cited] == list(range(1, len(cited) + 1))
    assert [problem(c, index.chunk) for c in cited] == [None] * len(cited)
    answer = " ".join(f"The docs say so [{c.n}]." for c in cited) + " And a made-up one [99]."
    checked = verify_answer(answer, {c.n: c for c in cited}, index.chunk, None)
    assert checked.made_up == (99,) and checked.unresolved == ()
    assert [c.n for c in checked.citations] == [*(c.n for c in cited), 99]
    assert markers.numbers(answer)[-1] == 99


@pytest.mark.real
def test_real_index_reports_a_missing_chunk_and_a_wrong_doc_id(real):
    tokenizer, index = real
    ledger = Ledger()
    result = search_docs_tool(index, ledger, tokenizer)({"query": QUESTIONS[0]})
    good = result.citations[0]
    missing = Citation(good.n + 50, good.doc_id + "#9999", good.doc_id, good.uri)
    wrong_doc = Citation(good.n + 51, good.chunk_id, "docs/not-this-one.md", good.uri)
    assert [problem(c, index.chunk) is None for c in (good, missing, wrong_doc)] == [True, False, False]
    shown = {c.n: c for c in (good, missing, wrong_doc)}
    answer = f"One [{good.n}]. Two [{missing.n}]. Three [{wrong_doc.n}]."
    assert verify_answer(answer, shown, index.chunk, None).unresolved == (missing.n, wrong_doc.n)


@pytest.mark.real
def test_real_doc_ids_filter_limits_the_excerpts(real):
    tokenizer, index = real
    first = index.search(QUESTIONS[1], k=1)[0]
    result = search_docs_tool(index, Ledger(), tokenizer)({"query": QUESTIONS[1], "doc_ids": [first.doc_id]})
    assert result.hits and all(h.doc_id == first.doc_id for h in result.hits)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["pack", "   "], "QUERY is empty"),
        (["pack", "kv cache", "-k", "0"], "-k 0 is out of range"),
        (["pack", "kv cache", "-k", "21"], "-k 21 is out of range"),
        (["pack", "kv cache", "--budget", "-1"], "--budget -1 is negative"),
    ],
)
def test_pack_command_refuses_bad_options_in_one_line(capsys, argv, message):
    from agent.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


@pytest.mark.real
def test_pack_command_reports_what_fits_with_the_real_tokenizer(real, capsys):
    from agent.cli import main

    tokenizer, _ = real
    assert main(["pack", "What does the KV cache store?", "--budget", "200", "--json"]) == 0
    report = read_output("pack", capsys.readouterr().out)
    assert report["budget"] == 200 and report["tokenizer"] == tokenizer.name
    assert 0 < report["tokens"] <= 200 and report["tokens"] == tokenizer.count(report["text"])
    assert report["hits_in"] == report["hits_out"] + sum(report["dropped"].values())
    assert [c["n"] for c in report["citations"]] == list(range(1, report["hits_out"] + 1))


def test_doc_id_suggestions_are_escaped_and_an_id_typed_as_shown_is_that_document():
    """A file name can hold a line break or an ESC: the hint shows it escaped, and that escaped form is accepted."""
    odd = MemoryRetriever([chunk("docs/line\nbreak.md#0", "the cache of line breaks"),
                           chunk("docs/esc\x1b[31mred.md#0", "the cache of red text")])
    tool = search_docs_tool(odd, Ledger(), WordTokenizer())
    result = tool({"query": "cache", "doc_ids": ["docs/line break.md"]})
    assert "did you mean docs/line\\nbreak.md" in result.error and "\n" not in result.error
    result = tool({"query": "cache", "doc_ids": ["docs/esc\\x1b[31mred.md"]})
    assert result.ok and [h.doc_id for h in result.hits] == ["docs/esc\x1b[31mred.md"]


def test_a_search_without_filters_never_lists_the_index():
    """Listing a store's documents costs a query (58 ms at 92k documents): only a filter may ask for the list."""

    class Counted(MemoryRetriever):
        listings = 0

        @property
        def doc_ids(self):
            Counted.listings += 1
            return super().doc_ids

    retriever = Counted(CHUNKS)
    tool = search_docs_tool(retriever, Ledger(), WordTokenizer())
    for given in ({"query": "cache"}, {"query": "cache", "doc_ids": []}, {"query": "cache", "collections": []}):
        assert tool(given).hits
    assert Counted.listings == 0
    tool({"query": "cache", "doc_ids": ["docs/kv-cache.md"]})
    assert Counted.listings > 0
    assert Counted.listings == 1  # once for the filter, though it is both matched and checked against the listing
