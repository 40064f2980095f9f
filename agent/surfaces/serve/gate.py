"""The HTTP gate in front of the SDK's streamable HTTP app: bearer token, body size, requests in flight per token,
and MCP sessions bound to the token that opened them.

Every refusal is a JSON-RPC error in a JSON body (the SDK's client shows its message) with the HTTP status that
says which layer refused, and one access-log line. A missing and a wrong token get the same 401: nothing in it
says which tokens, names or sessions exist.
"""

from __future__ import annotations

import json
from collections import Counter

from mcp_types import INVALID_REQUEST
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.surfaces.serve.access_log import AccessLog
from agent.surfaces.serve.limits import MAX_BODY_BYTES, MAX_CONCURRENT_PER_TOKEN, TOKEN_SCOPE_KEY
from agent.surfaces.serve.tokens import TokenFile

UNAUTHORIZED = -32001  # JSON-RPC's server-defined range; the SDK's client shows the message
TOO_MANY = -32002
SESSION_HEADER = "mcp-session-id"


class Gate:
    """ASGI middleware: only requests with a known token reach `app`, and no token holds more than its share."""

    def __init__(self, app: ASGIApp, tokens: TokenFile, log: AccessLog,
                 max_body_bytes: int = MAX_BODY_BYTES, max_in_flight: int = MAX_CONCURRENT_PER_TOKEN) -> None:
        self.app = app
        self.tokens = tokens
        self.log = log
        self.max_body_bytes = max_body_bytes
        self.max_in_flight = max_in_flight
        self.in_flight: Counter[str] = Counter()
        self.session_owner: dict[str, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan: the SDK's session manager starts and stops with the app
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        client = _client(scope)
        name = self.tokens.name_of(_bearer(headers.get("authorization")))
        if name is None:
            self.log.record("refused", status=401, client=client)
            await _refuse(send, 401, UNAUTHORIZED, "unauthorized: send a valid token as `Authorization: Bearer <token>`",
                          {"www-authenticate": 'Bearer realm="smoldocs"'})
            return
        session = headers.get(SESSION_HEADER)
        if session is not None and self.session_owner.get(session, name) != name:
            # Another token's session reads as an unknown one: its ledger is not this token's to see.
            self.log.record("refused", who=name, status=404, client=client)
            await _refuse(send, 404, INVALID_REQUEST, "Session not found")
            return
        if _declared_length(headers) > self.max_body_bytes:
            self.log.record("refused", who=name, status=413, client=client)
            await _refuse(send, 413, INVALID_REQUEST,
                          f"request body over {self.max_body_bytes} bytes: send a shorter answer or query")
            return
        counted = scope["method"] == "POST"  # a GET is the session's event stream, open for as long as the session
        if counted and self.in_flight[name] >= self.max_in_flight:
            self.log.record("refused", who=name, status=429, client=client)
            await _refuse(send, 429, TOO_MANY,
                          f"too many requests at once for this token (at most {self.max_in_flight}): wait for an "
                          "answer before sending more", {"retry-after": "1"})
            return
        scope[TOKEN_SCOPE_KEY] = name
        if counted:
            self.in_flight[name] += 1
        try:
            await self.app(scope, receive, self._binding(send, name, session))
        finally:
            if counted:
                self.in_flight[name] -= 1
                if not self.in_flight[name]:
                    del self.in_flight[name]
            if scope["method"] == "DELETE" and session is not None:
                self.session_owner.pop(session, None)  # the client closed its session

    def _binding(self, send: Send, name: str, session: str | None) -> Send:
        """`send`, noting which token a new session's id was handed to."""
        if session is not None:
            return send

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                new = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if new is not None:
                    self.session_owner.setdefault(new, name)
            await send(message)

        return noting


def _bearer(value: str | None) -> str | None:
    if value is None:
        return None
    scheme, _, token = value.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def _declared_length(headers: Headers) -> int:
    try:
        return int(headers.get("content-length", "0"))
    except ValueError:
        return 0  # the SDK's own limit reads the body and refuses it then


def _client(scope: Scope) -> str | None:
    peer = scope.get("client")
    return f"{peer[0]}:{peer[1]}" if peer else None


async def _refuse(send: Send, status: int, code: int, message: str, extra: dict[str, str] | None = None) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(k.encode(), v.encode()) for k, v in (extra or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
