"""Citations: the `[n]` markers an answer carries, and checking each against the ledger and the store."""

from __future__ import annotations

import re
from dataclasses import astuple, dataclass
from typing import Callable, Iterator, Sequence

from rag.types import Chunk


@dataclass(frozen=True)
class Citation:
    """Excerpt number `n` as shown to the model, and the stored chunk it stands for."""

    n: int
    chunk_id: str
    doc_id: str
    uri: str

    def __iter__(self) -> Iterator:
        # Lets callers unpack `n, chunk_id, doc_id, uri = citation`.
        return iter(astuple(self))


# One marker: [2] or [1, 3]; numbers start at 1 and carry no leading zero; `[1](url)` is a link, not a marker.
_MARKER = re.compile(r"\[([1-9][0-9]*(?:[ \t]*,[ \t]*[1-9][0-9]*)*)\](?!\()")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)


def _strip_code(text: str) -> str:
    """Blank out fenced code blocks and inline code spans: `a[1]` in code is not a citation."""
    kept: list[str] = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        if fence is None:
            opened = _FENCE_OPEN.match(line)
            if opened:
                fence = opened.group(1)
                continue
            kept.append(line)
        else:
            closing = line.strip()
            # A fence closes with a run of the same character at least as long, and nothing else.
            if closing and set(closing) == {fence[0]} and len(closing) >= len(fence):
                fence = None
    return _CODE_SPAN.sub(" ", "".join(kept))


def parse_citations(answer: str) -> list[int]:
    """The distinct citation numbers in `answer`, in order of first appearance, ignoring code."""
    seen: dict[int, None] = {}
    for marker in _MARKER.finditer(_strip_code(answer)):
        for part in marker.group(1).split(","):
            seen.setdefault(int(part), None)
    return list(seen)


def resolve(answer: str, citations: Sequence[Citation]) -> tuple[list[Citation], list[int]]:
    """Split the answer's numbers into citations some block carried (in order) and unknown numbers (sorted)."""
    by_number = {c.n: c for c in citations}
    numbers = parse_citations(answer)
    used = [by_number[n] for n in numbers if n in by_number]
    unknown = sorted(n for n in numbers if n not in by_number)
    return used, unknown


Lookup = Callable[[str], "Chunk | None"]


def _lookup_fn(lookup) -> Lookup:
    # Accept a Retriever (anything with .chunk) as well as a plain function.
    return lookup.chunk if hasattr(lookup, "chunk") else lookup


def problem(citation: Citation, lookup) -> str | None:
    """Why `citation` does not resolve to the chunk it names in the store, or None when it does."""
    chunk = _lookup_fn(lookup)(citation.chunk_id)
    if chunk is None:
        return f"[{citation.n}] {citation.chunk_id}: chunk not in the index"
    if chunk.doc_id != citation.doc_id:
        return f"[{citation.n}] {citation.chunk_id}: doc id {citation.doc_id!r} but the index has {chunk.doc_id!r}"
    if chunk.uri != citation.uri:
        return f"[{citation.n}] {citation.chunk_id}: uri {citation.uri!r} but the index has {chunk.uri!r}"
    return None


def unresolved(citations: Sequence[Citation], lookup) -> list[Citation]:
    """Each citation whose chunk is missing from the store, or whose stored doc id or uri differs."""
    return [c for c in citations if problem(c, lookup) is not None]
