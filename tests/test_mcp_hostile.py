"""`smoldocs mcp` against hostile clients and folders: malformed JSON-RPC, a client killed mid-call, a cold cache
with 2,000 files, PDFs that change, file names that are not UTF-8.

Malformed lines and a killed client need raw pipes (the SDK's client only sends well-formed messages); the rest
goes through the official SDK client (tests/mcp_support.py).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time

import pytest

from tests.mcp_support import ROOT

pytestmark = pytest.mark.real

ALPHA = "# Alpha\n\nThe alpha valve opens at forty degrees and closes at ten degrees.\n"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip


class RawClient:
    """`smoldocs mcp` in a subprocess, spoken to line by line."""

    def __init__(self, *args: str, launcher: tuple[str, ...] = ("-m", "agent")) -> None:
        env = {k: os.environ[k] for k in ("SMOLDOCS_CACHE", "SMOLDOCS_DATA", "OPENBLAS_NUM_THREADS", "PATH") if k in os.environ}
        env["PYTHONPATH"] = str(ROOT)
        self.proc = subprocess.Popen([sys.executable, *launcher, "mcp", *args], cwd=str(ROOT), env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        self.buffer = b""

    def send(self, line: str | bytes) -> None:
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def request(self, message: dict) -> None:
        self.send(json.dumps(message))

    def replies(self, seconds: float) -> list[dict]:
        """Every reply that comes within `seconds`."""
        out, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if not ready:
                continue
            piece = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not piece:
                break
            self.buffer += piece
            while b"\n" in self.buffer:
                line, self.buffer = self.buffer.split(b"\n", 1)
                out.append(json.loads(line))
        return out

    def reply_to(self, request_id, seconds: float = 60) -> dict:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for reply in self.replies(0.5):
                if reply.get("id") == request_id:
                    return reply
        raise AssertionError(f"no reply to {request_id!r} within {seconds} s")

    def initialize(self) -> dict:
        self.request(INITIALIZE)
        reply = self.reply_to(1)
        self.request({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def finish(self, seconds: float = 30) -> tuple[int, str]:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        code = self.proc.wait(seconds)
        return code, self.proc.stderr.read().decode()


@pytest.fixture
def small_docs(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "alpha.md").write_text(ALPHA)
    return root


def test_malformed_json_rpc_gets_an_error_reply_wherever_an_id_can_be_read(small_docs, tmp_path):
    huge = "9" * 5000  # past CPython's 4,300-digit limit on int(str)
    client = RawClient("--docs", str(small_docs), "--index", str(tmp_path / "index"))
    try:
        client.initialize()
        cases = [
            ("not json at all", None, -32700),
            ('{"jsonrpc": "2.0", "id": 7, "method": "tools/list"', None, -32700),  # cut short: no id to trust
            ('{"jsonrpc": "2.0", "id": 5}', 5, -32600),
            ('{"jsonrpc": "2.0", "id": "six", "method": 7}', "six", -32600),
            ('[1, 2, 3]', None, -32600),
            (f'{{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {{"n": {huge}}}}}', 8, -32600),
            (f'{{"jsonrpc": "2.0", "id": {huge}, "method": "tools/list"}}', None, -32600),
            ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', None, -32600),
        ]
        for line, _, _ in cases:
            client.send(line)
        client.request({"jsonrpc": "2.0", "id": 99, "method": "tools/list"})
        got = []
        end = time.monotonic() + 60
        while time.monotonic() < end and not any(r.get("id") == 99 for r in got):
            got += client.replies(0.5)
        errors = [(r["id"], r["error"]["code"]) for r in got if "error" in r]
        assert errors == [(want_id, code) for _, want_id, code in cases]
        assert all("\n" not in r["error"]["message"] and len(r["error"]["message"]) < 300 for r in got if "error" in r)
        assert [r for r in got if r.get("id") == 99][0]["result"]["tools"]  # the session goes on
    finally:
        code, log = client.finish()
    assert code == 0 and "Traceback" not in log


# `smoldocs mcp` whose tokenizer loads inside llama_cpp's own suppress_stdout_stderr (what Llama(verbose=False)
# does), held open for 3 s: fd 1 and sys.stdout point at /dev/null while the server starts serving.
QUIET_LOAD = """
import sys, time
from llama_cpp._utils import suppress_stdout_stderr
from agent.surfaces.commands import common
real = common.load_tokenizer_from_args
def quiet(args):
    with suppress_stdout_stderr(disable=False):
        time.sleep(3)
    return real(args)
common.load_tokenizer_from_args = quiet
from agent.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_model_loading_quietly_behind_the_handshake_cannot_take_the_protocol_pipe(small_docs, tmp_path):
    # Before the pipes were claimed first, the SDK claimed them while the load held fd 1 on /dev/null: the reply
    # to initialize went there and the client waited for ever (about one start in four, by chance of timing).
    client = RawClient("--docs", str(small_docs), "--index", str(tmp_path / "index"), launcher=("-c", QUIET_LOAD))
    try:
        client.request(INITIALIZE)
        assert client.reply_to(1, seconds=20)["result"]["serverInfo"]["name"] == "smoldocs"
        client.request({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "search_docs", "arguments": {"query": "alpha valve", "k": 1}}})  # fmt: skip
        assert "forty degrees" in client.reply_to(2)["result"]["content"][0]["text"]
    finally:
        code, log = client.finish()
    assert code == 0 and "Traceback" not in log, log


def test_a_client_killed_mid_call_is_one_line_and_exit_0(small_docs, tmp_path):
    client = RawClient("--docs", str(small_docs), "--index", str(tmp_path / "index"))
    client.initialize()
    words = ["cold", "warm", "clean", "salty", "fresh", "grey", "still"]
    answer = " ".join(f"The alpha valve opens at {a} {b} {c} degrees [1]." for a in words for b in words for c in words)
    client.request({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "search_docs", "arguments": {"query": "alpha valve", "k": 1}}})  # fmt: skip
    client.reply_to(2)
    client.request({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "check_citations", "arguments": {"answer": answer}}})  # fmt: skip
    time.sleep(0.2)
    # What a killed client leaves: both ends of its pipes closed, the reply still to be written.
    code, log = client.finish()
    lines = [line for line in log.splitlines() if line.strip()]
    assert code == 0, log
    assert "Traceback" not in log and "ExceptionGroup" not in log and "BrokenPipe" not in log, log
    assert lines[-1].startswith("smoldocs mcp: the client closed the connection") and len(lines) <= 3, log


def _pdf(path, pages: list[str]) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for text in pages:
        pdf.add_page()
        pdf.multi_cell(0, 8, text)
    pdf.output(str(path))


def test_pdfs_are_served_fresh_by_page(small_docs, tmp_path):
    from tests.mcp_support import excerpts, mcp_client

    pdf = small_docs / "manual.pdf"
    _pdf(pdf, ["The gamma gauge reads pressure in bar.", "The delta drain empties the tank every week."])
    with mcp_client("--docs", str(small_docs), "--index", str(tmp_path / "index")) as client:
        error, text = client.call("search_docs", {"query": "delta drain tank week", "k": 1})
        (n, source), = excerpts(text).items()
        assert not error and source.startswith("manual.pdf#")
        assert f"(source: {source}; section: (top); pages 1-2)" in text and "lines" not in text

        read = client.read_resource("smoldocs://doc/manual.pdf").contents[0].text
        assert "%PDF" not in read
        assert read.index("[page 1]") < read.index("gamma gauge") < read.index("[page 2]") < read.index("delta drain")

        time.sleep(0.05)
        _pdf(pdf, ["The omega meter reads flow in litres per minute."])  # rewritten in place
        error, text = client.call("search_docs", {"query": "omega meter flow litres", "k": 1})
        assert not error and text.startswith("note: the docs changed") and "omega meter" in text
        assert "delta drain" not in client.read_resource("smoldocs://doc/manual.pdf").contents[0].text

        pdf.unlink()
        error, text = client.call("get_document", {"source_id": source})
        assert not error and "omega" not in text and "delta" not in text and "no excerpt" in text.lower()
        assert "smoldocs://doc/manual.pdf" not in [str(r.uri) for r in client.list_resources().resources]


def test_a_file_name_that_is_not_utf8_is_a_readable_resource(small_docs, tmp_path):
    from tests.mcp_support import mcp_client

    name = b"caf\xe9 menu.md"  # Latin-1, as an old archive may hold it
    with open(os.path.join(os.fsencode(small_docs), name), "wb") as fh:
        fh.write(b"# Menu\n\nThe espresso machine heats water to ninety degrees.\n")
    with mcp_client("--docs", str(small_docs), "--index", str(tmp_path / "index")) as client:
        resources = client.list_resources().resources
        (menu,) = [r for r in resources if "menu" in str(r.uri)]
        assert str(menu.uri) == "smoldocs://doc/caf%5Cxe9%20menu.md"  # its id, caf\\xe9 menu.md, encoded
        assert client.read_resource(str(menu.uri)).contents[0].text.endswith("ninety degrees.\n")
        assert client.read_resource("smoldocs://doc/alpha.md").contents[0].text == ALPHA


def test_a_cold_cache_of_2000_files_answers_initialize_at_once_and_searches_bm25_first(tmp_path):
    from tests.mcp_support import excerpts, mcp_client

    root = tmp_path / "notes"
    for i in range(2000):
        folder = root / f"part{i // 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        word = "zanzibar" if i == 1999 else f"item{i}"
        (folder / f"note{i:04d}.md").write_text(f"# Note {i}\n\nThe {word} shelf holds {i} boxes of screws.\n")
    started = time.monotonic()
    # The index folder is new: nothing chunked, nothing embedded. 10 s is a sixth of the TypeScript SDK's default.
    with mcp_client("--docs", str(root), "--index", str(tmp_path / "index"), initialize_timeout=10) as client:
        handshake = time.monotonic() - started
        error, first = client.call("search_docs", {"query": "shelf boxes of screws", "k": 3})
        first_call = time.monotonic() - started
        assert not error and excerpts(first), first
        # Still chunking, or chunked and still embedding (on a quiet machine): either way it says BM25 serves the rest.
        assert first.startswith(("note: the index is still being built:", "note: semantic search covers")), first[:300]
        assert "BM25" in first.split("\n", 1)[0], first[:300]
        # The last file is found once the background indexing reaches it.
        found = None
        while time.monotonic() - started < 300 and found is None:
            error, text = client.call("search_docs", {"query": "zanzibar shelf", "k": 1})
            found = next((s for s in excerpts(text).values() if s.startswith("part19/note1999.md")), None)
            if found is None:
                time.sleep(2)
        assert found, text[:300]
    print(f"handshake {handshake:.1f} s, first search {first_call:.1f} s, last file found {time.monotonic() - started:.1f} s")


def test_what_held_still_holds(small_docs, tmp_path):
    """Traversal refused, 50 concurrent calls answered, a deleted docs folder recovered from: as before this round."""
    import shutil

    import anyio
    from mcp import MCPError

    from tests.mcp_support import excerpts, mcp_client

    (tmp_path / "secret.md").write_text("# Secret\n\nThe vault code is 1234.\n")
    with mcp_client("--docs", str(small_docs), "--index", str(tmp_path / "index")) as client:
        for uri in ("smoldocs://doc/../secret.md", "smoldocs://doc/%2E%2E/secret.md", "smoldocs://doc//etc/passwd"):
            with pytest.raises(MCPError):
                client.read_resource(uri)
        error, text = client.call("get_document", {"source_id": "../secret.md#0"})
        assert "vault" not in text

        results = []

        async def many():
            async def one(i):
                results.append(await client.session.call_tool("search_docs", {"query": f"alpha valve {i}", "k": 1}))

            async with anyio.create_task_group() as tg:
                for i in range(50):
                    tg.start_soon(one, i)

        client.portal.call(many)
        assert len(results) == 50 and all(not r.is_error and "alpha.md#0" in r.content[0].text for r in results)

        saved = small_docs.with_name("saved")
        shutil.copytree(small_docs, saved)
        shutil.rmtree(small_docs)
        error, text = client.call("search_docs", {"query": "alpha valve", "k": 1})
        assert error and "docs folder not found" in text
        shutil.copytree(saved, small_docs)
        error, text = client.call("search_docs", {"query": "alpha valve", "k": 1})
        assert not error and "alpha.md#0" in excerpts(text).values()


def test_a_model_server_that_is_down_is_one_line_per_call_after_a_prompt_handshake(small_docs, tmp_path):
    """The models load behind the handshake, so a server that is not there is said on every call, not a hang."""
    from models.openai_server.local_server import free_port
    from models.locate import default_model_path
    from tests.mcp_support import mcp_client

    url = f"http://alice:hunter2@127.0.0.1:{free_port()}/v1"
    errlog = (tmp_path / "server.err").open("w+")
    with mcp_client("--docs", str(small_docs), "--index", str(tmp_path / "index"), "--base-url", url,
                    "--tokenizer", str(default_model_path()), errlog=errlog, initialize_timeout=10) as client:  # fmt: skip
        error, text = client.call("search_docs", {"query": "alpha valve", "k": 1})
    assert error and "smoldocs mcp could not start: cannot connect to the model server at http://***@127.0.0.1" in text
    assert "\n" not in text and "hunter2" not in text
    errlog.seek(0)
    log = errlog.read()
    assert "smoldocs mcp: error: cannot connect to the model server" in log and "Traceback" not in log
