"""Drive `smoldocs mcp` in a real subprocess with the SDK's own stdio client, from synchronous tests."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

import anyio
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
HEADER = re.compile(r"^\[(\d+)\] (\S.*)\n\(source: (.+?); section: ", re.MULTILINE)


def server_params(*args: str, prelude: str = "") -> StdioServerParameters:
    """`smoldocs mcp ARGS` in a subprocess; `prelude`: Python run in it first (a test's smaller limit)."""
    passed = ("SMOLDOCS_CACHE", "SMOLDOCS_DATA", "OPENBLAS_NUM_THREADS", "MANPATH", "INFOPATH")  # MANPATH: --man's trees
    env = {k: os.environ[k] for k in passed if k in os.environ}
    if prelude:
        run = (f"{prelude}; import runpy, sys; sys.argv = ['agent', 'mcp', *sys.argv[1:]]; "
               "runpy.run_module('agent', run_name='__main__')")
        return StdioServerParameters(command=sys.executable, args=["-c", run, *args], cwd=str(ROOT), env=env)
    return StdioServerParameters(command=sys.executable, args=["-m", "agent", "mcp", *args], cwd=str(ROOT), env=env)


class Client:
    """One MCP session, called from sync code through a portal's event loop."""

    def __init__(self, portal, session: ClientSession) -> None:
        self.portal = portal
        self.session = session

    def call(self, name: str, arguments: dict) -> tuple[bool, str]:
        result = self.portal.call(self.session.call_tool, name, arguments)
        return result.is_error, result.content[0].text

    def __getattr__(self, name):
        method = getattr(self.session, name)
        return lambda *a, **kw: self.portal.call(lambda: method(*a, **kw))


@contextlib.contextmanager
def mcp_client(*args: str, errlog=None, initialize_timeout: float | None = None, prelude: str = ""):
    """A started, initialized client session with a fresh `smoldocs mcp` subprocess (TimeoutError when the
    handshake takes longer than `initialize_timeout` seconds, counted from the process start)."""

    async def initialize(session: ClientSession):
        with anyio.fail_after(initialize_timeout):
            return await session.initialize()

    with start_blocking_portal() as portal:
        params = server_params(*args, prelude=prelude)
        transport = portal.wrap_async_context_manager(stdio_client(params, errlog=errlog or sys.stderr))
        with transport as (read, write):
            with portal.wrap_async_context_manager(ClientSession(read, write)) as session:
                portal.call(initialize, session)
                yield Client(portal, session)


def excerpts(text: str) -> dict[int, str]:
    """`[n]` -> source id of every sourced excerpt in a tool result."""
    return {int(n): source for n, _uri, source in HEADER.findall(text)}
