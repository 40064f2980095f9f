"""A child process timed from outside: first output on a terminal, exit, and its own peak RSS."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# What one writes without smoldocs: load the GGUF, evaluate a prompt, stream a fixed number of tokens.
BARE_SCRIPT = """
import sys
from pathlib import Path
from llama_cpp import Llama

from models.cpu import use_safe_weight_buffers

use_safe_weight_buffers()  # the same weight layout as ours: on a VM whose AMX faults, any other crashes
path, n_prompt, n_completion, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
llm = Llama(model_path=path, n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False)
text = "\\n\\n".join(p.read_text(encoding="utf-8") for p in sorted(Path(sys.argv[5]).rglob("*.md")))
ids = llm.tokenize(text.encode("utf-8"), add_bos=False)[:n_prompt]
stream = llm.create_completion(ids, max_tokens=n_completion, temperature=0.2, top_k=40, top_p=0.9, min_p=0.05,
                               repeat_penalty=1.2, logit_bias={llm.token_eos(): -1e9}, seed=0, stream=True)
for chunk in stream:
    sys.stdout.write(chunk["choices"][0]["text"])
    sys.stdout.flush()
"""


@dataclass(frozen=True)
class ChildRun:
    first_output: float | None  # seconds from start to the first visible byte on stdout
    seconds: float  # from start to exit
    peak_rss_mb: float
    returncode: int
    output: str
    errors: str


# Linux carries a process's peak RSS across exec, and a child forked from this (large) process starts with this
# process's RSS as its peak. So the child is started by a small process that reports the peak of its own child.
TIME = "/usr/bin/time"
RSS_WRAPPER = """
import os, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(child.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _measured(argv: list[str], report: str) -> list[str]:
    """`argv` started under a small parent that writes the child's peak RSS in KiB to `report`."""
    if os.access(TIME, os.X_OK):
        return [TIME, "-f", "%M", "-o", report, *argv]
    return [sys.executable, "-S", "-c", RSS_WRAPPER, report, *argv]


def _peak_kib(report: str) -> float:
    try:
        lines = Path(report).read_text(encoding="utf-8").split()
        return float(lines[-1])
    except (OSError, ValueError, IndexError):
        return float("nan")


def run_child(argv: list[str], timeout: float = 900, env: dict | None = None) -> ChildRun:
    """Run `argv` with stdout on a pseudo-terminal (so programs stream as they do for a user)."""
    master, slave = pty.openpty()
    with tempfile.TemporaryFile() as errors, tempfile.NamedTemporaryFile(suffix=".rss") as report:
        start = time.perf_counter()
        proc = subprocess.Popen(_measured(argv, report.name), stdin=subprocess.DEVNULL, stdout=slave, stderr=errors,
                                cwd=REPO, env={**os.environ, **(env or {})})
        os.close(slave)
        chunks: list[bytes] = []
        first = None
        try:
            while True:
                left = timeout - (time.perf_counter() - start)
                ready, _, _ = select.select([master], [], [], max(0.0, left))
                if not ready:
                    proc.kill()
                    break
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                if first is None and data.strip():
                    first = time.perf_counter() - start
                chunks.append(data)
        finally:
            os.close(master)
        returncode = proc.wait()
        seconds = time.perf_counter() - start
        peak = _peak_kib(report.name) / 1024
        errors.seek(0)
        err = errors.read().decode("utf-8", errors="replace")
    text = b"".join(chunks).decode("utf-8", errors="replace").replace("\r\n", "\n")
    return ChildRun(first, seconds, peak, returncode, text, err)


def bare_llama(n_prompt: int, n_completion: int, timeout: float = 900) -> ChildRun:
    """A fresh process that only loads the chat GGUF, evaluates n_prompt tokens and streams n_completion tokens."""
    from models.config import default_threads
    from models.locate import resolve_model_path
    from rag.ingest.corpus import default_docs_dir

    argv = [sys.executable, "-c", BARE_SCRIPT, str(resolve_model_path(None)), str(n_prompt), str(n_completion),
            str(default_threads()), str(default_docs_dir())]
    return run_child(argv, timeout)


def smoldocs(*args: str, timeout: float = 900) -> ChildRun:
    """`smoldocs ARGS...` in a fresh process, from the venv next to this interpreter."""
    exe = Path(sys.executable).with_name("smoldocs")
    argv = [str(exe), *args] if exe.exists() else [sys.executable, "-m", "agent", *args]
    return run_child(argv, timeout, env={"PYTHONPATH": str(REPO)})  # this checkout's code, whatever is installed
