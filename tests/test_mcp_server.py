"""`smoldocs mcp` over stdio, driven by the SDK's client: tools, resources, one ledger per session, bad input."""

from __future__ import annotations

import json
import re

import anyio
import pytest

from rag.excerpts.document_tool import GET_DOCUMENT_SCHEMA, SOURCE_NOT_FOUND
from rag.excerpts.search_tool import SEARCH_DOCS_SCHEMA
from tests.mcp_support import ROOT, excerpts, mcp_client

pytestmark = pytest.mark.real
SENTENCE = "Keys are stored after the rotary position embedding has been applied"


@pytest.fixture(scope="module")
def client(real_index):
    # real_index has built the bundled docs' index in this session's cache: the server only loads it.
    with mcp_client() as c:
        yield c


def test_lists_the_three_tools_with_the_agent_schemas(client):
    tools = {t.name: t for t in client.list_tools().tools}
    assert set(tools) == {"search_docs", "get_document", "check_citations"}
    assert tools["search_docs"].input_schema == SEARCH_DOCS_SCHEMA
    assert tools["get_document"].input_schema == GET_DOCUMENT_SCHEMA
    assert tools["check_citations"].input_schema["required"] == ["answer"]


def test_every_document_is_a_resource_that_reads_back_its_text(client, real_index):
    uris = [str(r.uri) for r in client.list_resources().resources]
    assert uris == [f"smoldocs://doc/{d}" for d in real_index.doc_ids]
    read = client.read_resource("smoldocs://doc/docs/kv-cache.md")
    assert read.contents[0].text == (ROOT / "docs_corpus" / "docs" / "kv-cache.md").read_text()


def test_search_then_get_document_then_check_keeps_numbers_for_the_session(client, real_index):
    error, first = client.call("search_docs", {"query": "rotary position embedding keys stored in the cache", "k": 3})
    assert not error
    shown = excerpts(first)
    assert len(shown) == 3 and len(first.split("\n\n[")) == 3
    n, source = next((n, s) for n, s in shown.items() if s == "docs/kv-cache.md#1")

    error, whole = client.call("get_document", {"source_id": source})
    assert not error and excerpts(whole) == {n: source}  # the same chunk keeps its number
    assert real_index.chunk(source).text in whole

    other = next(c.chunk_id for c in real_index.chunks if c.chunk_id not in shown.values() and c.doc_id != "docs/kv-cache.md")
    error, fresh = client.call("get_document", {"source_id": other})
    (m, got), = excerpts(fresh).items()
    assert not error and got == other and m > max(shown)

    error, again = client.call("search_docs", {"query": "rotary position embedding keys stored in the cache", "k": 3})
    assert excerpts(again) == shown  # numbers are stable across the session's calls

    answer = f"{SENTENCE} [{n}]. The cache is kept on a floppy disk [{m}]. It was designed in 1802 [99]."
    error, text = client.call("check_citations", {"answer": answer})
    report = json.loads(text)
    verdicts = {c["n"]: c["verdict"] for c in report["citations"]}
    assert not error and verdicts == {n: "supported", m: "unsupported", 99: "made_up"}
    assert [c["verdict"] for c in report["claims"]] == ["supported", "unsupported", "made_up"]


def test_source_not_found_is_a_result_that_lists_no_ids(client):
    error, text = client.call("get_document", {"source_id": "docs/kv-cache.md#999"})
    assert not error and text.startswith(SOURCE_NOT_FOUND)
    assert "docs/kv-cache.md#1" not in text


@pytest.mark.parametrize(
    "name, arguments, fragment",
    [
        ("search_docs", {"query": "kv cache", "k": 0}, "k: 0 is less than the minimum of 1"),
        ("search_docs", {"query": "kv cache", "k": 21}, "k: 21 is greater than the maximum of 20"),
        ("search_docs", {"query": "kv cache", "k": "5"}, "k: '5' is not of type 'integer'"),
        ("search_docs", {"query": 42}, "query: 42 is not of type 'string'"),
        ("search_docs", {"k": 3}, "'query' is a required property"),
        ("search_docs", {"query": "kv", "colour": "red"}, "Additional properties are not allowed"),
        ("search_docs", {"query": "kv", "doc_ids": ["docs/kv-cach.md"]}, "unknown doc id 'docs/kv-cach.md'; did you mean"),
        ("get_document", {"source_id": ["docs/kv-cache.md#1"]}, "is not of type 'string'"),
        ("check_citations", {"answer": 7}, "answer must be a string"),
        ("check_citations", {"answer": "x [1]. " * 4000}, "more than 20000"),
    ],
)
def test_bad_arguments_come_back_as_one_line_tool_errors(client, name, arguments, fragment):
    error, text = client.call(name, arguments)
    assert error and fragment in text and "\n" not in text and "Traceback" not in text


def test_a_call_the_client_abandons_does_not_end_the_session(client):
    long_answer = " ".join(f"The KV cache stores keys for token {i} [1]." for i in range(60))

    async def abandon():
        with anyio.move_on_after(0.2):
            await client.session.call_tool("check_citations", {"answer": long_answer})

    client.portal.call(abandon)
    error, text = client.call("search_docs", {"query": "kv cache", "k": 1})
    assert not error and re.match(r"\[\d+\] ", text)


def test_shared_calls_enter_together_and_a_stop_waits_for_none():
    """A store's calls hold SharedCalls together; the stopping server's acquire(blocking=False) is refused while a
    call is inside, and a call that comes while the server holds it waits until release()."""
    import threading

    from agent.surfaces.mcp_server import SharedCalls

    calls = SharedCalls()
    entered = threading.Event()
    with calls:
        second = threading.Thread(target=lambda: (calls.__enter__(), entered.set(), calls.__exit__(None, None, None)))
        second.start()
        assert entered.wait(5)  # a second call got in beside the first
        second.join(5)
        assert not calls.acquire(blocking=False)
    assert calls.acquire(blocking=False)
    entered.clear()
    late = threading.Thread(target=lambda: (calls.__enter__(), entered.set(), calls.__exit__(None, None, None)))
    late.start()
    assert not entered.wait(0.3)  # held: the call waits
    calls.release()
    assert entered.wait(5)
    late.join(5)


def test_a_session_keeps_a_digest_per_number_and_a_check_looks_up_only_the_numbers_it_cites():
    """What a session remembers of each shown excerpt is 16 bytes, not its text; an answer's check reads only the
    chunks its markers cite (it read every chunk the session was ever shown), and still names an edited one."""
    from types import SimpleNamespace

    from agent.surfaces.mcp_server import SessionState
    from rag.citations import parse_citations

    texts = {f"docs/page.md#{i}": f"Text of chunk {i}. " * 40 for i in range(200)}
    looked_up: list[str] = []

    class Index:
        def chunk(self, chunk_id):
            looked_up.append(chunk_id)
            return SimpleNamespace(text=texts[chunk_id]) if chunk_id in texts else None

    state = SessionState()
    hits = [SimpleNamespace(chunk_id=c, doc_id="docs/page.md", uri="docs/page.md") for c in texts]
    state.remember([state.ledger.cite(h) for h in hits], Index())
    assert len(state.shown_digest) == 200 and all(len(d) == 16 for d in state.shown_digest.values())
    texts["docs/page.md#4"] = "Edited since."  # [5]
    looked_up.clear()
    answer = "It is configured there [5], and also here [7]; [999] is made up."
    assert state.changed(Index(), parse_citations(answer)) == {5}
    assert sorted(looked_up) == ["docs/page.md#4", "docs/page.md#6"]
    assert state.changed(Index()) == {5}  # every number, when none are given


def test_a_session_holding_max_shown_numbers_gets_no_more_excerpts_and_a_new_session_does(real_index):
    """What a session remembers is bounded: once it holds MAX_SHOWN_PER_SESSION numbers (3 here), search_docs and
    get_document are one tool error saying to start a new session; its answers can still be checked, and a new
    session searches again from [1]."""
    prelude = "import agent.surfaces.mcp_server as m; m.MAX_SHOWN_PER_SESSION = 3"
    with mcp_client(prelude=prelude) as c:
        error, first = c.call("search_docs", {"query": "kv cache size", "k": 2})
        assert not error and set(excerpts(first)) == {1, 2}
        error, second = c.call("search_docs", {"query": "llama.cpp context window", "k": 2})
        assert not error and max(excerpts(second)) >= 3
        for name, arguments in (("search_docs", {"query": "tokenizer", "k": 1}),
                                ("get_document", {"source_id": excerpts(first)[1]})):
            error, text = c.call(name, arguments)
            assert error and "start a new MCP session" in text and "(3)" in text, text
        error, report = c.call("check_citations", {"answer": "The cache holds keys and values [1]."})
        assert not error and "[1]" in report
    with mcp_client(prelude=prelude) as fresh:
        error, text = fresh.call("search_docs", {"query": "tokenizer", "k": 1})
        assert not error and set(excerpts(text)) == {1}
