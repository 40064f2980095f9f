"""Running smoldocs the way a user does, with fast fake components: in-process, or in a forked child to kill.

The CLI loads the real SmolLM2 tokenizer and MiniLM embedder; these helpers swap in the word tokenizer and the
hash embedder where the component is not what a test is about. Every result carries what the user sees: the
exit code, stdout and stderr.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fakes import HashEmbedder, WordTokenizer
from json_support import read_output


@dataclass(frozen=True)
class Run:
    rc: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


@contextlib.contextmanager
def fake_components(dim: int = 64):
    """Make every CLI command load the word tokenizer and the hash embedder."""
    from agent.surfaces.commands import common

    saved = common.load_tokenizer_from_args, common.load_embedder_from_args
    common.load_tokenizer_from_args = lambda args: WordTokenizer()
    common.load_embedder_from_args = lambda args: HashEmbedder(dim)
    try:
        yield
    finally:
        common.load_tokenizer_from_args, common.load_embedder_from_args = saved


def cli(*argv: str) -> Run:
    """`smoldocs ARGV` in this process with fake components."""
    from agent.cli import main

    out, err = io.StringIO(), io.StringIO()
    with fake_components(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return Run(rc, out.getvalue(), err.getvalue())


def index_args(docs: Path, index_dir: Path, *more: str) -> list[str]:
    return ["index", "--docs", str(docs), "--index", str(index_dir), *more]


def search_args(query: str, docs: Path, index_dir: Path, *more: str) -> list[str]:
    return ["search", query, "--docs", str(docs), "--index", str(index_dir), "--json", *more]


def forked(fn: Callable[[], int]) -> int:
    """Start `fn()` in a forked child and return its pid; its exit status is fn's result."""
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 70
        try:
            code = int(fn() or 0)
        except BaseException:  # noqa: BLE001 - reported by the exit status
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    return pid


def wait(pid: int) -> int:
    """The child's exit code; minus the signal number when it was killed (as subprocess reports it)."""
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def forked_cli(*argv: str) -> tuple[int, Path, Path]:
    """Start `smoldocs ARGV` with fake components in a forked child; returns (pid, stdout file, stderr file)."""
    out = Path(tempfile.mkstemp(prefix="smoldocs-out-")[1])
    err = Path(tempfile.mkstemp(prefix="smoldocs-err-")[1])

    def child() -> int:
        from agent.cli import main

        sys.stdout = open(out, "w", encoding="utf-8")
        sys.stderr = open(err, "w", encoding="utf-8")
        with fake_components():
            return main(list(argv))

    return forked(child), out, err


def finish(pid: int, out: Path, err: Path) -> Run:
    rc = wait(pid)
    run = Run(rc, out.read_text(encoding="utf-8", errors="replace"), err.read_text(encoding="utf-8", errors="replace"))
    out.unlink(missing_ok=True)
    err.unlink(missing_ok=True)
    return run


def kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def search_hits(run) -> list[dict]:
    """The hits of a `smoldocs search --json` run, its output checked against the schema."""
    return read_output("search", run.out)["hits"]
