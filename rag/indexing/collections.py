"""Several docs sources in one index: named collections, each indexed and cached on its own, searched as one.

Ids: an index of one source keeps that source's ids (`docs/kv-cache.md#3`). When several sources are named, every
document id becomes `<collection>:<id>` (`notes:todo.md`, chunk `notes:todo.md#2`): two sources' README.md stay
apart, an id says where it came from, and it does not change when another source is added or fails to open. The
`uri` a citation shows is the source's own (`ls(1)`, `todo.md`); the hit's `collection` says which source.

Each source keeps its own stored index (its cache folder, `--man`'s per choice of sections), so adding a source
re-reads nothing of the others. Joined, BM25 scores each source's rows with that source's IDF
(rag.indexing.bm25.ShardedBM25) and the dense half is one matrix; fusion then ranks all rows together.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from rag.errors import DocsNotFound, RagError
from rag.ingest.man_pages import ManSource, man_source
from rag.indexing.bm25 import BM25Index, ShardedBM25
from rag.indexing.hybrid import HybridIndex
from rag.retrieval.vocabulary import DocumentFrequencies
from rag.types import Chunk, Hit, Retriever, SourceInfo, Update

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
SEPARATOR = ":"  # between a collection's name and a document's own id
MAN_PREFIX = "man:"  # `man:` every section of `manpath`, `man:1,8` some sections, as `--man 1,8`


class UnknownCollection(RagError):
    """A collection filter names no collection of the index."""


@dataclass(frozen=True)
class Collection:
    """One named source: a docs folder, or `--man`'s pages, with where its index is stored (None: the default)."""

    name: str
    source: Path | ManSource
    index_dir: Path | None = None
    problem: str | None = None  # why the source could not even be found (`man:` on a machine without man pages)


@dataclass(frozen=True)
class Collections:
    """The sources one index searches, in order; their names are unique."""

    items: tuple[Collection, ...]

    def __iter__(self) -> Iterator[Collection]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __str__(self) -> str:
        return ", ".join(f"{c.name} ({c.source})" for c in self.items)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.items]

    @property
    def joined(self) -> bool:
        """True when ids carry their collection's name (more than one source)."""
        return len(self.items) > 1


def check_name(name: str) -> str:
    """A collection name as given, or one clear error: it becomes part of every id, so it is kept plain."""
    if not NAME.match(name):
        raise DocsNotFound(
            f"collection name {name!r} is not usable: use letters, digits, '.', '_' or '-' (at most 64), "
            "starting with a letter or digit, e.g. notes"
        )
    return name


def source_of(spec: str | os.PathLike[str] | ManSource) -> Path | ManSource:
    """What a `--docs` value or a settings file's collection names: `man:` / `man:1,8` (the man pages of
    `--man`), else a folder (`~` expanded; checked when it is opened, so a missing one is one notice)."""
    if isinstance(spec, ManSource):
        return spec
    text = str(spec)
    if text == MAN_PREFIX.rstrip(":") or text.startswith(MAN_PREFIX):
        return man_source(text[len(MAN_PREFIX):] or None)
    if not text.strip():
        raise DocsNotFound("--docs is empty: pass --docs DIR to a folder of docs, or leave it out for the bundled docs")
    return Path(text).expanduser()


def default_name(source: Path | ManSource) -> str:
    """A source's name when none is given: `man` for man pages, else the folder's name made plain."""
    if isinstance(source, ManSource) or str(source).split(":")[0] == "man":
        return "man"
    base = Path(os.path.abspath(source)).name or "docs"
    plain = re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-.") or "docs"
    return plain[:64]


def collections_of(named: Sequence[tuple[str | None, str | os.PathLike[str] | ManSource]],
                   index_dir: str | os.PathLike[str] | None = None) -> Collections:
    """Collections from (name or None, source spec) pairs; a repeated name gets `-2`, `-3`. With `index_dir`,
    one source's index is stored there, several sources' in `index_dir/<name>`."""
    taken: set[str] = set()
    folders: dict[str, str] = {}  # real path -> the collection that reads it
    items = []
    for name, spec in named:
        problem = None
        try:
            source = source_of(spec)
        except DocsNotFound as exc:
            if len(named) == 1:
                raise
            source, problem = Path(str(spec)), str(exc)  # one notice when opened; the others still answer
        if isinstance(source, Path) and problem is None:
            real = os.path.realpath(source)
            if real in folders:  # both would hold the same documents under two names, each hit twice
                raise DocsNotFound(f"{source} is named twice (as {folders[real]} too): give each folder once")
        base = check_name(name) if name else default_name(source)
        if name and name in taken:
            raise DocsNotFound(f"collection {name!r} is named twice: give each collection its own name")
        unique, n = base, 1
        while unique in taken:
            n += 1
            unique = f"{base}-{n}"
        taken.add(unique)
        if isinstance(source, Path) and problem is None:
            folders[os.path.realpath(source)] = unique
        items.append(Collection(unique, source, problem=problem))
    return Collections(tuple(replace(c, index_dir=_index_dir(c, index_dir, len(items))) for c in items))


def _index_dir(collection: Collection, index_dir, count: int) -> Path | None:
    if index_dir is not None:
        root = Path(index_dir).expanduser()
        return root if count == 1 else root / collection.name
    if isinstance(collection.source, ManSource):  # `--man 1` and `--man 8` keep two indexes, as --man does
        from rag.indexing.store import cache_dir

        return cache_dir() / "indexes" / collection.source.index_key
    return None  # open_index's default: a cache folder per docs folder


def open_collections(collections: Collections, tokenizer, embedder, progress=None, **options) -> HybridIndex:
    """One index over every collection (rag.indexing.build.open_index's options apply to each).

    A source that cannot be opened (missing, unreadable, no text in it) is one notice, and the others answer;
    DocsNotFound, naming each reason, when none opens.
    """
    from rag.indexing.build import IndexProgress, open_index

    emit = progress or (lambda event: None)
    opened: list[tuple[Collection, HybridIndex]] = []
    failures: list[str] = []
    for c in collections:
        try:
            if c.problem:
                raise DocsNotFound(c.problem)
            index = open_index(c.source, tokenizer, embedder, index_dir=c.index_dir, progress=progress,
                               collection=c.name, **options)
        except (RagError, OSError) as exc:
            if not collections.joined:
                raise
            reason = f"collection {c.name} ({c.source}): {exc}"
            failures.append(reason)
            emit(IndexProgress("notice", message=f"{reason}; searching the other collections"))
            continue
        opened.append((c, index))
    if not collections.joined:
        return opened[0][1]
    if not opened:
        raise DocsNotFound("no collection could be opened: " + "; ".join(failures))
    return join(opened)


def join(opened: Sequence[tuple[Collection, HybridIndex]]) -> HybridIndex:
    """The indexes of several collections as one, every id prefixed with its collection's name."""
    chunks: list[Chunk] = []
    matrices: list[np.ndarray] = []
    bm25: list[BM25Index | ShardedBM25] = []
    sources: dict[str, SourceInfo] = {}
    names: dict[str, str] = {}
    parts: list[tuple[Path | None, int, list[str]]] = []
    for c, index in opened:
        prefix = c.name + SEPARATOR
        parts.append((index.index_dir, len(chunks), [ch.chunk_id for ch in index.chunks]))
        chunks.extend(replace(ch, chunk_id=prefix + ch.chunk_id, doc_id=prefix + ch.doc_id) for ch in index.chunks)
        matrices.append(index.dense.matrix)
        bm25.append(index.bm25)
        for doc_id in index.doc_ids:
            sources[prefix + doc_id] = index.source(doc_id)
            names[prefix + doc_id] = c.name
    first = opened[0][1]
    dims = {m.shape[1] for m in matrices}
    # A source whose stored vectors are of another width cannot join the dense half: BM25 for all of them then.
    embeddings = np.concatenate(matrices) if len(dims) == 1 else np.zeros((len(chunks), 0), dtype=np.float32)
    joined = HybridIndex(
        chunks, embeddings.astype(np.float32, copy=False), first.embedder if len(dims) == 1 else None,
        term_settings=first.term_settings, fusion=first.fusion, bm25_weight=first.bm25_weight,
        min_dense_score=first.min_dense_score, bm25=ShardedBM25(bm25), sources=sources,
        current_only=first.current_only, collections=names,
    )
    joined.parts = tuple(parts)
    joined.update = joined_update([(c.name, index.update) for c, index in opened])
    return joined


def joined_update(updates):
    """What opening several collections did, as one rag.indexing.build.IndexUpdate (ids prefixed)."""
    from rag.indexing.build import IndexUpdate

    def ids(field: Callable[[Update], Sequence[str]]) -> tuple[str, ...]:
        return tuple(f"{name}{SEPARATOR}{d}" for name, u in updates if u is not None for d in field(u))

    real = [u for _, u in updates if u is not None]
    skipped: dict[str, int] = {}
    for u in real:
        for why, n in u.skipped.items():
            skipped[why] = skipped.get(why, 0) + n
    return IndexUpdate(
        index_dir=real[0].index_dir if real else Path(),
        rebuilt=bool(real) and all(u.rebuilt for u in real),
        reason="; ".join(f"{name}: {u.reason}" for name, u in updates if u is not None and u.reason),
        added=ids(lambda u: u.added), changed=ids(lambda u: u.changed), removed=ids(lambda u: u.removed),
        pending=ids(lambda u: u.pending),
        unchanged=sum(u.unchanged for u in real), chunks=sum(u.chunks for u in real),
        chunks_embedded=sum(u.chunks_embedded for u in real), skipped=skipped,
        seconds=sum(u.seconds for u in real), embed_seconds=sum(u.embed_seconds for u in real),
        parts=real[0].parts if real and all(u.parts == real[0].parts for u in real) else ("bm25",),
        refreshed=any(u.refreshed for u in real), dense_missing=sum(u.dense_missing for u in real),
    )


def collection_doc_ids(retriever: Retriever, names: Sequence[str]) -> list[str] | None:
    """The documents of the named collections, for a `doc_ids` filter; None when they are the whole index.

    UnknownCollection, listing the index's collections, for a name it does not have.
    """
    if not names:
        return None  # before listing: a store of 92k documents took 58 ms a listing
    known = retriever.doc_ids
    if known is None:
        return None
    have = {retriever.collection(d) for d in known}
    missing = [n for n in names if n not in have]
    if missing:
        listed = ", ".join(sorted(h for h in have if h)) or "none: this index has no named collections"
        raise UnknownCollection(f"unknown collection {', '.join(map(repr, missing))}: the collections are {listed}")
    wanted = set(names)
    if have <= wanted:
        return None
    return [d for d in known if retriever.collection(d) in wanted]


def narrowed(doc_ids: Sequence[str] | None, allowed: list[str] | None) -> list[str] | None:
    """A `doc_ids` filter within a collection filter's documents: [] when they share none (nothing to search)."""
    if allowed is None:
        return list(doc_ids) if doc_ids else None
    if not doc_ids:
        return allowed
    inside = set(allowed)
    return [d for d in doc_ids if d in inside]


class Within:
    """A retriever that searches only the named collections: `--collection` for a whole session.

    The documents are looked up at each search, so a file added to a collection by a live re-index is found.
    The rest of the Retriever protocol is the wrapped retriever's.
    """

    def __init__(self, retriever: Retriever, names: Sequence[str]) -> None:
        self.retriever = retriever
        self.names = list(names)
        collection_doc_ids(retriever, self.names)  # an unknown name is one clear error now, not at the first search

    def _allowed(self) -> list[str] | None:
        return collection_doc_ids(self.retriever, self.names)

    def search(self, query: str, k: int = 5, doc_ids: Sequence[str] | None = None, mode: str = "hybrid") -> list[Hit]:
        ids = narrowed(doc_ids, self._allowed())
        return [] if ids == [] else self.retriever.search(query, k=k, doc_ids=ids, mode=mode)

    def chunk(self, chunk_id: str):
        chunk = self.retriever.chunk(chunk_id)
        return chunk if chunk is not None and self.retriever.collection(chunk.doc_id) in self.names else None

    @property
    def chunks(self):
        return [c for c in self.retriever.chunks if self.retriever.collection(c.doc_id) in self.names]

    @property
    def doc_ids(self) -> list[str] | None:
        allowed = self._allowed()
        return self.retriever.doc_ids if allowed is None else allowed

    def __len__(self) -> int:
        return len(self.retriever)

    def snapshot(self) -> "Within":
        return Within(self.retriever.snapshot(), self.names)

    # The rest of rag.types.Retriever is the wrapped retriever's: the whole index's standing, vocabulary and life.
    def source(self, doc_id: str) -> SourceInfo:
        return self.retriever.source(doc_id)

    def collection(self, doc_id: str) -> str:
        return self.retriever.collection(doc_id)

    @property
    def fusion(self) -> str:
        return self.retriever.fusion

    @property
    def order(self) -> str:
        return self.retriever.order

    @property
    def vocabulary(self) -> DocumentFrequencies | None:
        return self.retriever.vocabulary

    @property
    def has_dense(self) -> bool:
        return self.retriever.has_dense

    def standout(self, query: str) -> float | None:
        return self.retriever.standout(query)

    @property
    def dense_coverage(self) -> float:
        return self.retriever.dense_coverage

    @property
    def notice(self) -> str:
        return self.retriever.notice

    @property
    def docs_dir(self) -> Path | None:
        return self.retriever.docs_dir

    @property
    def update(self) -> Update | None:
        return self.retriever.update

    def hold(self) -> Callable[[], None]:
        return self.retriever.hold()

    def close(self) -> None:
        self.retriever.close()
