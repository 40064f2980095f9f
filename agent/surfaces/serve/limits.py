"""What keeps one client of `smoldocs serve` from starving the rest: each limit a named constant, each breach one
clear error (an HTTP status where the HTTP layer refuses, an MCP tool error where the call does).

The query and answer lengths are the tools' own (their schemas say so to every client); the others are the
server's. Calls into a folder's index still run one at a time (agent.surfaces.mcp_server's lock), a store's up to
rag.postgres.search.SEARCHES at once: the timeout bounds how long a client waits in that queue plus its own call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import anyio
from mcp.server.mcpserver.exceptions import ToolError

# Re-exported: the excerpt numbers one session keeps are the MCP server's own limit (over stdio too).
from agent.surfaces.mcp_server import MAX_SHOWN_PER_SESSION, ToolCall
from agent.surfaces.serve.access_log import AccessLog, elapsed_ms

# Re-exported: the query and answer limits are the tools' own (their schemas' maxLength).
from rag.excerpts.search_tool import MAX_QUERY_CHARS
from rag.verification.answer_check import MAX_ANSWER_CHARS

MAX_BODY_BYTES = 256 * 1024  # one request's body (HTTP 413): a 20,000-character answer escaped as JSON fits
MAX_CONCURRENT_PER_TOKEN = 4  # requests in flight for one token (HTTP 429 for the next one)
CALL_TIMEOUT_S = 30.0  # one tool call, waiting for the index included (an MCP tool error)
MAX_SESSIONS = 1000  # MCP sessions open at once, all tokens together (the SDK answers 503 beyond it)
SESSION_IDLE_S = 30 * 60  # an MCP session unused this long is closed, with its ledger
TOKEN_SCOPE_KEY = "smoldocs.token"  # where the gate leaves the request's token name in the ASGI scope

__all__ = ["CALL_TIMEOUT_S", "MAX_ANSWER_CHARS", "MAX_BODY_BYTES", "MAX_CONCURRENT_PER_TOKEN", "MAX_QUERY_CHARS",
           "MAX_SESSIONS", "MAX_SHOWN_PER_SESSION", "SESSION_IDLE_S", "TOKEN_SCOPE_KEY", "CallLimits", "token_name"]


def token_name(call: ToolCall) -> str | None:
    """The name of the token the HTTP request behind `call` carried (set by agent.surfaces.serve.gate)."""
    request = call.ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    return scope.get(TOKEN_SCOPE_KEY)


class CallLimits:
    """The agent.surfaces.mcp_server.CallHook of `smoldocs serve`: a timeout per call and one access-log line per call."""

    def __init__(self, log: AccessLog, timeout_s: float = CALL_TIMEOUT_S) -> None:
        self.log = log
        self.timeout_s = timeout_s

    async def __call__(self, call: ToolCall, run: Callable[[], Awaitable[str]]) -> str:
        start = time.perf_counter()
        outcome = "error"
        try:
            with anyio.fail_after(self.timeout_s):
                text = await run()
            outcome = "ok"
            return text
        except TimeoutError:
            outcome = "timeout"
            raise ToolError(
                f"{call.tool} took longer than {self.timeout_s:g} s (the server's limit per call): try again, "
                "or ask for less (a smaller k, a shorter answer)"
            ) from None
        finally:
            self.log.record("call", who=token_name(call), tool=call.tool, ms=elapsed_ms(start), hits=call.hits,
                            outcome=outcome)
