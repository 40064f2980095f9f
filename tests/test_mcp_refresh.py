"""`smoldocs mcp` over a small docs folder that changes while it runs, and a client that goes away mid-call."""

from __future__ import annotations

import itertools
import json
import shutil

import anyio
import pytest
from mcp import MCPError

from tests.mcp_support import excerpts, mcp_client

pytestmark = pytest.mark.real

ALPHA = "# Alpha\n\nThe alpha valve opens at forty degrees and closes at ten degrees.\n"
BETA = "# Beta\n\nThe beta pump moves nine litres of water every minute.\n"


@pytest.fixture
def docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "alpha.md").write_text(ALPHA)
    (root / "beta.md").write_text(BETA)
    return root


def test_a_changed_docs_folder_is_refreshed_and_said_so(docs, tmp_path):
    with mcp_client("--docs", str(docs), "--index", str(tmp_path / "index")) as client:
        error, text = client.call("search_docs", {"query": "alpha valve degrees", "k": 1})
        assert not error and "note:" not in text
        (n, source), = excerpts(text).items()
        assert source == "alpha.md#0"

        # Edit the excerpt the session was shown, and add a document.
        (docs / "alpha.md").write_text(ALPHA.replace("forty", "sixty"))
        (docs / "gamma.md").write_text("# Gamma\n\nThe gamma gauge reads pressure in bar.\n")

        error, text = client.call("search_docs", {"query": "gamma gauge pressure", "k": 1})
        assert not error and text.startswith("note: the docs changed, so the index was refreshed")
        assert "1 added, 1 changed, 0 removed" in text and excerpts(text) == {n + 1: "gamma.md#0"}
        assert "smoldocs://doc/gamma.md" in [str(r.uri) for r in client.list_resources().resources]

        error, text = client.call("check_citations", {"answer": f"The alpha valve opens at forty degrees [{n}]."})
        citation = json.loads(text)["citations"][0]
        assert citation["verdict"] == "unresolved" and "changed in the docs after it was shown" in citation["reason"]

        error, text = client.call("get_document", {"source_id": "alpha.md#0"})
        assert "sixty degrees" in text and excerpts(text) == {n: "alpha.md#0"}

        shutil.rmtree(docs)
        error, text = client.call("search_docs", {"query": "alpha valve", "k": 1})
        assert error and "docs folder not found" in text and "\n" not in text
        with pytest.raises(MCPError, match="the docs cannot be read: docs folder not found"):
            client.list_resources()


def test_a_client_that_disconnects_mid_call_stops_the_server_cleanly(docs, tmp_path):
    errlog = (tmp_path / "server.err").open("w+")
    # ~16k characters, 343 claims without numbers, so each is embedded and judged (a changed number is refused
    # before any embedding, in microseconds): the check takes over a second, several times the client's patience.
    words = ["cold", "warm", "clean", "salty", "fresh", "grey", "still"]
    answer = " ".join(f"The beta pump moves {a} {b} {c} water [1]." for a, b, c in itertools.product(words, repeat=3))
    with mcp_client("--docs", str(docs), "--index", str(tmp_path / "index"), errlog=errlog) as client:
        client.call("search_docs", {"query": "beta pump", "k": 1})

        async def start_and_leave():
            with anyio.move_on_after(0.15):
                await client.session.call_tool("check_citations", {"answer": answer})

        client.portal.call(start_and_leave)
    # Leaving the client closed the server's stdin while a call may still have been running.
    errlog.seek(0)
    log = errlog.read()
    # The check takes seconds: the server stopped with it still running, and did not wait for it.
    assert "smoldocs mcp: the client closed the connection; stopped (a call it left was still running)" in log
    assert "Traceback" not in log
