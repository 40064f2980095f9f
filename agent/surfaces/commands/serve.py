"""`smoldocs serve`: the tools of `smoldocs mcp` for a team, over MCP's streamable HTTP, for bearer tokens only."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from agent.surfaces.commands import common
from agent.surfaces.commands.common import add_index_options
from agent.surfaces.commands.docs_sources import add_collection_option
from agent.errors import UsageError
from agent.settings import Settings

HELP = (
    "serve the docs to a team's agents over MCP (streamable HTTP at http://HOST:PORT/mcp), for bearer tokens only; "
    "--new-token NAME makes a token"
)
REMOTE_NOTE = (
    "smoldocs serve: listening beyond this machine over plain HTTP: put it behind a reverse proxy that terminates "
    "TLS (nginx, Caddy), or tokens and documents cross the network readable"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)
    add_collection_option(p)
    p.add_argument("--tokens", metavar="FILE", type=Path, required=True,
                   help="the file of token hashes (NAME:SHA256 lines, mode 0600 when created)")
    p.add_argument("--new-token", metavar="NAME", default=None,
                   help="make a token called NAME, print it once and store only its hash in --tokens; then exit")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=_port, default=8765, help="port to listen on (default 8765; 0: any free port)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a --host other machines can reach (TLS is then a reverse proxy's job)")
    p.add_argument("--access-log", metavar="FILE", type=Path, default=None,
                   help="append the JSON-lines access log to FILE (default: stderr)")
    limits = p.add_argument_group("limits (defaults in agent/surfaces/serve/limits.py)")
    limits.add_argument("--call-timeout", metavar="S", type=_positive_float, default=None,
                        help="seconds one tool call may take (default 30)")
    limits.add_argument("--max-in-flight", metavar="N", type=common.positive_int, default=None,
                        help="requests one token may have in flight (default 4)")


@dataclass(frozen=True)
class Options:
    tokens: Path
    new_token: str | None = None
    host: str = "127.0.0.1"
    port: int = 8765
    allow_remote: bool = False
    access_log: Path | None = None
    call_timeout: float | None = None
    max_in_flight: int | None = None


def run(settings: Settings, options: Options) -> int:
    from agent.surfaces.serve.tokens import new_token

    if options.new_token is not None:
        token = new_token(options.tokens, options.new_token)
        print(f"smoldocs serve: new token {options.new_token!r} (shown once; {options.tokens} keeps only its hash): {token}")
        return 0
    return _serve(settings, options)


def _serve(settings: Settings, options: Options) -> int:
    from agent.surfaces.commands.mcp import open_served
    from agent.opening import store_url
    from agent.surfaces.serve import app as web
    from agent.surfaces.serve.access_log import AccessLog
    from agent.surfaces.serve.limits import CALL_TIMEOUT_S, MAX_CONCURRENT_PER_TOKEN
    from agent.surfaces.serve.tokens import TokenFile
    from rag.ingest.corpus import check_docs_dir

    tokens = TokenFile(options.tokens)
    if not tokens.hashes():
        raise UsageError(f"{options.tokens} holds no tokens: make one with `smoldocs serve --new-token NAME --tokens {options.tokens}`")
    if not web.is_loopback(options.host) and not options.allow_remote:
        raise UsageError(f"--host {options.host} can be reached from other machines: add --allow-remote if that is meant "
                         "(and put a TLS-terminating reverse proxy in front)")  # fmt: skip
    store = store_url(settings)
    several = settings.sources is not None and settings.sources.joined
    if settings.docs is not None and store is None and not several:
        check_docs_dir(settings.docs)  # a mistyped folder is one line, before anything is served
    sock = web.listen(options.host, options.port)
    log = AccessLog(_log_file(options.access_log))
    served = open_served(settings, store, "serve", f"at {web.url(sock, options.host)}")
    if not web.is_loopback(options.host):
        print(REMOTE_NOTE, file=sys.stderr, flush=True)
    app = web.make_app(served, tokens, log, host=options.host,
                       call_timeout_s=options.call_timeout or CALL_TIMEOUT_S,
                       max_in_flight=options.max_in_flight or MAX_CONCURRENT_PER_TOKEN)  # fmt: skip
    web.serve(app, sock)
    busy = not served.lock.acquire(blocking=False)
    print("smoldocs serve: stopped", file=sys.stderr, flush=True)
    if busy or not served.ready:
        # A call that timed out, or the models still loading, is inside llama.cpp: exit rather than free the
        # models under it (as `smoldocs mcp` does).
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    served.close()
    served.lock.release()
    return 0


def _log_file(path: Path | None):
    if path is None:
        return sys.stderr
    try:
        return open(path, "a", encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot open the access log {path}: {exc.strerror}") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number from 0 to 65535 (0: any free port), got {text}")
    return value
