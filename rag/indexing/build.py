"""Opening the index of a docs folder: load it if fresh, else re-chunk and re-embed only what changed."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from models.locate import SEMANTIC_OFF
from models.protocols import Embedder, Tokenizer
from rag.indexing import store
from rag.ingest.chunking import ChunkSettings, chunk_layout, indexed_text
from rag.ingest.corpus import Document, check_docs_dir, default_docs_dir, load_corpus
from rag.errors import IndexCorrupt, IndexDirNotFolder, IndexNotSaved, Unreadable
from rag.ingest.formats import read_layout, reader_of
from rag.indexing.bm25 import IDF_NAME, BM25Index
from rag.indexing.hybrid import CANDIDATE_DEPTH, HybridIndex
from rag.indexing.dense import embedded_rows
from rag.indexing.fill import fill_missing
from rag.ingest.sources import source_info
from rag.retrieval.terms import TERMS_VERSION, TermSettings
from rag.types import Chunk

EMBEDDED_TEXT = "heading-path+text/v1"  # what each embedding row was computed from; part of the settings
# `smoldocs index` saves the embeddings made so far this often: a killed run loses at most this much work.
EMBED_CHECKPOINT_SECONDS = 20.0


@dataclass(frozen=True)
class IndexProgress:
    """One step of opening an index, for a progress bar. `notice` events carry a one-line message.

    Every stage reports as it goes: scan per file found, chunk per file (before it starts, naming it, since one
    big file can take a while), embed per batch, save at start and end.
    """

    stage: str  # "scan" | "chunk" | "read" (pages of one long file) | "embed" | "save" | "notice" | "done"
    done: int = 0
    total: int = 0  # 0: not known yet (scanning)
    message: str = ""  # a notice's text; for "chunk", the file being chunked
    rate: float = 0.0  # items per second so far in this stage


ProgressFn = Callable[[IndexProgress], None]


@dataclass(frozen=True)
class IndexUpdate:
    """What open_index did: loaded as is, updated some files, or rebuilt everything (and why)."""

    index_dir: Path | str  # a PostgreSQL store: its URL, password hidden
    rebuilt: bool
    reason: str  # why everything was rebuilt; "" otherwise
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    embed_seconds: float = 0.0
    parts: tuple[str, ...] = ("bm25", "dense")  # which halves the index has: no "dense" without MiniLM
    refreshed: bool = False  # the dense half was added or dropped, or the list of unreadable files changed
    dense_missing: int = 0  # chunks still without an embedding (progressive indexing fills them in later)
    pending: tuple[str, ...] = ()  # files not chunked yet (chunk_budget spent): not searchable until a later run

    @property
    def files(self) -> int:
        return len(self.added) + len(self.changed) + self.unchanged

    @property
    def modified(self) -> bool:
        """True when the stored index was (re)written."""
        return self.rebuilt or self.refreshed or bool(self.added or self.changed or self.removed or self.chunks_embedded)

    def summary(self) -> str:
        """One line for the CLI: files, chunks, what changed, how long."""
        if self.rebuilt:
            what = f"rebuilt ({self.reason})"
        elif self.chunks_embedded and not (self.added or self.changed or self.removed or self.refreshed):
            what = "resumed embedding"
        elif self.modified:
            what = f"updated: {len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed"
        else:
            what = "up to date"
        rate = f", {self.chunks_embedded / self.embed_seconds:.0f} chunks/s" if self.embed_seconds > 0 else ""
        skipped = sum(self.skipped.values())
        if self.dense_missing:
            rate += f" ({self.dense_missing} left to embed: search ranks them by BM25 until then)"
        embedded = f"embedded {self.chunks_embedded} chunks{rate}" if "dense" in self.parts else "BM25 only"
        if self.pending:
            embedded += f"; {len(self.pending)} files left to chunk"
        return f"{self.files} files, {self.chunks} chunks; {what}; {embedded}; {skipped} files skipped; {self.seconds:.2f} s"


DENSE_KEYS = ("embedding_model", "embedding_dim", "embedded_text")


def index_settings(tokenizer: Tokenizer, embedder: Embedder | None, chunking: ChunkSettings) -> dict:
    """Everything the stored chunks and embeddings depend on besides the files themselves.

    Without an embedder the dense keys are None: the index holds its BM25 half only, and the chunks stay
    reusable when an embedder appears (only the embeddings are then computed).
    """
    return {
        "tokenizer": tokenizer.name,
        "chunker": chunking.to_dict(),
        "embedding_model": embedder.model_id if embedder is not None else None,
        "embedding_dim": int(embedder.dim) if embedder is not None else 0,
        "embedded_text": EMBEDDED_TEXT if embedder is not None else None,
    }


def open_index(
    docs_dir: str | os.PathLike[str] | None,
    tokenizer: Tokenizer,
    embedder: Embedder | None,
    index_dir: str | os.PathLike[str] | None = None,
    progress: ProgressFn | None = None,
    rebuild: bool = False,
    chunking: ChunkSettings = ChunkSettings(),
    must_save: bool = False,
    embed_budget: float | None = None,
    embed_first: str | None = None,
    chunk_budget: float | None = None,
    stop: threading.Event | None = None,
    **search_options,
) -> HybridIndex:
    """The ready index of `docs_dir` (None: the bundled docs_corpus/), updated and saved if files changed.

    When it cannot be saved, a search can still use it from memory (one notice); with `must_save` (the `index`
    command, whose whole point is saving) that is IndexNotSaved instead. Either way the previous index is intact.
    Chunks without an embedding (new ones, ones a stopped run left, or all of them when MiniLM was just
    installed) are embedded for at most `embed_budget` seconds (None: all of them, 0: none), the BM25 candidates
    of `embed_first` (a query) before the rest; those left rank by BM25 alone until rag.indexing.fill or the next run
    fills them in. With `chunk_budget`, new or changed files not chunked within that many seconds (or once `stop`
    is set) are left out (`update.pending`) for a later run.
    `embedder` None: BM25 only, with a notice saying how to turn semantic search on. `search_options` go to
    HybridIndex (fusion, term_settings, min_dense_score, bm25_weight, current_only).
    """
    started = time.perf_counter()
    emit = progress or (lambda event: None)
    root = check_docs_dir(docs_dir if docs_dir is not None else default_docs_dir())
    target = Path(index_dir).expanduser().resolve() if index_dir is not None else store.default_index_dir(root)
    misplaced = _index_dir_problem(target)
    if misplaced and must_save:  # `smoldocs index` saves or fails: say why at once, before any work
        raise IndexDirNotFolder(f"{misplaced}: give --index a folder")
    wanted = index_settings(tokenizer, embedder, chunking)
    stored, reason, donor = _previous(target, wanted, rebuild, emit)
    if stored is not None and embedder is None:
        wanted = wanted | {k: stored.settings.get(k) for k in DENSE_KEYS}  # kept, never thrown away
    emit(IndexProgress("scan", 0, 0))
    corpus = load_corpus(root, on_document=lambda n: emit(IndexProgress("scan", n, 0)), known=_known_manuals(stored))
    emit(IndexProgress("scan", len(corpus.documents), len(corpus.documents)))
    dense_kept = stored is not None and all(stored.settings.get(k) == wanted[k] for k in DENSE_KEYS)
    if embedder is None:
        emit(IndexProgress("notice", message=SEMANTIC_OFF))

    old_files = stored.files if stored is not None else {}
    old_skips = stored.skipped_files if stored is not None else {}
    chunked = _chunk_documents(corpus.documents, stored, dense_kept, tokenizer, chunking, emit, chunk_budget, stop)
    fresh, pending, skips = chunked.fresh, chunked.pending, chunked.skips
    skipped = dict(corpus.skipped)
    for memo in skips.values():
        skipped[memo["reason"]] = skipped.get(memo["reason"], 0) + 1

    indexed = [d for d in corpus.documents if d.doc_id in chunked.doc_chunks]
    dim = int(embedder.dim) if embedder is not None else int(wanted["embedding_dim"] or 0)
    # Chunks without stored vectors start as zero rows (no embedding yet): BM25 is ready now, and
    # rag.indexing.fill fills the dense half within `embed_budget`, the rest later.
    chunks, embeddings, files = _assemble(indexed, chunked.doc_chunks, chunked.kept_vectors, dim)
    if donor is not None:
        _carry_vectors(chunks, embeddings, donor, emit)
    sources = {d.doc_id: source_info(d.doc_id, d.text) for d in corpus.documents}
    for doc_id, info in sources.items():
        if info.notice:
            emit(IndexProgress("notice", message=f"{doc_id}: {info.notice}"))
    terms_wanted = search_options.get("term_settings", TermSettings()).to_dict() | {"idf": IDF_NAME, "version": TERMS_VERSION}
    same_chunks = stored is not None and not fresh and set(old_files) == set(files)
    reusable = stored is not None and same_chunks and stored.bm25_terms == terms_wanted
    bm25 = stored.bm25 if stored is not None and reusable else None  # else HybridIndex builds it from the chunks
    index = HybridIndex(
        chunks, embeddings, embedder, docs_dir=root, index_dir=target, bm25=bm25, sources=sources, **search_options
    )
    restamped = stored is not None and any(entry.get("stamps") != old_files.get(doc_id, {}).get("stamps")
                                           for doc_id, entry in files.items())  # else read again next time
    # Nothing but embeddings can differ from the stored index: only they need writing (store.save_embeddings).
    as_stored = reusable and dense_kept and skips == old_skips and not restamped
    checkpoint = None
    if must_save and embedder is not None and not index.embedded.all():  # a long run: keep its progress if killed
        if not as_stored:
            _save(target, wanted, files, chunks, embeddings, index, terms_wanted, skips, must_save, emit, misplaced)
        checkpoint = _checkpoints(target, embeddings, [c.chunk_id for c in chunks])
    index, embedded, embed_seconds = _embed_missing(
        index, chunks, embeddings, embedder, embed_budget, embed_first, emit, checkpoint
    )
    removed = tuple(sorted(set(old_files) - set(files) - set(pending)))
    update = IndexUpdate(
        index_dir=target,
        rebuilt=stored is None,
        reason=reason,
        added=tuple(d for d in fresh if d not in old_files),
        changed=tuple(d for d in fresh if d in old_files),
        removed=removed,
        unchanged=len(indexed) - len(fresh),
        chunks=len(chunks),
        chunks_embedded=embedded,
        skipped=skipped,
        embed_seconds=embed_seconds,
        parts=("bm25", "dense") if embedder is not None else ("bm25",),
        refreshed=stored is not None and (not dense_kept or skips != old_skips),
        dense_missing=int((~index.embedded).sum()) if embedder is not None else 0,
        pending=tuple(pending),
    )
    if as_stored and embedded:
        if not _save_embeddings(target, embeddings, chunks, emit):
            _save(target, wanted, files, chunks, embeddings, index, terms_wanted, skips, must_save, emit, misplaced)
    elif update.modified or restamped or (stored is not None and stored.bm25_terms != terms_wanted):
        _save(target, wanted, files, chunks, embeddings, index, terms_wanted, skips, must_save, emit, misplaced)
    index.update = replace(update, seconds=time.perf_counter() - started)
    emit(IndexProgress("done", len(chunks), len(chunks), index.update.summary()))
    return index


@dataclass
class _Chunked:
    """What one pass over the corpus found: each readable document's chunks, the vectors kept from the stored
    index, the documents chunked anew, those left for a later run, and the files no format could read."""

    doc_chunks: dict[str, list[Chunk]]
    kept_vectors: dict[str, np.ndarray]
    fresh: list[str]
    pending: list[str]
    skips: dict[str, dict]


def _chunk_documents(documents, stored, dense_kept: bool, tokenizer: Tokenizer, chunking: ChunkSettings, emit,
                     chunk_budget: float | None, stop: threading.Event | None) -> _Chunked:
    """Chunk new and changed files (within `chunk_budget`), reuse unchanged ones' chunks and vectors."""
    old_files = stored.files if stored is not None else {}
    old_skips = stored.skipped_files if stored is not None else {}
    old_rows = {c.chunk_id: row for row, c in enumerate(stored.chunks)} if stored is not None else {}
    out = _Chunked({}, {}, [], [], {})  # skips: remembered so an unchanged unreadable file is not read again
    chunk_started = time.perf_counter()
    for n, doc in enumerate(documents, start=1):
        emit(IndexProgress("chunk", n - 1, len(documents), message=doc.doc_id))
        entry = old_files.get(doc.doc_id)
        memo = old_skips.get(doc.doc_id)
        reader = reader_of(doc.doc_id)
        if entry is not None and entry["sha256"] == doc.sha256 and entry.get("reader") == reader:
            out.doc_chunks[doc.doc_id] = [stored.chunks[old_rows[cid]] for cid in entry["chunks"]]
            if dense_kept:
                out.kept_vectors[doc.doc_id] = stored.embeddings[[old_rows[cid] for cid in entry["chunks"]]]
        elif memo is not None and memo.get("sha256") == doc.sha256 and memo.get("reader") == reader:
            out.skips[doc.doc_id] = memo
        elif (chunk_budget is not None and time.perf_counter() - chunk_started >= chunk_budget) or (
            stop is not None and stop.is_set()
        ):
            out.pending.append(doc.doc_id)  # new or changed, left for a later run once `chunk_budget` is spent
        else:
            try:
                layout = read_layout(doc.doc_id, doc.path, doc.text, doc.sha256, _page_progress(emit, doc.doc_id))
            except Unreadable as exc:
                out.skips[doc.doc_id] = _stamp({"sha256": doc.sha256, "reason": exc.reason}, reader)
            else:
                out.doc_chunks[doc.doc_id] = chunk_layout(doc.doc_id, layout, tokenizer, chunking.max_tokens)
                out.fresh.append(doc.doc_id)
        emit(IndexProgress("chunk", n, len(documents), message=doc.doc_id))
    return out


def _embed_missing(index: HybridIndex, chunks, embeddings: np.ndarray, embedder: Embedder | None,
                   embed_budget: float | None, embed_first: str | None, emit,
                   checkpoint: Callable[[], None] | None = None) -> tuple[HybridIndex, int, float]:
    """Embed chunks that have no vector yet, `embed_first`'s BM25 candidates first, for at most `embed_budget` s;
    `checkpoint` is called after every batch."""
    if embedder is None:
        return index, 0, 0.0
    embed_started = time.perf_counter()
    first = index.rank_bm25(embed_first, CANDIDATE_DEPTH).rows.tolist() if embed_first else ()

    def on_batch(done: int, total: int, secs: float) -> None:
        emit(IndexProgress("embed", done, total, rate=done / max(secs, 1e-9)))
        if checkpoint is not None:
            checkpoint()

    embedded = fill_missing(embeddings, chunks, embedder, budget=embed_budget, first=first, on_batch=on_batch)
    if not embedded:
        return index, 0, 0.0
    return index.with_embeddings(embeddings), embedded, time.perf_counter() - embed_started


def _save(target: Path, wanted, files, chunks, embeddings, index: HybridIndex, terms_wanted, skips, must_save: bool, emit,
          misplaced: str | None = None) -> None:
    """Save the index atomically; when it cannot be saved, say so (or raise IndexNotSaved with `must_save`).
    `misplaced`: why the location cannot hold an index (a file where a folder should be), when known."""
    emit(IndexProgress("save", 0, 1))
    if not isinstance(index.bm25, BM25Index):  # a joined index is never saved whole: each collection saves its own
        raise TypeError("a joined index is saved one collection at a time")
    try:
        store.save(target, wanted, files, chunks, embeddings, index.bm25, terms_wanted, skips)
    except OSError as exc:
        reason = misplaced or exc.strerror or str(exc)  # "File exists" named the wrong problem
        if must_save:
            raise IndexNotSaved(
                f"could not save the index in {target} ({reason}); the previous index is unchanged: "
                "free some space, or pass --index DIR to a writable folder"
            ) from None
        # Searching still works from memory; only the next start pays for the rebuild again.
        emit(IndexProgress("notice", message=f"cannot save the index in {target} ({reason}); "
                           "using it unsaved: pass --index DIR to a writable folder"))
    emit(IndexProgress("save", 1, 1))

def _save_embeddings(target: Path, embeddings: np.ndarray, chunks: list[Chunk], emit) -> bool:
    """Write only the embedding rows of an index whose chunks are stored already; False when that cannot be done
    (the stored index changed meanwhile, or a write failed): then the whole index is saved, which reports.

    A one-shot search embeds a few chunks of a large index: saving all its chunks and BM25 postings again took
    1.7 of the 5.7 s CPU of such a search over 2,000 man pages, and grows with the index.
    """
    emit(IndexProgress("save", 0, 1))
    try:
        saved = store.save_embeddings(target, embeddings, [c.chunk_id for c in chunks])
    except OSError:
        return False
    if saved:
        emit(IndexProgress("save", 1, 1))
    return saved


def _checkpoints(target: Path, embeddings: np.ndarray, chunk_ids: list[str]) -> Callable[[], None]:
    """A per-batch callback saving the rows embedded so far (store.save_embeddings, atomic) every
    EMBED_CHECKPOINT_SECONDS, over the index saved just before embedding began: the next run continues there."""
    last = time.monotonic()

    def checkpoint() -> None:
        nonlocal last
        if time.monotonic() - last < EMBED_CHECKPOINT_SECONDS:
            return
        with contextlib.suppress(OSError):  # a failed checkpoint costs only progress; the final save reports
            store.save_embeddings(target, embeddings, chunk_ids)
        last = time.monotonic()

    return checkpoint


def _index_dir_problem(target: Path) -> str | None:
    """Why the index cannot be saved at `target` because a file is where a folder should be, or None."""
    for path in (target, *target.parents):
        if path.exists():
            if path.is_dir():
                return None
            inside = "" if path == target else f", which holds the index location {target},"
            return f"{path}{inside} is a file, not a folder"
    return None


def _page_progress(emit: ProgressFn, doc_id: str):
    """Per-page progress of one long file (a PDF), shown as its own stage while it is read."""
    return lambda done, total: emit(IndexProgress("read", done, total, message=doc_id))


def _previous(target: Path, wanted: dict, rebuild: bool,
              emit: ProgressFn) -> tuple[store.StoredIndex | None, str, store.StoredIndex | None]:
    """The stored index if it can be reused, else None and why it cannot (announced as a notice); and, when only
    the chunking changed, the stored index as a donor of embeddings for chunks whose text is unchanged."""
    if rebuild:
        return None, "rebuild requested", None
    try:
        stored = store.load(target)
    except IndexCorrupt as exc:
        emit(IndexProgress("notice", message=f"index at {target} is unusable ({exc}); rebuilding it"))
        return None, "unusable index", None
    if stored is None:
        return None, "new index", None
    diff = sorted(k for k in set(wanted) | set(stored.settings) if wanted.get(k) != stored.settings.get(k))
    if wanted["embedding_model"] is None:  # BM25 only this time: the stored embeddings stay for the next run
        diff = [k for k in diff if k not in DENSE_KEYS]
    if any(k not in DENSE_KEYS for k in diff):
        emit(IndexProgress("notice", message=f"index settings changed ({', '.join(diff)}); rebuilding it"))
        same_vectors = wanted["embedding_model"] is not None and not any(k in DENSE_KEYS for k in diff)
        return None, f"settings changed: {', '.join(diff)}", stored if same_vectors else None
    if diff and wanted["embedding_model"] is not None:  # chunks stay; only the dense half is (re)computed
        emit(IndexProgress("notice", message=f"adding semantic search to the index ({wanted['embedding_model']})"))
    return stored, "", None


def _carry_vectors(chunks: list[Chunk], embeddings: np.ndarray, donor: store.StoredIndex, emit: ProgressFn) -> None:
    """Fill the rows of rebuilt chunks whose embedded text a stored chunk had (same model): a change of chunking
    re-embeds only the chunks it changed, not a whole man tree (hours on a laptop)."""
    done = embedded_rows(donor.embeddings)
    rows = {indexed_text(c): r for r, c in enumerate(donor.chunks) if done[r]}
    carried = 0
    for r, chunk in enumerate(chunks):
        old = rows.get(indexed_text(chunk))
        if old is not None:
            embeddings[r] = donor.embeddings[old]
            carried += 1
    if carried:
        emit(IndexProgress("notice", message=f"kept {carried} of {len(chunks)} embeddings from the previous index"))


def _known_manuals(stored: store.StoredIndex | None) -> dict[str, dict]:
    """The stored manuals load_corpus need not read again while their files are unchanged: those read as now."""
    if stored is None:
        return {}
    return {doc_id: entry for doc_id, entry in stored.files.items()
            if entry.get("stamps") and entry.get("reader") == reader_of(doc_id)}


def _stamp(entry: dict, reader: str | None) -> dict:
    """A stored file entry, naming its reader where that matters (formats.READERS)."""
    return entry | {"reader": reader} if reader else entry


def _assemble(
    documents: list[Document],
    doc_chunks: dict[str, list[Chunk]],
    kept_vectors: dict[str, np.ndarray],
    dim: int,
) -> tuple[list[Chunk], np.ndarray, dict[str, dict]]:
    """Chunks and embedding rows in document order: stored rows where still valid, zero rows (to embed) elsewhere."""
    chunks: list[Chunk] = []
    sources: list[np.ndarray] = []
    files: dict[str, dict] = {}
    for doc in documents:
        these = doc_chunks[doc.doc_id]
        if doc.doc_id in kept_vectors:
            sources.append(kept_vectors[doc.doc_id])
        else:
            sources.append(np.zeros((len(these), dim), np.float32))
        chunks.extend(these)
        entry: dict[str, object] = {"sha256": doc.sha256, "chunks": [c.chunk_id for c in these]}
        if doc.stamps:
            entry["stamps"] = [list(s) for s in doc.stamps]
        files[doc.doc_id] = _stamp(entry, reader_of(doc.doc_id))
    embeddings = np.concatenate(sources).astype(np.float32) if sources else np.zeros((0, dim), np.float32)
    return chunks, embeddings, files
