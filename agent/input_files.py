"""A user's input files and stdin, read bounded: at most the limit and one byte more, so an endless or huge input
(/dev/zero, a log piped by mistake) is one line instead of a MemoryError after gigabytes."""

from __future__ import annotations

import sys
from pathlib import Path

from agent.errors import UsageError
from rag.verification.answer_check import MAX_ANSWER_CHARS

MAX_ANSWER_BYTES = 4 * MAX_ANSWER_CHARS  # `check`'s answer: its character limit, in UTF-8's widest characters
MAX_SHOWN_BYTES = 16 * 2**20  # `check --shown`: every excerpt an agent saw in a long session is a few MB at most
MAX_QUESTIONS_BYTES = 16 * 2**20  # `eval --questions`: the bundled 200 questions take 36 KB


def read_text(path: str, what: str, limit: int, fix: str = "") -> str:
    """The text of `path` (`-`: stdin), undecodable bytes replaced; a UsageError naming `what` when it holds more
    than `limit` bytes. OSError passes through for the caller's own message."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        data = stdin.read(limit + 1) if stdin is not None else sys.stdin.read(limit + 1).encode("utf-8")
        where = f"{what} on stdin is longer than"
    else:
        with Path(path).expanduser().open("rb") as f:
            data = f.read(limit + 1)
        where = f"{what} file {path} is larger than"
    if len(data) > limit:
        raise UsageError(f"{where} {_size(limit)}: {fix or 'give a smaller one'}")
    return data.decode("utf-8", errors="replace")


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n >= 2**20 and n % 2**20 == 0 else f"{n} bytes"
