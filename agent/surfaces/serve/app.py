"""`smoldocs serve`'s web app: agent.surfaces.mcp_server's MCP server on the SDK's streamable HTTP transport, behind the
gate (agent.surfaces.serve.gate), served by uvicorn on a socket bound before anything is printed."""

from __future__ import annotations

import ipaddress
import signal
import socket

import uvicorn
from starlette.types import ASGIApp

from agent.errors import UsageError
from agent.surfaces.mcp_server import FolderIndex, StoredDocs, build_server
from agent.surfaces.serve.access_log import AccessLog
from agent.surfaces.serve.gate import Gate
from agent.surfaces.serve.limits import (
    CALL_TIMEOUT_S,
    MAX_BODY_BYTES,
    MAX_CONCURRENT_PER_TOKEN,
    MAX_SESSIONS,
    SESSION_IDLE_S,
    CallLimits,
)
from agent.surfaces.serve.tokens import TokenFile

PATH = "/mcp"


def is_loopback(host: str) -> bool:
    """True for names and addresses that only this machine can reach."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def make_app(served: FolderIndex | StoredDocs, tokens: TokenFile, log: AccessLog, host: str = "127.0.0.1",
             call_timeout_s: float = CALL_TIMEOUT_S, max_in_flight: int = MAX_CONCURRENT_PER_TOKEN) -> ASGIApp:
    """The gated ASGI app: the same tools as `smoldocs mcp`, at PATH, for holders of a token only."""
    server = build_server(served, around=CallLimits(log, call_timeout_s))
    inner = server.streamable_http_app(
        streamable_http_path=PATH,
        json_response=True,
        max_request_body_size=MAX_BODY_BYTES,  # a body sent without a Content-Length is counted as it is read
        session_idle_timeout=SESSION_IDLE_S,
        max_sessions=MAX_SESSIONS,
        host=host,  # on loopback the SDK also checks Host and Origin (DNS rebinding)
    )
    return Gate(inner, tokens, log, max_in_flight=max_in_flight)


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free one), or one line saying why not."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        sock = socket.create_server((host.strip("[]"), port), family=family, backlog=256)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}: pick another --port or --host") from None
    sock.set_inheritable(True)
    return sock


def url(sock: socket.socket, host: str) -> str:
    """The endpoint clients connect to."""
    port = sock.getsockname()[1]
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    return f"http://{shown}:{port}{PATH}"


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve until SIGINT or SIGTERM, then return (uvicorn lets in-flight requests finish first, and re-raises the
    signal to the handler it found: here, one that stops quietly)."""
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt
