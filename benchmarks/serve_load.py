"""Load on `smoldocs serve`: N clients on loopback for T seconds, each its own token and MCP session, asking
search_docs the bundled questions in a loop.

Run: .venv/bin/python -m benchmarks.serve_load [--clients 16] [--seconds 30] [--docs DIR | --store URL]
     [--questions N] [--sample S] [--json]

The server is a real `smoldocs serve` subprocess (default limits) over the bundled docs, --docs or the shared
store at --store (a PostgreSQL URL, e.g. the one benchmarks.shared_store --keep leaves filled), with its access
log in a temp folder; the clients are the SDK's streamable HTTP client, all in this process's event loop, on the
same machine (they take CPU from the server: on 2 cores that is part of what is measured). The warm-up waits
until the index is built and embedded (a first indexing is not what this measures); the server's RSS is read
after it, every --sample seconds during the load, and at the end. A call is an error when it raises or comes back
as a tool error (429, timeout).

Each MCP session remembers every excerpt number it was shown, so RSS grows while sessions still meet new excerpts.
--questions N asks only the first N questions: after a few calls each session has seen all it will see, and what
RSS does then is the server's own memory under load (flat, or a leak).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

import anyio

from benchmarks.measure import load_average, percentile

ROOT = Path(__file__).resolve().parent.parent
URL = re.compile(r"at (http://\S+/mcp)")
START_TIMEOUT = 300.0
K = 5


@dataclass(frozen=True)
class LoadReport:
    clients: int
    seconds: float
    calls: int
    calls_per_s: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    errors: int
    error_kinds: dict[str, int]
    rss_start_mb: float
    rss_end_mb: float
    rss_samples_mb: tuple[float, ...]  # every `sample_s` seconds of the load
    sample_s: float
    questions: int
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]


def rss_bytes(pid: int) -> int:
    """A process's resident memory now (Linux: VmRSS in /proc; no psutil needed)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def start_server(folder: Path, docs: Path | None, clients: int,
                 store: str | None = None) -> tuple[subprocess.Popen, str, list[str]]:
    """A `smoldocs serve` subprocess with one token per client, over `docs` or the `store` URL; its URL and the
    tokens."""
    from agent.surfaces.serve.tokens import new_token

    tokens_file = folder / "tokens"
    tokens = [new_token(tokens_file, f"client{i}") for i in range(clients)]
    cmd = [sys.executable, "-m", "agent", "serve", "--port", "0", "--tokens", str(tokens_file),
           "--access-log", str(folder / "access.log"), *(["--docs", str(docs)] if docs else []),
           *(["--store", store] if store else [])]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT
    for line in proc.stderr:
        if m := URL.search(line):
            # Keep reading its stderr (loading notices), or a full pipe would stop the server.
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, m.group(1), tokens
        if time.monotonic() > deadline:
            break
    proc.kill()
    raise RuntimeError("smoldocs serve did not start")


@contextlib.asynccontextmanager
async def _session(url: str, token: str):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def _warm_up(url: str, token: str, query: str) -> None:
    """Call until a result carries no note that the index is still being built or embedded: the load then
    measures serving, not a first indexing (which runs in the server's background)."""
    deadline = time.monotonic() + START_TIMEOUT
    async with _session(url, token) as session:
        while True:
            result = await session.call_tool("search_docs", {"query": query, "k": K})
            if not result.content[0].text.startswith("note:"):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the index was still being built after the warm-up time")
            await anyio.sleep(1)


async def _client(url: str, token: str, queries: list[str], offset: int, until: float, latencies: list[float],
                  errors: Counter) -> None:  # fmt: skip
    async with _session(url, token) as session:
        i = offset
        while time.monotonic() < until:
            start = time.perf_counter()
            try:
                result = await session.call_tool("search_docs", {"query": queries[i % len(queries)], "k": K})
            except Exception as exc:  # noqa: BLE001 - a refused or broken request: counted, and the client goes on
                errors[f"{type(exc).__name__}: {str(exc)[:60]}"] += 1
            else:
                if result.is_error:
                    errors[result.content[0].text[:60]] += 1
                else:
                    latencies.append((time.perf_counter() - start) * 1000)
            i += 1


def measure(clients: int = 16, seconds: float = 30, docs: Path | None = None, store: str | None = None,
            questions: int | None = None, sample_s: float = 30.0) -> LoadReport:
    """Start a server, warm it up, load it with `clients` for `seconds` (asking the first `questions` bundled
    questions; None: all), reading its RSS every `sample_s` seconds, stop it; the figures."""
    from rag.evaluation import load_questions

    queries = [q.q for q in load_questions()][:questions]
    with tempfile.TemporaryDirectory(prefix="smoldocs-serve-load-") as tmp:
        proc, url, tokens = start_server(Path(tmp), docs, clients, store)
        try:
            anyio.run(_warm_up, url, tokens[0], queries[0])
            rss_start = rss_bytes(proc.pid)
            latencies: list[float] = []
            errors: Counter = Counter()
            before = load_average()
            begin = time.monotonic()
            samples: list[float] = []
            done = threading.Event()

            def sample() -> None:
                while not done.wait(sample_s):
                    with contextlib.suppress(OSError, RuntimeError):  # the server gone: the run says why
                        samples.append(round(rss_bytes(proc.pid) / 2**20, 1))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()

            async def load() -> None:
                async with anyio.create_task_group() as tg:
                    for n, token in enumerate(tokens):
                        tg.start_soon(_client, url, token, queries, n * 7, begin + seconds, latencies, errors)

            anyio.run(load)
            elapsed = time.monotonic() - begin
            done.set()
            sampler.join()
            rss_end = rss_bytes(proc.pid)
            after = load_average()
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    calls = len(latencies) + sum(errors.values())
    return LoadReport(
        clients=clients, seconds=round(elapsed, 1), calls=calls, calls_per_s=round(len(latencies) / elapsed, 2),
        p50_ms=round(percentile(latencies, 50), 1), p95_ms=round(percentile(latencies, 95), 1),
        p99_ms=round(percentile(latencies, 99), 1), errors=sum(errors.values()), error_kinds=dict(errors),
        rss_start_mb=round(rss_start / 2**20, 1), rss_end_mb=round(rss_end / 2**20, 1),
        rss_samples_mb=tuple(samples), sample_s=sample_s, questions=len(queries),
        load_before=tuple(round(x, 2) for x in before), load_after=tuple(round(x, 2) for x in after),
    )  # fmt: skip


def render(report: LoadReport) -> str:
    return "\n".join([
        f"smoldocs serve, {report.clients} clients x {report.seconds} s on loopback (search_docs, k={K})",
        f"  answered calls/s   {report.calls_per_s}",
        f"  latency p50/95/99  {report.p50_ms} / {report.p95_ms} / {report.p99_ms} ms",
        f"  calls, errors      {report.calls}, {report.errors} {report.error_kinds or ''}".rstrip(),
        f"  server RSS         {report.rss_start_mb} MB after warm-up, {report.rss_end_mb} MB at the end",
        f"  RSS every {report.sample_s:g} s    {', '.join(f'{x:g}' for x in report.rss_samples_mb) or '-'} MB",
        f"  questions          {report.questions}, in a loop from a different one for each client",
        f"  load average       {report.load_before} before, {report.load_after} after",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.serve_load", description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--docs", type=Path, default=None, help="docs folder to serve (default: the bundled docs)")
    p.add_argument("--store", default=None, help="serve this PostgreSQL store instead of a folder")
    p.add_argument("--questions", type=int, default=None,
                   help="ask only the first N bundled questions (sessions then stop meeting new excerpts)")
    p.add_argument("--sample", type=float, default=30.0, help="read the server's RSS every S seconds (default 30)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.docs and args.store:
        p.error("give --docs or --store, not both")
    if args.questions is not None and args.questions < 1:
        p.error("--questions must be at least 1")
    if args.sample <= 0:
        p.error("--sample must be above 0")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    report = measure(args.clients, args.seconds, args.docs, args.store, args.questions, args.sample)
    print(json.dumps(asdict(report)) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
