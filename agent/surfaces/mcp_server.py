"""`smoldocs mcp`: the docs index and the citation checker for other agents, as an MCP server over stdio.

Built on the official `mcp` SDK's MCPServer (FastMCP before mcp 2). One ledger per MCP session, so `[n]` names
one chunk for the whole session; the index is checked for changed files before every call.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import threading
import time
from urllib.parse import quote
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Protocol, cast

import anyio

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR
from mcp_types import Resource as MCPResource

from agent import __version__
from agent.chats.codec import verification_to_dict
from agent.opening import Models, docs_root, open_docs
from agent.settings import Settings
from models.protocols import Embedder, Tokenizer
from rag.verification.answer_check import MAX_ANSWER_CHARS, check_citations, supported_share
from rag.citations import Citation, parse_citations
from rag.ingest.corpus import check_docs_dir, iter_candidate_files
from rag.ingest.decoding import decode_text
from rag.ingest.formats import SUFFIXES, Layout, is_file_format, parse_text
from rag.ingest.formats.manuals import is_manual
from rag.ingest.man_pages import ManSource, Skip, man_stamp, read_manual
from rag.ingest.formats.pdf import pdf_layout
from rag.indexing.fill import ONE_SHOT_BUDGET, coverage_note
from rag.indexing.collections import SEPARATOR, Collections, Within
from rag.indexing.live import LiveIndex
from rag.excerpts.document_tool import GET_DOCUMENT_DESCRIPTION, GET_DOCUMENT_NAME, GET_DOCUMENT_SCHEMA, GetDocumentTool
from rag.excerpts.document_tool import document_problem
from rag.errors import RagError, StoreUnavailable, Unreadable
from rag.indexing.hybrid import HybridIndex
from rag.excerpts.packing import Ledger, sourced_block
from rag.excerpts.search_tool import (
    DEFAULT_MAX_TOKENS,
    SEARCH_DOCS_DESCRIPTION,
    SEARCH_DOCS_NAME,
    SEARCH_DOCS_SCHEMA,
    SearchDocsTool,
)
from rag.excerpts.search_tool import search_problem

RESOURCE_PREFIX = "smoldocs://doc/"
READ_DOCUMENT_NAME = "read_document"  # what a hook sees a resource read as
# A call waits this long for a re-index of changed files, then answers from the index it has, saying so: longer
# than any one slice of re-indexing (rag.indexing.live.REFRESH_SLICE, 5 s) plus the folder scan of 2,000 files.
REFRESH_WAIT = 60.0
# Excerpt numbers one session keeps (about 0.5 kB each: its citation and digest); at 5 a search, 1,000 searches. A
# session that holds this many gets no more excerpts and is told to start a new one (SessionState.check_room), so
# what sessions hold is bounded: at most limits.MAX_SESSIONS x this x 0.5 kB.
MAX_SHOWN_PER_SESSION = 5000
CHECK_CITATIONS_NAME = "check_citations"
CHECK_CITATIONS_DESCRIPTION = (
    "Check an answer's [n] citations against the excerpts search_docs and get_document showed in this session. "
    "Returns a verdict per cited number (supported, weak, unsupported, made_up, unresolved) and per factual "
    "claim (the same, or uncited), as JSON."
)
CHECK_CITATIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {
            "type": "string",
            "maxLength": MAX_ANSWER_CHARS,
            "description": "The answer text, citing excerpts as [n].",
        },
    },
    "required": ["answer"],
    "additionalProperties": False,
}
INSTRUCTIONS = (
    "smoldocs searches a local docs folder. search_docs returns numbered excerpts `[n] <uri>` with a source id; "
    "get_document(source_id) shows one excerpt whole; cite excerpts as [n] (a number keeps its meaning for the "
    "whole session), then check_citations(answer) says which citations hold. Each document is also a resource "
    f"at {RESOURCE_PREFIX}<uri>."
)


def _stamp(source: Path | ManSource) -> tuple[tuple, dict[str, Path]]:
    """What a docs folder looks like, cheaply: every indexable file's id, size and modification time (PDFs
    included), and where each id's file is (an id shows undecodable name bytes as \\xNN: no path to rebuild).
    Man pages (`--man`): their section folders' times (rag.ingest.man_pages.man_stamp), each page found by its id."""
    if isinstance(source, ManSource):
        return man_stamp(cast(ManSource, check_docs_dir(source))), {}
    found, paths = [], {}
    for doc_id, path in iter_candidate_files(check_docs_dir(source), {}):
        if path.suffix.lower() in SUFFIXES:
            try:
                info = path.stat()
            except OSError:
                continue
            found.append((doc_id, info.st_size, info.st_mtime_ns))
            paths[doc_id] = path
    return tuple(found), paths


def _stamps(collections: Collections) -> tuple[tuple, dict[str, Path]]:
    """_stamp of every collection's source, ids as the joined index holds them (`notes:todo.md`); a source that is
    missing counts as such, so its coming back is a change."""
    found, paths = [], {}
    for c in collections:
        try:
            stamp, where = _stamp(c.source)
        except RagError:
            found.append((c.name, "missing"))
            continue
        prefix = c.name + SEPARATOR
        found.extend((prefix + str(entry[0]), *entry[1:]) for entry in stamp)
        paths.update({prefix + doc_id: path for doc_id, path in where.items()})
    return tuple(found), paths


def manual_text(doc_id: str, path: Path) -> str:
    """A man page or info manual as plain text: ungzipped, `.so` followed within its tree, roff read."""
    try:
        return parse_text(doc_id, read_manual(doc_id, path)).text
    except Skip as why:
        raise Unreadable(str(why)) from None


class NotServing(Exception):
    """The models or the index could not be opened behind the handshake: every call says why, in one line."""


class FolderIndex:
    """The index of one docs folder, served while it is built, and refreshed whenever a stat of its files shows a
    change.

    The models load and the index opens in the background (rag.indexing.live, as the TUI does): the MCP handshake
    is answered at once, a first call waits only for the first searchable slice, BM25 ranks what has no embedding
    yet, and every result says how far indexing has got.
    """

    def __init__(self, settings: Settings, models: Models, on_failure: Callable[[str], None] | None = None,
                 on_notice: Callable[[str], None] | None = None) -> None:
        # Several collections (rag.indexing.collections): each folder is stat'ed, and the index joins them.
        sources = settings.sources if not settings.store else None
        self.collections = sources if sources is not None and sources.joined else None
        self.root: Path | Collections = self.collections or (
            check_docs_dir(sources.items[0].source) if sources is not None else docs_root(settings))
        self.only = settings.collections  # --collection: every call searches and lists only these
        self._on_notice = on_notice  # a collection that cannot be opened, a file that cannot be saved: one line
        # Calls run one at a time under this lock (a refresh must not race a call reading the folder).
        self.lock = threading.RLock()
        self.stamp, self.paths = self._stamp()
        self.refreshes = 0
        self._settled = False
        self.tokenizer: Tokenizer | None = None
        self.embedder: Embedder | None = None
        self.live: LiveIndex | None = None
        self._failure: str | None = None
        self._on_failure = on_failure or (lambda message: None)
        self._ready = threading.Event()
        self._loader = threading.Thread(target=self._open, args=(settings, models), name="smoldocs-mcp-open",
                                        daemon=True)
        self._loader.start()

    def _open(self, settings: Settings, models: Models) -> None:
        try:
            self.tokenizer, self.embedder = models.tokenizer, models.embedder
            notices = self._on_notice
            progress = (lambda event: notices(event.message) if event.stage == "notice" else None) if notices else None
            live = open_docs(settings, models, live=True, watch=False, progress=progress)
            assert isinstance(live, LiveIndex), "a folder's docs open live"
            if self.only:
                Within(live, self.only)  # an unknown name: the one line every call then gives
            self.live = live
        except Exception as exc:  # a bad model, a server that does not answer, an unreadable folder: one line
            self._failure = " ".join(str(exc).split()) or type(exc).__name__
            self._on_failure(self._failure)
        finally:
            self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def wait(self, timeout: float | None = None) -> LiveIndex:
        """The live index once it is open; NotServing with the reason when it could not be."""
        self._ready.wait(timeout)
        if self.live is None:
            raise NotServing(f"smoldocs mcp could not start: {self._failure or 'the index is still opening'}")
        return self.live

    @property
    def counter(self) -> Tokenizer:
        """The tokenizer excerpts are counted with, once the models are loaded (NotServing says why they are not)."""
        self.wait()
        if self.tokenizer is None:  # set before the index opens: never None once wait() returned
            raise NotServing("smoldocs mcp could not start: the tokenizer did not load")
        return self.tokenizer

    def current(self) -> tuple[HybridIndex, str | None]:
        """The index as the files are now (inside --collection's collections), and a one-line note when it had to
        be refreshed or is still filling."""
        index, note = self._current()
        return (cast(HybridIndex, Within(index, self.only)) if self.only else index), note

    def _current(self) -> tuple[HybridIndex, str | None]:
        live = self.wait()
        with self.lock:
            stamp, paths = self._stamp()  # DocsNotFound when the folder went away: an error, never the old index
            if stamp == self.stamp:
                if not self._settled:
                    self._settle(live)
                return live.snapshot(), self._progress_note(live)
            if not live.refresh(timeout=REFRESH_WAIT):
                return live.snapshot(), "note: the docs changed; the index is still being refreshed: results may be older"
            self._settle(live)
            self.stamp, self.paths = stamp, paths
            self.refreshes += 1
            index = live.snapshot()
            done = index.update.summary() if index.update else "up to date"
            note = f"note: the docs changed, so the index was refreshed ({done})"
            more = self._progress_note(live)
            return index, f"{note}\n{more}" if more else note

    def _stamp(self) -> tuple[tuple, dict[str, Path]]:
        if self.collections is not None:
            return _stamps(self.collections)
        return _stamp(cast(Path, self.root))

    def _settle(self, live: LiveIndex) -> None:
        """Wait, at most as long as a one-shot search embeds, for the new chunks' embeddings, unless files are still
        to be chunked (a big folder): a small folder is then searched whole, as `smoldocs search` would."""
        self._settled = True
        deadline = time.monotonic() + ONE_SHOT_BUDGET
        while live.embedder is not None and time.monotonic() < deadline:
            index = live.snapshot()
            if (index.update and index.update.pending) or index.dense_coverage >= 1:
                return
            time.sleep(0.05)

    def _progress_note(self, live: LiveIndex) -> str | None:
        index = live.snapshot()
        pending = len(index.update.pending) if index.update else 0
        if pending:
            return (f"note: the index is still being built: {len(index.doc_ids)} documents searchable, {pending} "
                    "still to read; these results rank by BM25 where semantic search has not caught up")
        if live.embedder is not None and live.busy:
            return f"note: {coverage_note(index.dense_coverage)}"
        return None

    def document(self, doc_id: str) -> str | None:
        """The current text of one indexed document (a PDF's extracted text, page by page), or None."""
        index, _ = self.current()
        own, path = self._located(doc_id)
        if doc_id not in index.doc_ids or path is None:
            return None
        if is_file_format(own):
            return paged_text(pdf_layout(path))
        if is_manual(own):
            return manual_text(own, path)
        return decode_text(path.read_bytes())

    def _located(self, doc_id: str) -> tuple[str, Path | None]:
        """A document's id within its own source, and its file: man pages are found by id, folders' from the stamp."""
        own, source = doc_id, cast("Path | ManSource | None", self.root)
        if self.collections is not None:
            name, _, own = doc_id.partition(SEPARATOR)
            source = next((c.source for c in self.collections if c.name == name), None)
        if isinstance(source, ManSource):
            return own, source.root / own
        return own, self.paths.get(doc_id)

    def close(self) -> None:
        """Stop the background indexing, saving the embeddings made so far."""
        if self.live is not None:
            self.live.close()


def paged_text(layout: Layout) -> str:
    """A paged document's text with a `[page n]` line where each page begins."""
    out: list[str] = []
    page = None
    for line, on_page in zip(layout.text.split("\n"), layout.line_pages):
        if on_page != page:
            if out:
                out.append("")
            out.append(f"[page {on_page}]")
            page = on_page
        out.append(line)
    return "\n".join(out) + "\n"


class SharedCalls:
    """A lock that calls hold together: `with` enters at once beside other calls; acquire() and release() are the
    exclusive hold a stopping server takes (acquire(blocking=False) is False while a call is inside)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._inside = 0
        self._held = False

    def __enter__(self) -> None:
        with self._cond:
            while self._held:
                self._cond.wait()
            self._inside += 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._inside -= 1
            self._cond.notify_all()

    def acquire(self, blocking: bool = True) -> bool:
        with self._cond:
            while blocking and (self._inside or self._held):
                self._cond.wait()
            if self._inside or self._held:
                return False
            self._held = True
            return True

    def release(self) -> None:
        with self._cond:
            self._held = False
            self._cond.notify_all()


class StoredDocs:
    """A shared PostgreSQL store (rag.postgres.search.PgIndex) in FolderIndex's place: one ingester keeps it fresh.

    A document's text is its chunks joined in order: the server reads no files.
    """

    def __init__(self, index, tokenizer: Tokenizer, embedder: Embedder | None, only: tuple[str, ...] = ()) -> None:
        self.index = index
        self.root = index.index_dir  # what the server says it serves: the store, password redacted
        self.tokenizer = tokenizer
        self.embedder = embedder
        # Calls run at once: each search reads one snapshot of the store on connections of its own (PgIndex runs
        # up to SEARCHES together); what a session keeps is under its own lock (SessionState.lock).
        self.lock = SharedCalls()
        self.only = only  # --collection: every call searches and lists only these
        if only:
            Within(index, only)  # an unknown name is one line before anything is served

    def current(self):
        return (Within(self.index, self.only) if self.only else self.index), None

    @property
    def counter(self) -> Tokenizer:
        return self.tokenizer

    def document(self, doc_id: str) -> str | None:
        if self.only and doc_id not in (self.current()[0].doc_ids or ()):
            return None
        chunks = self.index.document_chunks(doc_id)
        return "\n\n".join(c.text for c in chunks) if chunks else None

    @property
    def ready(self) -> bool:
        return True  # opened before serving: nothing loads behind the handshake

    def close(self) -> None:
        self.index.close()


@dataclass
class SessionState:
    """One MCP session: its ledger, and a digest of the text each number showed (to notice a chunk edited since); a
    call holds `lock` while it reads or numbers them, so one session's calls never interleave."""

    ledger: Ledger = field(default_factory=Ledger)
    # 16 bytes a number, not the chunk's text (622 characters on average in a million chunks of real docs).
    shown_digest: dict[int, bytes] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    max_shown: int = field(default_factory=lambda: MAX_SHOWN_PER_SESSION)  # read when the session starts

    def check_room(self) -> None:
        """A ToolError once the session holds `max_shown` numbers: what a session remembers is bounded (about 0.5 kB
        a number), so a client searching in one session forever cannot grow the server without end."""
        if len(self.ledger) >= self.max_shown:
            raise ToolError(
                f"this session has been shown {len(self.ledger)} excerpts, the most one session keeps "
                f"({self.max_shown}): start a new MCP session (its excerpt numbers start again at 1); "
                "check_citations still checks this session's answers")

    def remember(self, citations: list[Citation], index: HybridIndex) -> None:
        for c in citations:
            chunk = index.chunk(c.chunk_id)
            if chunk is not None:
                self.shown_digest[c.n] = _digest(chunk.text)

    def shown(self) -> dict[int, Citation]:
        return {c.n: c for c in self.ledger.citations()}

    def changed(self, index: HybridIndex, numbers: Iterable[int] | None = None) -> set[int]:
        """Of `numbers` (None: every number shown), those whose chunk is still indexed but reads differently from
        what this session was shown; an answer's check looks up only the numbers it cites."""
        shown = self.shown()
        out = set()
        for n in shown if numbers is None else numbers:
            c = shown.get(n)
            if c is None or n not in self.shown_digest:
                continue
            chunk = index.chunk(c.chunk_id)
            if chunk is not None and _digest(chunk.text) != self.shown_digest[n]:
                out.add(n)
        return out


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class Sessions:
    """State per MCP session, forgotten with the session."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_session: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def get(self, ctx: Context) -> SessionState:
        # mcp 2 builds a ServerSession per request; the connection behind it lives as long as the MCP session.
        # The SDK has no public accessor for it yet; over stdio there is one connection per process anyway.
        key = getattr(ctx.session, "_connection", None) or self
        with self._lock:
            state = self._by_session.get(key)
            if state is None:
                state = self._by_session[key] = SessionState()
            return state


@dataclass
class ToolCall:
    """One tool call as a hook around it sees it (agent.surfaces.serve: the limits and the access log over HTTP)."""

    tool: str
    arguments: dict[str, Any]
    ctx: Context
    hits: int | None = None  # set by the call: the excerpts it showed, or the citations it checked


class CallHook(Protocol):
    """Runs around every tool call: may time it, limit it or log it; returns what `run` returns."""

    async def __call__(self, call: ToolCall, run: Callable[[], Awaitable[str]]) -> str: ...


class CheckedTool(Tool):
    """A tool whose raw arguments are checked against its JSON schema by our validator: one clear line each."""

    problem: Callable[[Any], str | None] | None = None

    async def run(self, arguments: dict[str, Any], context: Context[Any, Any], convert_result: bool = False) -> Any:
        if self.problem is not None and (why := self.problem(arguments)) is not None:
            raise ToolError(f"Error executing tool {self.name}: {why}")
        return await super().run(arguments, context, convert_result=convert_result)


def _tool(fn: Callable, name: str, description: str, schema: dict, problem: Callable[[Any], str | None]) -> Tool:
    base = CheckedTool.from_function(fn, name=name, description=description, structured_output=False)
    # Advertise the exact schema the agent's own tools use, not the one derived from the Python signature.
    return base.model_copy(update={"parameters": schema, "problem": problem})


def _answer_problem(arguments: Any) -> str | None:
    if not isinstance(arguments, dict) or set(arguments) - {"answer"}:
        return 'invalid check_citations arguments: expected {"answer": "<text citing excerpts as [n]>"}'
    answer = arguments.get("answer")
    if not isinstance(answer, str):
        return f"invalid check_citations arguments: answer must be a string, not {type(answer).__name__}"
    if len(answer) > MAX_ANSWER_CHARS:
        return f"answer is {len(answer)} characters long, more than {MAX_ANSWER_CHARS}: check it in parts"
    return None


class DocsServer(MCPServer):
    """MCPServer whose resource list follows the docs folder as it is now."""

    def __init__(self, live: FolderIndex | StoredDocs, **kwargs) -> None:
        self.live = live
        super().__init__(**kwargs)


    async def list_resources(self) -> list[MCPResource]:
        # A refresh embeds changed files: off the event loop, like the tools.
        return await anyio.to_thread.run_sync(self._documents)

    def _documents(self) -> list[MCPResource]:
        try:
            index, _ = self.live.current()
            return [MCPResource(uri=resource_uri(d), name=d, mime_type="text/markdown") for d in index.doc_ids]
        except StoreUnavailable as exc:
            raise MCPError(code=INTERNAL_ERROR, message=store_down(exc)) from None
        except RagError as exc:
            raise MCPError(code=INTERNAL_ERROR, message=f"the docs cannot be read: {exc}") from None
        except NotServing as exc:
            raise MCPError(code=INTERNAL_ERROR, message=str(exc)) from None


def resource_uri(doc_id: str) -> str:
    """The resource of one document: its id percent-encoded (the SDK decodes it back before read_document)."""
    return RESOURCE_PREFIX + quote(doc_id, safe="/")


def store_down(exc: StoreUnavailable) -> str:
    """The one line a client gets, and the server's log shows, when the PostgreSQL store cannot be reached."""
    message = f"the document store is unreachable: {exc}"
    print(f"smoldocs mcp: error: {message}", file=sys.stderr, flush=True)
    return message


def _store_errors_as_tool_errors(fn: Callable) -> Callable:
    """A store outage is anticipated: a ToolError saying so (a crash would show the client no reason and log a
    traceback of 200 lines)."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except StoreUnavailable as exc:
            raise ToolError(store_down(exc)) from None

    return call


def build_server(
    live: FolderIndex | StoredDocs,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    embedder_for_checks: Embedder | None = None,
    around: CallHook | None = None,
) -> MCPServer:
    """The MCP server over `live`: search_docs, get_document, check_citations, and one resource per document;
    `around` runs around every tool call (`smoldocs serve`'s limits and access log)."""
    sessions = Sessions()

    def _fresh() -> tuple[HybridIndex, str | None]:
        try:
            return live.current()
        except RagError as exc:
            raise ToolError(f"the docs cannot be read: {exc}") from None
        except NotServing as exc:
            raise ToolError(str(exc)) from None

    def _with_note(text: str, note: str | None) -> str:
        return f"{note}\n\n{text}" if note else text

    @_store_errors_as_tool_errors
    def _search(state: SessionState, args: dict[str, Any], call: ToolCall) -> str:
        with live.lock, state.lock:
            state.check_room()
            index, note = _fresh()
            result = SearchDocsTool(index, state.ledger, live.counter, max_tokens, render=sourced_block)(args)
            if result.error is not None:
                raise ToolError(result.error)
            state.remember(result.citations, index)
            call.hits = len(result.citations)
        return _with_note(result.text, note)

    @_store_errors_as_tool_errors
    def _document(state: SessionState, source_id: str, call: ToolCall) -> str:
        with live.lock, state.lock:
            state.check_room()
            index, note = _fresh()
            result = GetDocumentTool(index, state.ledger, live.counter, max_tokens)({"source_id": source_id})
            if result.error is not None:
                raise ToolError(result.error)
            state.remember(result.citations, index)
            call.hits = len(result.citations)
        return _with_note(result.text, note)  # source_not_found is a result, not an error

    @_store_errors_as_tool_errors
    def _check(state: SessionState, answer: str, call: ToolCall) -> str:
        with live.lock, state.lock:
            index, note = _fresh()
            judge = embedder_for_checks if embedder_for_checks is not None else live.embedder
            report = check_citations(answer, state.shown(), index.chunk, judge,
                                     changed=state.changed(index, parse_citations(answer)))
        out = verification_to_dict(report) | {"supported_share": supported_share(report)}
        call.hits = len(out["citations"])
        return _with_note(json.dumps(out, ensure_ascii=False), note)

    # The work runs in a thread the call can abandon: a client that cancels or goes away gets no answer, and the
    # server does not wait for the embedder to finish before it can stop.
    async def _call(work: Callable[..., str], call: ToolCall, value: Any) -> str:
        async def run() -> str:
            return await anyio.to_thread.run_sync(work, sessions.get(call.ctx), value, call, abandon_on_cancel=True)

        return await (around(call, run) if around is not None else run())

    async def search_docs(query: str, ctx: Context, k: int = 5, doc_ids: list[str] | None = None,
                          collections: list[str] | None = None) -> str:
        args: dict[str, Any] = {"query": query, "k": k, **({"doc_ids": doc_ids} if doc_ids is not None else {}),
                                **({"collections": collections} if collections is not None else {})}
        return await _call(_search, ToolCall(SEARCH_DOCS_NAME, args, ctx), args)

    async def get_document(source_id: str, ctx: Context) -> str:
        return await _call(_document, ToolCall(GET_DOCUMENT_NAME, {"source_id": source_id}, ctx), source_id)

    async def check_citations_tool(answer: str, ctx: Context) -> str:
        return await _call(_check, ToolCall(CHECK_CITATIONS_NAME, {"answer": answer}, ctx), answer)

    tools = [
        _tool(search_docs, SEARCH_DOCS_NAME, SEARCH_DOCS_DESCRIPTION, SEARCH_DOCS_SCHEMA, search_problem),
        _tool(get_document, GET_DOCUMENT_NAME, GET_DOCUMENT_DESCRIPTION, GET_DOCUMENT_SCHEMA, document_problem),
        _tool(check_citations_tool, CHECK_CITATIONS_NAME, CHECK_CITATIONS_DESCRIPTION, CHECK_CITATIONS_SCHEMA,
              _answer_problem),
    ]
    server = DocsServer(live, name="smoldocs", version=__version__, instructions=INSTRUCTIONS, tools=tools,
                        log_level="WARNING")

    def _read(doc_id: str, call: ToolCall) -> str:
        with live.lock:
            try:
                text = live.document(doc_id)
            except NotServing as exc:
                raise ResourceError(str(exc)) from None
            except StoreUnavailable as exc:
                raise ResourceError(store_down(exc)) from None
            except (RagError, OSError) as exc:
                raise ResourceError(f"cannot read {doc_id}: {exc}") from None
        if text is None:
            raise ResourceNotFoundError(f"no document {doc_id!r} in the docs folder: list the resources to see them")
        call.hits = 1
        return text

    @server.resource(RESOURCE_PREFIX + "{+doc_id}", name="document", description="One document of the docs folder")
    async def read_document(doc_id: str, ctx: Context) -> str:
        # Through `around` like a tool call: over HTTP a document read is timed out and logged as one.
        call = ToolCall(READ_DOCUMENT_NAME, {"doc_id": doc_id}, ctx)

        async def run() -> str:
            return await anyio.to_thread.run_sync(_read, doc_id, call, abandon_on_cancel=True)

        return await (around(call, run) if around is not None else run())

    return server
