"""`smoldocs serve`, a real subprocess on 127.0.0.1, driven by the SDK's streamable HTTP client: tokens, 401s,
each limit, and an access log with no token and no document text."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import time

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from agent.cli import main
from agent.surfaces.serve.access_log import FIELDS
from agent.surfaces.serve.app import is_loopback
from agent.surfaces.serve.limits import MAX_BODY_BYTES, MAX_QUERY_CHARS
from agent.surfaces.serve.tokens import TokenFile
from tests.mcp_support import ROOT, excerpts
from tests.serve_support import http_client, make_token, serving

QUERY = "rotary position embedding keys stored in the cache"
LONG_ANSWER = " ".join(f"The KV cache stores keys for token {i} [1]." for i in range(60))
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


# --new-token and the tokens file: no server needed.


def test_new_token_is_printed_once_as_the_last_word_and_only_its_hash_is_stored(tmp_path, capsys):
    tokens = tmp_path / "tokens"
    assert main(["serve", "--new-token", "alice", "--tokens", str(tokens)]) == 0
    out = capsys.readouterr().out
    token = out.split()[-1]
    assert len(out.splitlines()) == 1 and len(token) >= 43  # 32 random bytes, base64
    assert stat.S_IMODE(os.stat(tokens).st_mode) == 0o600
    assert tokens.read_text() == f"alice:{hashlib.sha256(token.encode()).hexdigest()}\n"

    assert main(["serve", "--new-token", "alice", "--tokens", str(tokens)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "already has a token named 'alice'" in captured.err
    assert len(captured.err.splitlines()) == 1 and token not in captured.err

    assert main(["serve", "--new-token", "bob", "--tokens", str(tokens)]) == 0
    second = capsys.readouterr().out.split()[-1]
    assert second != token and token not in tokens.read_text() and second not in tokens.read_text()
    assert TokenFile(tokens).name_of(token) == "alice" and TokenFile(tokens).name_of(second) == "bob"


def test_a_deleted_line_revokes_its_token_without_a_restart(tmp_path):
    tokens = tmp_path / "tokens"
    alice, bob = make_token(tokens, "alice"), make_token(tokens, "bob")
    checked = TokenFile(tokens)
    assert checked.name_of(alice) == "alice" and checked.name_of("x" + alice) is None and checked.name_of("") is None
    tokens.write_text("".join(line + "\n" for line in tokens.read_text().splitlines() if not line.startswith("alice:")))
    assert checked.name_of(alice) is None and checked.name_of(bob) == "bob"



def test_a_malformed_tokens_file_is_one_line_at_start_and_ignored_while_serving(tmp_path, capsys):
    tokens = tmp_path / "tokens"
    alice = make_token(tokens, "alice")
    checked = TokenFile(tokens)
    assert checked.name_of(alice) == "alice"
    tokens.write_text(tokens.read_text() + "bob:not-a-hash-at-all\n")  # an editor's half-made line
    assert checked.name_of(alice) == "alice"  # the last good tokens stay in force
    assert main(["serve", "--tokens", str(tokens)]) == 2
    err = capsys.readouterr().err
    assert f"{tokens}, line 2: expected NAME:SHA256" in err and len(err.splitlines()) == 1

@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--new-token", "al ice"], "token name 'al ice'"),
        (["--host", "0.0.0.0"], "--host 0.0.0.0 can be reached from other machines: add --allow-remote"),
        (["--host", "192.168.1.10"], "add --allow-remote"),
        (["--port", "99999"], "expected a port number from 0 to 65535"),
    ],
)
def test_bad_serve_arguments_are_one_line(tmp_path, capsys, argv, fragment):
    tokens = tmp_path / "tokens"
    make_token(tokens, "alice")
    try:
        code = main(["serve", "--tokens", str(tokens), *argv])
    except SystemExit as exc:  # argparse's own refusals exit 2 after a usage line
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if not line.startswith(("usage:", " "))]) == 1


def test_serving_without_a_token_in_the_file_says_how_to_make_one(tmp_path, capsys):
    (tmp_path / "tokens").write_text("")
    assert main(["serve", "--tokens", str(tmp_path / "tokens")]) == 2
    assert "holds no tokens: make one with `smoldocs serve --new-token NAME" in capsys.readouterr().err


def test_only_loopback_hosts_count_as_this_machine():
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.0.0.1", "example.org"))


# A real server over the bundled docs.


@pytest.fixture(scope="module")
def team(tmp_path_factory, real_index):
    # real_index has built the bundled docs' index in this session's cache: the server only loads it.
    root = tmp_path_factory.mktemp("serve")
    tokens, log = root / "tokens", root / "access.log"
    names = {"alice": make_token(tokens, "alice"), "bob": make_token(tokens, "bob")}
    with serving("--tokens", str(tokens), "--access-log", str(log), "--max-in-flight", "2") as served:
        yield served, names, log


def _log(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.real
def test_tools_are_listed_and_called_with_a_good_token_and_numbers_last_the_session(team, real_index):
    served, names, log = team
    with http_client(served.url, names["alice"]) as client:
        assert {t.name for t in client.list_tools().tools} == {"search_docs", "get_document", "check_citations"}
        error, first = client.call("search_docs", {"query": QUERY, "k": 3})
        shown = excerpts(first)
        assert not error and len(shown) == 3 and "docs/kv-cache.md#1" in shown.values()
        n = next(n for n, s in shown.items() if s == "docs/kv-cache.md#1")
        error, whole = client.call("get_document", {"source_id": "docs/kv-cache.md#1"})
        assert not error and excerpts(whole) == {n: "docs/kv-cache.md#1"}
        assert real_index.chunk("docs/kv-cache.md#1").text in whole
        answer = f"Keys are stored after the rotary position embedding has been applied [{n}]. Made up [99]."
        error, text = client.call("check_citations", {"answer": answer})
        assert not error and {c["n"]: c["verdict"] for c in json.loads(text)["citations"]} == {n: "supported", 99: "made_up"}
    calls = [line for line in _log(log) if line["event"] == "call" and line["who"] == "alice"]
    assert [(c["tool"], c["hits"], c["outcome"]) for c in calls[-3:]] == [
        ("search_docs", 3, "ok"), ("get_document", 1, "ok"), ("check_citations", 2, "ok")]


@pytest.mark.real
@pytest.mark.parametrize("token", [None, "wrong", "Bearer"])
def test_no_token_or_a_wrong_one_is_a_401_with_one_log_line_and_no_hint(team, token):
    served, _, log = team
    before = len(_log(log))
    headers = ACCEPT | ({"authorization": f"Bearer {token}"} if token else {})
    reply = httpx2.post(served.url, json=INIT, headers=headers)
    assert reply.status_code == 401 and reply.headers["www-authenticate"] == 'Bearer realm="smoldocs"'
    assert reply.json()["error"]["message"] == "unauthorized: send a valid token as `Authorization: Bearer <token>`"
    (line,) = _log(log)[before:]
    assert line["event"] == "refused" and line["status"] == 401 and "who" not in line
    with pytest.raises(MCPError, match="unauthorized"), http_client(served.url, token):
        pass


@pytest.mark.real
def test_one_tokens_session_is_unknown_to_another_token(team):
    served, names, _ = team
    opened = httpx2.post(served.url, json=INIT, headers=ACCEPT | {"authorization": f"Bearer {names['alice']}"})
    session = opened.headers["mcp-session-id"]
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    common = ACCEPT | {"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    assert httpx2.post(served.url, json=listing, headers=common | {"authorization": f"Bearer {names['bob']}"}).status_code == 404
    assert httpx2.post(served.url, json=listing, headers=common | {"authorization": f"Bearer {names['alice']}"}).status_code == 200


@pytest.mark.real
def test_a_body_over_the_limit_is_a_413_told_or_streamed(team):
    served, names, log = team
    auth = ACCEPT | {"authorization": f"Bearer {names['alice']}"}
    declared = httpx2.post(served.url, content=b" " * (MAX_BODY_BYTES + 1), headers=auth)
    assert declared.status_code == 413 and f"over {MAX_BODY_BYTES} bytes" in declared.json()["error"]["message"]
    streamed = httpx2.post(served.url, content=iter([b" " * 65536] * (MAX_BODY_BYTES // 65536 + 1)), headers=auth)
    assert streamed.status_code == 413  # no Content-Length: the SDK's own limit, set to the same constant
    with http_client(served.url, names["alice"]) as client:
        with pytest.raises(MCPError, match=f"request body over {MAX_BODY_BYTES} bytes"):
            client.call("check_citations", {"answer": "x" * MAX_BODY_BYTES})
        assert not client.call("search_docs", {"query": "kv cache", "k": 1})[0]  # the session goes on
    assert {"event": "refused", "who": "alice", "status": 413} in [
        {k: v for k, v in line.items() if k in ("event", "who", "status")} for line in _log(log)]


@pytest.mark.real
def test_a_query_over_the_limit_is_a_one_line_tool_error(team):
    served, names, _ = team
    with http_client(served.url, names["alice"]) as client:
        error, text = client.call("search_docs", {"query": "kv " * (MAX_QUERY_CHARS // 3 + 1)})
    assert error and f"more than {MAX_QUERY_CHARS}" in text and "\n" not in text


@pytest.mark.real
def test_requests_over_a_tokens_share_are_429_and_the_others_are_answered(team):
    served, names, log = team
    outcomes: list[str] = []
    with http_client(served.url, names["bob"]) as client:

        async def one():
            try:
                await client.session.call_tool("check_citations", {"answer": LONG_ANSWER})
                outcomes.append("ok")
            except MCPError as exc:
                outcomes.append(str(exc))

        async def flood():
            async with anyio.create_task_group() as tg:
                for _ in range(10):
                    tg.start_soon(one)

        client.portal.call(flood)
    too_many = "too many requests at once for this token (at most 2): wait for an answer before sending more"
    assert outcomes.count("ok") >= 2 and set(outcomes) == {"ok", too_many}, outcomes
    refused = [line for line in _log(log) if line.get("status") == 429]
    assert refused and all(line["who"] == "bob" for line in refused)


@pytest.mark.real
def test_the_log_holds_no_token_and_no_document_text(team, real_index):
    served, names, log = team
    with http_client(served.url, names["alice"]) as client:
        client.call("search_docs", {"query": QUERY, "k": 3})
        client.call("get_document", {"source_id": "docs/kv-cache.md#1"})
    written = log.read_text() + served.stderr()
    assert names["alice"] not in written and names["bob"] not in written
    assert QUERY not in written and "rotary" not in written.lower()
    for line in real_index.chunk("docs/kv-cache.md#1").text.splitlines():
        assert len(line) < 20 or line not in written
    assert all(set(line) <= set(FIELDS) for line in _log(log))


@pytest.mark.real
def test_a_document_read_as_a_resource_is_logged_like_a_call(team):
    served, names, log = team
    with http_client(served.url, names["bob"]) as client:
        read = client.read_resource("smoldocs://doc/docs/kv-cache.md")
    assert read.contents[0].text == (ROOT / "docs_corpus" / "docs" / "kv-cache.md").read_text()
    line = [line for line in _log(log) if line["event"] == "call" and line["tool"] == "read_document"][-1]
    assert (line["who"], line["hits"], line["outcome"]) == ("bob", 1, "ok")

@pytest.mark.real
def test_a_call_over_the_time_limit_is_a_tool_error_and_the_next_call_is_served(tmp_path, real_index):
    tokens, log = tmp_path / "tokens", tmp_path / "access.log"
    token = make_token(tokens, "carol")
    limited = serving("--tokens", str(tokens), "--access-log", str(log), "--call-timeout", "0.001")
    with limited as served, http_client(served.url, token) as client:
        error, text = client.call("check_citations", {"answer": LONG_ANSWER})
        assert error and "check_citations took longer than 0.001 s (the server's limit per call)" in text
        error, _ = client.call("search_docs", {"query": "kv cache", "k": 1})
        assert error  # every call is over a millisecond: still one clear error each, not a dead session
    outcomes = [(line["tool"], line["outcome"]) for line in _log(log) if line["event"] == "call"]
    assert outcomes == [("check_citations", "timeout"), ("search_docs", "timeout")]


def test_a_remote_host_needs_the_flag_and_is_told_tls_is_a_proxys_job(tmp_path):
    tokens = tmp_path / "tokens"
    make_token(tokens, "dave")
    with serving("--tokens", str(tokens), "--host", "0.0.0.0", "--allow-remote",
                 "--docs", "tests/data/retrieval_docs", "--index", str(tmp_path / "index")) as served:  # fmt: skip
        assert served.url.startswith("http://0.0.0.0:")
        for _ in range(100):
            if "reverse proxy that terminates TLS" in served.stderr():
                break
            time.sleep(0.05)
        assert "reverse proxy that terminates TLS" in served.stderr()


@pytest.mark.real
def test_the_load_benchmark_reports_two_clients_for_two_seconds(real_index):
    from benchmarks.serve_load import measure, render

    report = measure(clients=2, seconds=2, questions=3, sample_s=0.5)
    assert report.calls > 0 and report.errors == 0 and report.calls_per_s > 0
    assert report.p50_ms <= report.p95_ms <= report.p99_ms
    assert report.rss_start_mb > 50 and report.rss_end_mb > 50  # the models are loaded in the server
    assert report.questions == 3 and 2 <= len(report.rss_samples_mb) <= 4 and min(report.rss_samples_mb) > 50
    text = render(report)
    assert "2 clients" in text and "RSS every 0.5 s" in text and "questions          3," in text


@pytest.mark.real
def test_the_load_benchmark_loads_a_served_store(pg_server, pg_url, docs, real_tokenizer, real_embedder):
    """benchmarks.serve_load --store: the server serves that store (one that does not exist stops it at the start,
    where the bundled docs would have been served)."""
    from benchmarks.serve_load import measure
    from rag.postgres.ingest import ingest

    ingest(pg_url, docs, real_tokenizer, real_embedder)
    report = measure(clients=2, seconds=2, store=pg_url)
    assert report.calls > 0 and report.errors == 0 and report.calls_per_s > 0
    with pytest.raises(RuntimeError, match="smoldocs serve did not start"):
        measure(clients=1, seconds=1, store=pg_server.url("no_such_database"))


@pytest.mark.real
def test_a_shared_store_is_served_over_http(pg_url, docs, real_tokenizer, real_embedder, tmp_path):
    from rag.postgres.ingest import ingest

    ingest(pg_url, docs, real_tokenizer, real_embedder)
    tokens = tmp_path / "tokens"
    token = make_token(tokens, "erin")
    with serving("--tokens", str(tokens), "--store", pg_url) as served, http_client(served.url, token) as client:
        error, text = client.call("search_docs", {"query": "building the index", "k": 2})
        assert not error and next(iter(excerpts(text).values())) == "guide.md#2"
        assert "## Building the index" in client.read_resource("smoldocs://doc/guide.md").contents[0].text
    assert "serving postgresql://" in served.stderr() and token not in served.stderr()
