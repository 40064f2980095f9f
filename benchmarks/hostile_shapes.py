"""Chunking hostile shapes at 1, 10 and 100 MB with the real tokenizer: each row against linear growth from 1 MB.

The shapes that were quadratic or close to it (issue 31): a Markdown page that is mostly one inline base64
image, one huge word, bare headings, code fences back to back, and (parsing, not chunking) HTML nested
thousands deep. The ratio is seconds at N MB over N times the seconds at 1 MB: linear work stays near 1.
HTML stops at 10 MB: BeautifulSoup holds a 100 MB page as a tree of ~10 million tags, several GB.

Run alone: .venv/bin/python -m benchmarks --only hostile_shapes   (--quick: 1 and 10 MB)
"""

from __future__ import annotations

import time
from typing import Callable

from benchmarks.table import row

SECTION = "hostile shapes"
MB = 1_000_000


def _base64_page(n: int) -> str:
    return "# Logo\n\nThe logo: ![logo](data:image/png;base64," + "iVBORw0KGgo" * (n // 11) + ") as shipped.\n"


def _one_word(n: int) -> str:
    return "w" * n


def _bare_headings(n: int) -> str:
    return "".join(f"## Heading {i}\n" for i in range(n // 16))


def _fences(n: int) -> str:
    return "".join(f"```\nprint({i})\n```\n" for i in range(n // 20))


def _nested_html(n: int) -> str:
    depth = n // 11
    return f"<html><body><h1>Deep</h1>{'<div>' * depth}<p>bottom</p>{'</div>' * depth}</body></html>"


SHAPES: dict[str, tuple[str, Callable[[int], str]]] = {
    "inline base64 image": ("page.md", _base64_page),
    "one word": ("word.md", _one_word),
    "bare headings": ("headings.md", _bare_headings),
    "code fences": ("fences.md", _fences),
    "nested divs": ("deep.html", _nested_html),
}


def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Rows of the table; smoke: 20 and 40 KB, to prove the module runs (its figures mean nothing)."""
    from models.llama_cpp.tokenizer import load_tokenizer
    from rag.ingest.chunking import chunk_document

    tokenizer = load_tokenizer(None)
    sizes = (0.02, 0.04) if smoke else (1, 10) if quick else (1, 10, 100)
    rows = []
    for shape, (name, make) in SHAPES.items():
        base = None
        for size in sizes:
            if name.endswith(".html") and size > 10:
                continue
            text = make(int(size * MB))
            start = time.perf_counter()
            chunks = chunk_document(name, text, tokenizer)
            seconds = time.perf_counter() - start
            del text
            base = seconds if base is None else base
            linear = base * size / sizes[0] if size > sizes[0] else None
            rows.append(row(f"chunk {shape}, {size} MB ({len(chunks):,} chunks), s vs linear from {sizes[0]} MB", seconds,
                            linear, "ratio <= 1.5" if linear else "", section=SECTION))
    return rows
