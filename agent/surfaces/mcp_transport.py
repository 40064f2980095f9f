"""The stdio transport of `smoldocs mcp`: the SDK's, on pipes claimed before anything else runs, with every
malformed line answered and a closed pipe quiet.

The claim: the SDK's stdio_server moves the protocol off fd 0 and 1 when the server starts serving. The models
load in a thread before that (the handshake is answered at once), and llama.cpp's quiet loading (llama_cpp's
suppress_stdout_stderr) points fd 1 at /dev/null for a moment and back. When the two met, the SDK's private copy
of the wire was a copy of /dev/null: the reply to `initialize` went nowhere and the client waited for ever (about
one start in four on a busy machine). So the pipes are claimed here, first, before any thread starts.

The SDK's stdio reader passes a line it cannot validate to the server as an exception, which nothing answers: a
client that sent it waits for ever. Here each line is checked first; one that is not a JSON-RPC message gets a
JSON-RPC error (parse error -32700 or invalid request -32600) carrying its id where one can be read, else null.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator

import anyio
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

# CPython refuses int() of a longer digit string (sys.get_int_max_str_digits); such a number is read as None.
MAX_INT_DIGITS = 4300
MAX_REASON = 200  # characters of the parser's complaint quoted in an error reply


def malformed(line: str) -> types.JSONRPCError | None:
    """The error reply to one line from the client, or None when the SDK can take it (blank lines included)."""
    if not line.strip():
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        message, problem = None, exc
    else:
        # A request whose id is null or not an integer reads as a notification to the SDK: nobody would answer it.
        if not isinstance(message, types.JSONRPCNotification) or '"id"' not in line:
            return None
    try:
        data = json.loads(line, parse_int=_int_or_none)
    except (ValueError, RecursionError):
        return _rpc_error(None, types.PARSE_ERROR, "Parse error: the line is not JSON")
    request_id = data.get("id") if isinstance(data, dict) else None
    if message is not None:
        if isinstance(data, dict) and "id" in data:
            return _rpc_error(None, types.INVALID_REQUEST, "Invalid Request: an id must be a string or an integer")
        return None
    readable = isinstance(request_id, str) or type(request_id) is int
    return _rpc_error(request_id if readable else None, types.INVALID_REQUEST, f"Invalid Request: {_complaint(problem)}")


def _int_or_none(digits: str) -> int | None:
    return int(digits) if len(digits.lstrip("-")) <= MAX_INT_DIGITS else None


def _complaint(exc: BaseException | None) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()) if not str(p).startswith("JSONRPC"))
        text = f"{where}: {first.get('msg', '')}" if where else str(first.get("msg", ""))
    else:
        text = str(exc)
    text = " ".join(text.split()) or "not a JSON-RPC 2.0 message"
    return text[:MAX_REASON]


def _rpc_error(request_id, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


@dataclass(frozen=True)
class Wire:
    """The protocol's pipes, on descriptors of their own (above 2, closed in children)."""

    read_fd: int
    write_fd: int


def claim_stdio() -> Wire:
    """Take the protocol's pipes off fd 0 and 1, once, before any thread starts: from here on fd 0 reads /dev/null
    and fd 1 writes to stderr, so nothing a library or a child prints or reads can touch the protocol."""
    sys.stdout.flush()
    read_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    write_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return Wire(read_fd, write_fd)


@asynccontextmanager
async def answering_stdio_server(wire: Wire) -> AsyncIterator[tuple]:
    """The SDK's stdio_server on `wire`, reading through `malformed`: (read stream, write stream) as the SDK gives
    them."""
    writer: list = []
    ready = anyio.Event()

    async def lines():
        with os.fdopen(wire.read_fd, "r", encoding="utf-8", errors="replace", newline="\n") as raw:
            stdin = anyio.wrap_file(raw)
            async for line in stdin:
                reply = malformed(line)
                if reply is None:
                    yield line
                    continue
                await ready.wait()
                await writer[0].send(SessionMessage(reply))

    out = io.TextIOWrapper(os.fdopen(wire.write_fd, "wb", closefd=False), encoding="utf-8", newline="\n")
    async with stdio_server(stdin=lines(), stdout=anyio.wrap_file(out)) as (read_stream, write_stream):
        writer.append(write_stream)
        ready.set()
        yield read_stream, write_stream


def serve_stdio(server: MCPServer, wire: Wire) -> None:
    """Serve `server` over `wire` until the client closes it (MCPServer.run("stdio"), on pipes claimed earlier)."""

    async def serve() -> None:
        lowlevel = server._lowlevel_server  # the SDK's run_stdio_async does this, on a transport of its own
        async with answering_stdio_server(wire) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    anyio.run(serve)


def client_gone(exc: BaseException) -> bool:
    """True when `exc` (an exception group too) only says the client closed its end of the pipes."""
    if isinstance(exc, BaseExceptionGroup):
        return all(client_gone(e) for e in exc.exceptions)
    return isinstance(exc, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError,
                            anyio.ClosedResourceError))
