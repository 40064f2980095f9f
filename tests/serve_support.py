"""Run `smoldocs serve` in a real subprocess on 127.0.0.1 and talk to it with the SDK's streamable HTTP client."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

from anyio.from_thread import start_blocking_portal
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.mcp_support import ROOT, Client

URL = re.compile(r"at (http://\S+/mcp)")
ENV_KEYS = ("SMOLDOCS_CACHE", "SMOLDOCS_DATA", "SMOLDOCS_CONFIG", "OPENBLAS_NUM_THREADS", "PYTHONPATH", "PATH")


def make_token(tokens: Path, name: str) -> str:
    """A new token from `smoldocs serve --new-token` run as a script would: the last word of its line."""
    out = subprocess.run([sys.executable, "-m", "agent", "serve", "--new-token", name, "--tokens", str(tokens)],
                         cwd=ROOT, env=_env(), capture_output=True, text=True, check=True)  # fmt: skip
    return out.stdout.split()[-1]


def _env() -> dict[str, str]:
    return {k: os.environ[k] for k in ENV_KEYS if k in os.environ}


class Served:
    """A running `smoldocs serve`: its URL, and its stderr lines as they come."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self.url: str | None = None
        self._seen = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        for line in self.proc.stderr:
            with self._seen:
                self.lines.append(line.rstrip("\n"))
                if self.url is None and (m := URL.search(line)):
                    self.url = m.group(1)
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_for_url(self, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        with self._seen:
            while self.url is None and self.proc.poll() is None and time.monotonic() < deadline:
                self._seen.wait(0.2)
        if self.url is None:
            raise RuntimeError("smoldocs serve did not start:\n" + "\n".join(self.lines))
        return self.url

    def stderr(self) -> str:
        with self._seen:
            return "\n".join(self.lines)


@contextlib.contextmanager
def serving(*args: str, timeout: float = 120):
    """A started `smoldocs serve --port 0 ARGS...` subprocess, stopped with SIGTERM afterwards."""
    cmd = [sys.executable, "-m", "agent", "serve", "--port", "0", *args]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    served = Served(proc)
    try:
        served.wait_for_url(timeout)
        yield served
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def http_client(url: str, token: str | None):
    """An initialized MCP session over streamable HTTP with `token` (None: no Authorization header)."""
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(create_mcp_http_client(headers=headers)) as client,
            portal.wrap_async_context_manager(streamable_http_client(url, http_client=client)) as (read, write),
            portal.wrap_async_context_manager(ClientSession(read, write)) as session,
        ):
            portal.call(session.initialize)
            yield Client(portal, session)
    except BaseExceptionGroup as group:  # the SDK's task groups wrap one error in groups: the error, as raised
        while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
            group = group.exceptions[0]
        raise group from None
