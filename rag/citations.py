"""Citations: what an excerpt's number `[n]` stands for, and whether the store still holds that chunk as shown."""

from __future__ import annotations

from dataclasses import dataclass

from rag.verdicts import CitationLike, Lookup


@dataclass(frozen=True)
class Citation:
    """Excerpt number `n` as shown to the model, and the stored chunk it stands for."""

    n: int
    chunk_id: str
    doc_id: str
    uri: str


def problem(citation: CitationLike, lookup: Lookup) -> str | None:
    """Why `citation` does not resolve to the chunk it names in the store, or None when it does."""
    chunk = lookup(citation.chunk_id)
    if chunk is None:
        return f"[{citation.n}] {citation.chunk_id}: chunk not in the index"
    if chunk.doc_id != citation.doc_id:
        return f"[{citation.n}] {citation.chunk_id}: doc id {citation.doc_id!r} but the index has {chunk.doc_id!r}"
    if chunk.uri != citation.uri:
        return f"[{citation.n}] {citation.chunk_id}: uri {citation.uri!r} but the index has {chunk.uri!r}"
    return None
