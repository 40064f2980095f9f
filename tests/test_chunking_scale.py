"""Chunking stays linear on hostile shapes: a long base64 image, one huge word, 100k headings, many fences.

No timings (the suite runs on busy machines): the work is counted instead. A counting tokenizer tallies the
characters it is asked to count, and a line tracer tallies the Python lines run in rag/ingest; at four times
the size, linear work grows about four times and quadratic work sixteen. benchmarks/ (section "hostile
shapes") times the same shapes at 1, 10 and 100 MB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rag.ingest.chunking import chunk_document

INGEST = str(Path(__file__).resolve().parent.parent / "rag" / "ingest")
SMALL = 16_000  # characters; the larger run is 4x


class CharCounter:
    """About three characters a token, as BPE tokenizers count base64 and long identifiers; tallies its work."""

    name = "chars/3"

    def __init__(self) -> None:
        self.chars = 0

    def count(self, text: str) -> int:
        self.chars += len(text)
        return (len(text) + 2) // 3


SHAPES = {
    "inline base64 image": lambda n: "# Image\n\nSee ![logo](data:image/png;base64," + "QUJD" * (n // 4) + ") here.\n",
    "one huge word": lambda n: "x" * n,
    "bare headings": lambda n: "".join(f"# H{i}\n" for i in range(n // 8)),
    "headings with text": lambda n: "".join(f"## H{i}\n\ntext {i}.\n\n" for i in range(n // 20)),
    "many fences": lambda n: "".join(f"```\ncode {i}\n```\n" for i in range(n // 18)),
    "many list items": lambda n: "".join(f"- item {i}\n" for i in range(n // 12)),
}


def work(text: str) -> tuple[int, int, int]:
    """(lines of rag/ingest run, characters counted, chunks) for chunking `text` as Markdown."""
    lines = 0

    def trace(frame, event, arg):
        nonlocal lines
        if not frame.f_code.co_filename.startswith(INGEST):
            return None
        if event == "line":
            lines += 1
        return trace

    counter = CharCounter()
    sys.settrace(trace)
    try:
        chunks = chunk_document("doc.md", text, counter, max_tokens=200)
    finally:
        sys.settrace(None)
    return lines, counter.chars, len(chunks)


@pytest.mark.parametrize("shape", SHAPES)
def test_chunking_work_grows_linearly_with_the_document(shape):
    small, large = SHAPES[shape](SMALL), SHAPES[shape](4 * SMALL)
    lines_small, chars_small, chunks_small = work(small)
    lines_large, chars_large, chunks_large = work(large)
    assert chunks_large >= 3 * chunks_small
    assert lines_large <= 6 * lines_small, (lines_small, lines_large)  # quadratic: ~16x
    assert chars_large <= 6 * chars_small, (chars_small, chars_large)
    assert chars_large <= 10 * len(large)  # each character is counted a few times, not once per probe of a bisection
