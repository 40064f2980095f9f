"""Value objects shared by chunking, retrieval, packing and citations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable


class _Located:
    """Heading and line or page range as shown to people, for anything with heading_path and line/page fields."""

    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    page_start: int
    page_end: int

    @property
    def heading(self) -> str:
        return " > ".join(self.heading_path)

    @property
    def lines(self) -> str:
        return f"{self.line_start}-{self.line_end}"

    @property
    def pages(self) -> str:
        """"4" or "4-5" for a chunk of a paged document (PDF); "" otherwise."""
        if not self.page_start:
            return ""
        return str(self.page_start) if self.page_end == self.page_start else f"{self.page_start}-{self.page_end}"

    @property
    def where(self) -> str:
        """Where in its file: "page 4", "pages 4-5", or "lines 12-30"."""
        if self.page_start:
            return f"page {self.pages}" if self.page_end == self.page_start else f"pages {self.pages}"
        return f"lines {self.lines}"


@dataclass(frozen=True)
class Chunk(_Located):
    """A heading-aware piece of one document. `chunk_id` is `<doc_id>#<n>`, stable per file."""

    chunk_id: str
    doc_id: str  # path relative to the docs folder, posix separators
    uri: str  # what excerpts show the model; the doc id
    text: str
    heading_path: tuple[str, ...] = ()
    line_start: int = 1  # 1-based, inclusive; lines of the file (HTML: of its source)
    line_end: int = 1
    page_start: int = 0  # 1-based pages of a PDF; 0 for documents without pages
    page_end: int = 0


@dataclass(frozen=True)
class Hit(_Located):
    """A retrieved chunk with its fused score and each retriever's rank (1-based, None if unranked)."""

    chunk_id: str
    doc_id: str
    uri: str
    text: str
    score: float
    heading_path: tuple[str, ...] = ()
    line_start: int = 1
    line_end: int = 1
    page_start: int = 0
    page_end: int = 0
    bm25_rank: int | None = None
    dense_rank: int | None = None
    outdated: bool = False  # its document is archived, deprecated or superseded (rag.sources)
    expires: str | None = None  # ISO date after which its document must not be shown

    @classmethod
    def from_chunk(
        cls,
        chunk: Chunk,
        score: float,
        bm25_rank: int | None = None,
        dense_rank: int | None = None,
        outdated: bool = False,
        expires: str | None = None,
    ) -> "Hit":
        return cls(
            chunk_id=chunk.chunk_id,
            doc_id=chunk.doc_id,
            uri=chunk.uri,
            text=chunk.text,
            score=score,
            heading_path=chunk.heading_path,
            line_start=chunk.line_start,
            line_end=chunk.line_end,
            page_start=chunk.page_start,
            page_end=chunk.page_end,
            bm25_rank=bm25_rank,
            dense_rank=dense_rank,
            outdated=outdated,
            expires=expires,
        )


@runtime_checkable
class Retriever(Protocol):
    """Ranked search over stored chunks, plus lookup by id for citation checks."""

    def search(self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None) -> list[Hit]: ...

    def chunk(self, chunk_id: str) -> Chunk | None: ...
