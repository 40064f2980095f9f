"""The citation contract: the `[n]` an answer carries, and whether each names a chunk the store holds as shown.

This is the public face of rag that any scorer of answers relies on, and the one implementation the verifier and
`smoldocs check` use:

- `parse_citations(answer)`: the distinct numbers of the answer's markers, in order of first appearance;
- `resolve(answer, citations)`: those numbers split into the citations some excerpt carried (in order of
  appearance) and the numbers no excerpt carried (sorted);
- `unresolved(citations, lookup)`: each citation whose chunk is missing, or whose doc id or uri differs from the
  store's.

What counts as a marker is rag.markers' one grammar: `[2]`, `[1][3]` and `[1, 3]` are markers; `[a]`, `[1-3]` and
`[0]` are not, nor is a marker inside code or one that is a Markdown link (`[1](url)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Protocol, Union, runtime_checkable

from rag import markers
from rag.types import Chunk


@dataclass(frozen=True)
class Citation:
    """Excerpt number `n` as shown to the model, and the stored chunk it stands for."""

    n: int
    chunk_id: str
    doc_id: str
    uri: str


class CitationLike(Protocol):
    """What a shown excerpt's number stands for (a Citation, or a saved copy of one)."""

    @property
    def n(self) -> int: ...
    @property
    def chunk_id(self) -> str: ...
    @property
    def doc_id(self) -> str: ...
    @property
    def uri(self) -> str: ...


Lookup = Callable[[str], "Chunk | None"]


@runtime_checkable
class ChunkSource(Protocol):
    """Anything that finds a stored chunk by id (a Retriever does)."""

    def chunk(self, chunk_id: str) -> Chunk | None: ...


Citations = Union[Mapping[int, CitationLike], Iterable[CitationLike]]


def parse_citations(answer: str) -> list[int]:
    """The distinct marker numbers of `answer`, in order of first appearance; code and Markdown links aside."""
    return markers.numbers(answer)


def resolve(answer: str, citations: Citations) -> tuple[list[CitationLike], list[int]]:
    """(the citations `answer` uses, in order of appearance; the numbers it cites that none carries, sorted)."""
    by_number = dict(citations) if isinstance(citations, Mapping) else {c.n: c for c in citations}
    numbers = parse_citations(answer)
    return [by_number[n] for n in numbers if n in by_number], sorted(n for n in numbers if n not in by_number)


def problem(citation: CitationLike, lookup: Lookup | ChunkSource) -> str | None:
    """Why `citation` does not resolve to the chunk it names in the store, or None when it does."""
    found = chunk_of(citation, lookup.chunk if isinstance(lookup, ChunkSource) else lookup)
    return found if isinstance(found, str) else None


def chunk_of(citation: CitationLike, lookup: Lookup) -> Chunk | str:
    """The chunk `citation` stands for, as shown, or why it does not resolve (problem's line): one lookup."""
    chunk = lookup(citation.chunk_id)
    if chunk is None:
        return f"[{citation.n}] {citation.chunk_id}: chunk not in the index"
    if chunk.doc_id != citation.doc_id:
        return f"[{citation.n}] {citation.chunk_id}: doc id {citation.doc_id!r} but the index has {chunk.doc_id!r}"
    if chunk.uri != citation.uri:
        return f"[{citation.n}] {citation.chunk_id}: uri {citation.uri!r} but the index has {chunk.uri!r}"
    return chunk


def resolved_texts(citations: Iterable[CitationLike], lookup: Lookup) -> tuple[str, ...]:
    """The texts of the chunks `citations` stand for, as shown, leaving out those that do not resolve."""
    return tuple(chunk.text for c in citations if not isinstance(chunk := chunk_of(c, lookup), str))


def unresolved(citations: Citations, lookup: Lookup | ChunkSource) -> list[CitationLike]:
    """Each citation whose chunk is missing from the store, or whose stored doc id or uri differs."""
    listed = citations.values() if isinstance(citations, Mapping) else citations
    return [c for c in listed if problem(c, lookup) is not None]
