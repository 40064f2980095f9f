"""llama-cpp-python's own OpenAI-compatible server, started on loopback for a GGUF: for tests and benchmarks.

It needs the `server` extra (`pip install 'llama-cpp-python[server]'`). Only 127.0.0.1 is ever bound.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx  # the HTTP client the openai SDK is built on

from models.errors import ServerUnreachable


def free_port() -> int:
    """A TCP port nothing listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """`python -m llama_cpp.server` in a child process (through models.openai_server.serve_local); a context manager that
    always stops it."""

    def __init__(self, model_path: Path, n_ctx: int = 2048, n_threads: int = 1, api_key: str | None = None,
                 embedding: bool = False) -> None:
        self.model_path = Path(model_path)
        self.embedding = embedding  # serve /v1/embeddings (an embedding model such as MiniLM)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.api_key = api_key
        self.port = 0
        self.process: subprocess.Popen | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 90.0) -> "LocalServer":
        self.port = free_port()
        command = [
            sys.executable, "-m", "models.openai_server.serve_local", "--model", str(self.model_path),
            "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads), "--verbose", "False",
        ]
        if self.api_key:
            command += ["--api_key", self.api_key]
        if self.embedding:
            command += ["--embedding", "True"]
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerUnreachable(f"llama_cpp.server exited with status {self.process.returncode}: {self.tail()}")
            try:
                if httpx.get(f"{self.base_url}/models", headers=headers, timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise ServerUnreachable(f"llama_cpp.server did not answer within {timeout:g} s: {self.tail()}")

    def stop(self) -> None:
        """Terminate the server (kill it after 10 s); safe to call twice."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        """Stop the server the hard way, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def tail(self, lines: int = 5) -> str:
        try:
            text = Path(self.log.name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " | ".join(text.strip().splitlines()[-lines:])

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        Path(self.log.name).unlink(missing_ok=True)
