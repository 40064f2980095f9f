"""Value objects shared by chunking, retrieval, packing and citations."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol, Self, Sequence, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from rag.retrieval.vocabulary import DocumentFrequencies


@dataclass(frozen=True)
class SourceInfo:
    """A document's standing: outdated (and why), when it expires, and a notice when its front matter is unusable."""

    outdated: bool = False
    why: str = ""  # "status: archived", "superseded by docs/x.md", "in folder archive/"
    superseded_by: str | None = None
    expires: str | None = None  # ISO date, YYYY-MM-DD
    notice: str | None = None  # one line for the user: what is wrong with the front matter and what was done

    def expired(self, today: dt.date | None = None) -> bool:
        """Past its expiry date (the day itself still counts as valid)."""
        return self.expires is not None and dt.date.fromisoformat(self.expires) < (today or dt.date.today())


@dataclass(frozen=True)
class Chunk:
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
class Hit:
    """A retrieved chunk and what search adds to it: its score (the fused one, or under rag.indexing.ordering the
    logistic of the learned one), each retriever's rank (1-based, None if unranked) and raw score (None where the
    retriever does not report it), its document's standing and the collection it came from. It reads like its chunk
    (`hit.text`)."""

    chunk: Chunk
    score: float
    bm25_rank: int | None = None
    dense_rank: int | None = None
    outdated: bool = False  # its document is archived, deprecated or superseded (rag.ingest.sources)
    expires: str | None = None  # ISO date after which its document must not be shown
    collection: str = ""  # the named source it came from (rag.indexing.collections); "" when unnamed
    bm25_score: float | None = None  # its BM25 score (0.0: no query term), ranked or not
    dense_score: float | None = None  # its cosine with the question; None when not embedded or no dense half

    @property
    def chunk_id(self) -> str:
        return self.chunk.chunk_id

    @property
    def doc_id(self) -> str:
        return self.chunk.doc_id

    @property
    def uri(self) -> str:
        return self.chunk.uri

    @property
    def text(self) -> str:
        return self.chunk.text

    @property
    def heading_path(self) -> tuple[str, ...]:
        return self.chunk.heading_path

    @property
    def heading(self) -> str:
        return self.chunk.heading

    @property
    def lines(self) -> str:
        return self.chunk.lines

    @property
    def pages(self) -> str:
        return self.chunk.pages

    @property
    def where(self) -> str:
        return self.chunk.where


class Update(Protocol):
    """What the last open or re-index of an index did (rag.indexing.build.IndexUpdate is one): a reader tells the
    user, and waits while files are still pending."""

    @property
    def added(self) -> tuple[str, ...]: ...

    @property
    def changed(self) -> tuple[str, ...]: ...

    @property
    def removed(self) -> tuple[str, ...]: ...

    @property
    def pending(self) -> tuple[str, ...]:
        """Files not chunked yet (the chunk budget was spent): not searchable until a later re-index."""
        ...

    @property
    def modified(self) -> bool:
        """True when the stored index was (re)written."""
        ...

    def summary(self) -> str:
        """One line for the user: files, chunks, what changed, how long."""
        ...


@runtime_checkable
class IndexReader(Protocol):
    """What answering a question reads from an index: ranked search, lookup by id, what the index holds and how
    whole it is. The tools, the citations and the eval need no more."""

    def search(self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, mode: str = "hybrid") -> list[Hit]:
        """The best `k` chunks for `query`; `mode` is hybrid, bm25 or dense (`smoldocs search --mode`)."""
        ...

    def chunk(self, chunk_id: str) -> Chunk | None: ...

    def __len__(self) -> int: ...

    @property
    def fusion(self) -> str:
        """How hybrid search fuses its two rankings (one of rag.retrieval.fusion.FUSIONS)."""
        ...

    @property
    def order(self) -> str:
        """How hybrid search orders the fused hits: "learned" (rag.indexing.ordering) or "fused"."""
        ...

    @property
    def chunks(self) -> Sequence[Chunk]:
        """Every chunk, in index order (the eval finds gold chunks among them)."""
        ...

    @property
    def doc_ids(self) -> list[str] | None:
        """Every document id with a chunk, sorted; None when the index cannot list them (a filter is trusted)."""
        ...

    def source(self, doc_id: str) -> SourceInfo:
        """A document's standing: outdated or current, and its expiry."""
        ...

    def collection(self, doc_id: str) -> str:
        """The collection a document belongs to (rag.indexing.collections); "" for an index of one unnamed source."""
        ...

    @property
    def vocabulary(self) -> "DocumentFrequencies | None":
        """Document frequencies of the BM25 terms (None: the answerability rule rests on quote scores alone)."""
        ...

    @property
    def has_dense(self) -> bool:
        """True when search has its semantic half (MiniLM is installed and the index has vectors)."""
        ...

    def standout(self, query: str) -> float | None:
        """How far the chunk closest to `query` stands out: its cosine minus the fifth closest's, over every
        embedded chunk (rag.answering.answerability's `standout` signal). None where the index cannot say (no
        semantic half, fewer than five embedded chunks, a backend that does not compute it)."""
        ...

    @property
    def dense_coverage(self) -> float:
        """The share of chunks with an embedding: hybrid for those, BM25 for the rest."""
        ...

    @property
    def notice(self) -> str:
        """One line when search is missing a part; "" when it is whole."""
        ...

    @property
    def docs_dir(self) -> "Path | None":
        """The docs folder the index reads, when it reads one."""
        ...


@runtime_checkable
class IndexLifecycle(Protocol):
    """The hooks a live index needs around one answer, and what its last update did."""

    @property
    def update(self) -> Update | None:
        """What the last open or re-index did; None for an index made in memory."""
        ...

    def snapshot(self) -> "Retriever":
        """A view that stays the same for one answer, whatever re-indexing happens meanwhile."""
        ...

    def hold(self) -> Callable[[], None]:
        """Pause background indexing while an answer is written; call the result to resume."""
        ...

    def close(self) -> None:
        """Stop background work, saving what it did."""
        ...


@runtime_checkable
class Retriever(IndexReader, IndexLifecycle, Protocol):
    """An index as the session holds it: read for each answer, kept alive between them. The embedded HybridIndex,
    the live index over it and the PostgreSQL store implement both halves (IndexDefaults gives the answers of
    an index that has no more to say)."""


def _resume() -> None:
    return None


class IndexDefaults:
    """Retriever's answers for an index that has no more to say of itself: all documents current, searched whole,
    with no background work. A backend overrides what it knows better (PostgreSQL lists its chunks itself)."""

    docs_dir: "Path | None" = None
    update: Update | None = None

    def source(self, doc_id: str) -> SourceInfo:
        return SourceInfo()

    def collection(self, doc_id: str) -> str:
        return ""

    @property
    def vocabulary(self) -> "DocumentFrequencies | None":
        return None

    @property
    def has_dense(self) -> bool:
        return True

    def standout(self, query: str) -> float | None:
        return None

    @property
    def dense_coverage(self) -> float:
        return 1.0

    @property
    def notice(self) -> str:
        return ""

    def snapshot(self) -> Self:
        return self

    def hold(self) -> Callable[[], None]:
        return _resume

    def close(self) -> None:
        return None


class RetrieverDefaults(IndexDefaults):
    """IndexDefaults for an index over a fixed list of chunks, kept in memory."""

    chunks: Sequence[Chunk] = ()

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def doc_ids(self) -> list[str] | None:
        return sorted({c.doc_id for c in self.chunks}) if self.chunks else None
