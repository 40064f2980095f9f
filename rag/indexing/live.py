"""A live index: searchable at once, embeddings filling in behind, re-indexed when files change.

Every search reads one immutable snapshot (a HybridIndex nobody modifies); the worker builds the next one apart and
swaps it in with one assignment, so a question pinned to a snapshot (`snapshot()`) sees the old index or the new
one, never a mix. One worker thread does all the writing, in order: a re-index after file changes first, else one
batch of missing embeddings. Changes that arrive while it is busy are coalesced into one more re-index.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Sequence

import numpy as np

from models.protocols import Embedder
from rag.indexing import store
from rag.indexing.dense import EMBED_BATCH
from rag.errors import RagError
from rag.indexing.hybrid import HybridIndex
from rag.retrieval.vocabulary import TermCounts
from rag.types import Chunk, SourceInfo, Update
from rag.indexing.build import IndexProgress, ProgressFn
from rag.indexing.fill import fill_missing, missing_rows

if TYPE_CHECKING:
    from rag.indexing.watch import FolderWatcher

READY_CHUNK_BUDGET = 0.5  # seconds of chunking before a live index is ready; the other files are chunked behind
# A re-index chunks for at most this long, then publishes what it has and goes on: a quit never waits for more,
# and searches see the folder fill in slice by slice.
REFRESH_SLICE = 5.0
# Each slice also re-reads the folder and re-saves the index, which grows with it: a slice chunks at least as long
# as the last one spent on that, so chunking keeps half the time at least. Measured on man1 (17,816 pages, load 12):
# 5 s slices chunked 25 pages in 280 s, the rest spent re-reading the pages. Capped so a refresh a caller waits for
# (MCP waits 60 s) still comes in time.
MAX_REFRESH_SLICE = 30.0
PUBLISH_EVERY = 1.0  # seconds between snapshots while embedding: search improves as it goes
SAVE_EVERY = 20.0  # seconds between checkpoints of the embeddings: a quit loses at most this much work
IDLE_WAIT = 5.0

# (progress, chunk_budget, stop) -> the folder's index now, new chunks unembedded (their embeddings left at zero)
Reopen = Callable[..., HybridIndex]


class LiveIndex:
    """A rag.types.Retriever whose index is replaced as it improves: each member reads the current snapshot. What
    only the embedded index has (term_settings, dense, ...) is the snapshot's: `snapshot()` hands it out."""

    def __init__(
        self,
        index: HybridIndex,
        embedder: Embedder | None,
        reopen: Reopen,
        progress: ProgressFn | None = None,
        publish_every: float = PUBLISH_EVERY,
        save_every: float = SAVE_EVERY,
        batch: int = EMBED_BATCH,
    ) -> None:
        self._current = index
        self.embedder = embedder
        self.reopen = reopen
        self._progress_fn = progress or (lambda event: None)
        self._told: set[str] = set()  # notices already shown: a re-index repeats the per-file ones
        self.publish_every = publish_every
        self.save_every = save_every
        self.batch = batch
        self.refreshes = 0  # re-indexes run (tests count coalescing with it)
        self.events = 0  # change notifications received
        self._lock = threading.Lock()
        self._pending = bool(index.update and index.update.pending)  # files left to chunk: a re-index first
        self._changed = False  # the pending re-index comes from file changes (announced), not catching up
        self._wake = threading.Event()
        self._asked = self._answered = 0  # refresh() tickets handed out, and the last one a re-index covered
        self._refreshed = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._matrix = np.array(index.dense.matrix, copy=True)  # the worker's copy, filled in place
        self._published = self._saved = time.monotonic()
        self._dirty = False  # embeddings computed but not saved
        self._embedding_failed = False
        self._unpublished = False  # embeddings computed but not in the snapshot yet
        self._holds = 0  # answers running: embedding waits so they get the cores
        self.slice = REFRESH_SLICE  # seconds of chunking the next re-index may spend
        # feeds `changed` (Watchers: one FolderWatcher per collection); closed with this index
        self.watcher: FolderWatcher | Watchers | None = None

    # -- reading: always one snapshot -----------------------------------------------------------------------
    def snapshot(self) -> HybridIndex:
        """The current index; it never changes, so a whole question can run against it."""
        return self._current

    def search(self, *args, **kwargs):
        return self._current.search(*args, **kwargs)

    def chunk(self, chunk_id: str):
        return self._current.chunk(chunk_id)

    def __len__(self) -> int:
        return len(self._current)

    # The rest of rag.types.Retriever, always the current snapshot's.
    @property
    def chunks(self) -> Sequence[Chunk]:
        return self._current.chunks

    @property
    def doc_ids(self) -> list[str]:
        return self._current.doc_ids

    def source(self, doc_id: str) -> SourceInfo:
        return self._current.source(doc_id)

    def collection(self, doc_id: str) -> str:
        return self._current.collection(doc_id)

    @property
    def vocabulary(self) -> TermCounts:
        return self._current.vocabulary

    @property
    def has_dense(self) -> bool:
        return self._current.has_dense

    def standout(self, query: str) -> float | None:
        return self._current.standout(query)

    @property
    def dense_coverage(self) -> float:
        return self._current.dense_coverage

    @property
    def notice(self) -> str:
        return self._current.notice

    @property
    def docs_dir(self):
        return self._current.docs_dir

    @property
    def update(self) -> Update | None:
        return self._current.update

    @property
    def fusion(self) -> str:
        return self._current.fusion

    @property
    def order(self) -> str:
        return self._current.order

    @property
    def busy(self) -> bool:
        """True while a re-index is waiting or embeddings are missing."""
        return self._pending or (self.embedder is not None and not self._embedding_failed
                                 and bool(missing_rows(self._matrix).size))

    # -- writing: one worker ----------------------------------------------------------------------------------
    def changed(self, paths: Iterable[str] = ()) -> None:
        """Files changed: re-index once the worker is free (any number of calls meanwhile make one re-index)."""
        with self._lock:
            self._pending = self._changed = True
            self.events += 1
        self._wake.set()

    def refresh(self, timeout: float | None = None) -> bool:
        """Re-index now and wait until a re-index that started after this call has finished (False: timed out, or
        the index was closed first).

        For a caller that checks the files itself (the MCP server stats them before every call) and must answer
        from the folder as it is now.
        """
        with self._lock:
            self._asked += 1
            ticket = self._asked
            self._pending = self._changed = True
            self.events += 1
        self._wake.set()
        with self._refreshed:
            self._refreshed.wait_for(lambda: self._answered >= ticket or self._stop.is_set(), timeout)
            return self._answered >= ticket

    def hold(self) -> Callable[[], None]:
        """Pause all background work until the returned function is called: an answer is being written.

        Measured on a 2,000-file folder under load: with chunking going on behind it, the first token came 55 s
        after the prompt, against 14 s after a blocking build.
        """
        with self._lock:
            self._holds += 1
        released = threading.Event()

        def release() -> None:
            if not released.is_set():
                released.set()
                with self._lock:
                    self._holds -= 1
                self._wake.set()

        return release

    def gone(self, root=None) -> None:
        """The docs folder disappeared: say so once; the last good snapshot stays in use."""
        self.emit(IndexProgress("notice", message=gone_message(root or self._current.docs_dir)))

    def emit(self, event: IndexProgress) -> None:
        """Pass progress on; a notice is said once (until a re-index succeeds, for a folder that was gone)."""
        if event.stage == "notice":
            if event.message in self._told:
                return
            self._told.add(event.message)
        self._progress_fn(event)

    def step(self) -> str:
        """One unit of work: "refresh", "embed" (one batch) or "idle"."""
        if self._holds:  # an answer is being written: it gets the cores; its snapshot is pinned anyway
            self._finish()
            return "idle"
        with self._lock:
            refresh, self._pending = self._pending, False
            announce, self._changed = self._changed, False
            covers = self._asked
        if refresh:
            try:
                self._refresh(announce)
            finally:
                with self._refreshed:
                    self._answered = covers
                    self._refreshed.notify_all()
            return "refresh"
        if self.embedder is None or self._embedding_failed or not missing_rows(self._matrix).size:
            self._finish()
            return "idle"
        self._embed_batch(self.embedder)
        return "embed"

    def start(self) -> "LiveIndex":
        self._thread = threading.Thread(target=self._run, name="smoldocs-index", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop after the current batch and save what was embedded (a quit mid-embedding resumes next time)."""
        if self.watcher is not None:
            self.watcher.close()
        self._stop.set()
        self._wake.set()
        with self._refreshed:
            self._refreshed.notify_all()
        if self._thread is not None:
            self._thread.join()
        self._save()

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.step() == "idle":
                self._wake.wait(IDLE_WAIT)
                self._wake.clear()

    def _refresh(self, announce: bool = True) -> None:
        self._save()
        root = self._current.docs_dir
        started = time.perf_counter()
        try:
            fresh = self.reopen(self.emit, self.slice, self._stop)
        except Exception as exc:  # the folder vanished or a file went unreadable mid-way: keep the last good index
            gone = root is not None and not Path(root).is_dir()
            message = gone_message(root) if gone else f"re-index failed ({exc}); searching the last good index"
            self.emit(IndexProgress("notice", message=message))
            return
        self._told.discard(gone_message(root))
        if fresh.update and fresh.update.pending:  # the slice was spent chunking; the rest of the time went on
            overhead = time.perf_counter() - started - self.slice  # reading the folder, building BM25, saving
            self.slice = min(MAX_REFRESH_SLICE, max(REFRESH_SLICE, overhead))
        else:
            self.slice = REFRESH_SLICE
        matrix = np.array(fresh.dense.matrix, copy=True)
        carried = _carry_over(self._current, fresh, matrix)
        self._matrix = matrix
        self._dirty = carried > 0
        self.refreshes += 1
        if fresh.update and fresh.update.pending:  # more files to chunk: another slice next
            with self._lock:
                self._pending = True
        self._current = fresh.with_embeddings(matrix) if carried else fresh  # the swap: one assignment
        self._published, self._unpublished = time.monotonic(), False
        update = fresh.update
        if announce and update is not None and (update.added or update.changed or update.removed):
            self.emit(IndexProgress("notice", message=f"re-indexed: {len(update.added)} added, "
                                    f"{len(update.changed)} changed, {len(update.removed)} removed"))
        self._progress()

    def _embed_batch(self, embedder: Embedder) -> None:
        snapshot = self._current
        try:
            fill_missing(self._matrix, snapshot.chunks, embedder, budget=None, batch=self.batch,
                         stop=self._stop, limit=self.batch)
        except Exception as exc:
            self._embedding_failed = True
            self.emit(IndexProgress("notice", message=f"embedding stopped ({exc}); search stays BM25 for the rest"))
            return
        self._dirty = self._unpublished = True
        now = time.monotonic()
        if now - self._published >= self.publish_every or not missing_rows(self._matrix).size:
            self._publish()
        if now - self._saved >= self.save_every:
            self._save()
        self._progress()

    def _finish(self) -> None:
        if self._unpublished:
            self._publish()
        self._save()

    def _publish(self) -> None:
        self._current = self._current.with_embeddings(self._matrix)
        self._published = time.monotonic()
        self._unpublished = False

    def _save(self) -> None:
        """Write the embedding rows computed so far into the stored index (atomically), if any are new."""
        if not self._dirty:
            return
        snapshot = self._current
        # Several collections joined: each saves its own rows into its own stored index, under its own ids.
        parts = snapshot.parts or ((snapshot.index_dir, 0, [c.chunk_id for c in snapshot.chunks]),)
        try:
            for index_dir, start, chunk_ids in parts:
                if index_dir is not None:
                    store.save_embeddings(index_dir, self._matrix[start:start + len(chunk_ids)], chunk_ids)
        except OSError as exc:
            self.emit(IndexProgress("notice", message=f"cannot save embeddings in {snapshot.index_dir} "
                                    f"({exc.strerror or exc}); they are kept in memory"))
        self._dirty = False
        self._saved = time.monotonic()

    def _progress(self) -> None:
        total = len(self._matrix)
        done = total - int(missing_rows(self._matrix).size)
        self.emit(IndexProgress("embed", done, total))


def gone_message(root) -> str:
    return f"docs folder {root} is gone (deleted or unmounted); searching the last good index"


def _carry_over(old: HybridIndex, new: HybridIndex, matrix: np.ndarray) -> int:
    """Copy embeddings the old snapshot has and the new one lacks, for chunks with the same id and text."""
    carried = 0
    old_rows = {c.chunk_id: row for row, c in enumerate(old.chunks)}
    for row in missing_rows(matrix).tolist():
        chunk = new.chunks[row]
        old_row = old_rows.get(chunk.chunk_id)
        if old_row is None or old.chunks[old_row] != chunk:
            continue
        if old.embedded[old_row]:
            matrix[row] = old.dense.matrix[old_row]
            carried += 1
    return carried


def open_live_index(
    docs_dir, tokenizer, embedder: Embedder | None, index_dir=None, progress: ProgressFn | None = None,
    watch: bool = True, **search_options,
) -> LiveIndex:
    """The index of `docs_dir` ready as soon as it is chunked, embedding and (with `watch`) re-indexing behind.

    The caller owns it: `close()` stops the watcher and the worker and saves the embeddings made so far.
    """
    from rag.indexing.build import open_index
    from rag.indexing.collections import Collections, open_collections
    from rag.indexing.watch import FolderWatcher

    def reopen(emit: ProgressFn | None = None, chunk_budget: float | None = None, stop=None) -> HybridIndex:
        if isinstance(docs_dir, Collections):  # several sources: each its own stored index, searched as one
            return open_collections(docs_dir, tokenizer, embedder, progress=emit, embed_budget=0,
                                    chunk_budget=chunk_budget, stop=stop, **search_options)
        return open_index(docs_dir, tokenizer, embedder, index_dir=index_dir, progress=emit, embed_budget=0,
                          chunk_budget=chunk_budget, stop=stop, **search_options)

    told: list[str] = []
    show = progress or (lambda event: None)
    ready = 0.0 if _all_stored(docs_dir, index_dir) else READY_CHUNK_BUDGET
    index = reopen(lambda e: told.append(e.message) if e.stage == "notice" else show(e), ready)
    live = LiveIndex(index, embedder, reopen, progress=progress)
    for message in told:  # passed on through the live index, so a re-index does not repeat them
        live.emit(IndexProgress("notice", message=message))
    from rag.ingest.man_pages import ManSource

    # --man's pages change only when packages are installed, and their root may be "/" (several man trees).
    if watch and isinstance(docs_dir, Collections):
        folders = [c for c in docs_dir if not isinstance(c.source, ManSource) and Path(c.source).is_dir()]
        live.watcher = Watchers([FolderWatcher(Path(c.source).resolve(), live.changed, live.gone,
                                               ignore_paths=[c.index_dir] if c.index_dir else []).start()
                                 for c in folders]) if folders else None
    elif watch and index.docs_dir is not None and not isinstance(docs_dir, ManSource):
        ignored = [index.index_dir] if index.index_dir is not None else []
        live.watcher = FolderWatcher(index.docs_dir, live.changed, live.gone, ignore_paths=ignored).start()
    return live.start()


def _all_stored(docs_dir, index_dir) -> bool:
    """True when every source has a stored index: it then opens as stored, chunking nothing before it is ready.

    Chunking even one new file at start builds BM25 again over every chunk: on man1 with 8,530 pages stored
    (84,437 chunks) a warm start took 29.4 s that way, most of it the rebuild; as stored, the BM25 postings are
    read back and new files are chunked behind, as on a first start.
    """
    from rag.indexing.collections import Collections
    from rag.ingest.corpus import check_docs_dir, default_docs_dir

    docs_dir = default_docs_dir() if docs_dir is None else docs_dir
    pairs = [(c.source, c.index_dir) for c in docs_dir] if isinstance(docs_dir, Collections) else [(docs_dir, index_dir)]
    try:
        for source, where in pairs:
            folder = Path(where).expanduser() if where is not None else store.default_index_dir(check_docs_dir(source))
            if not (folder / store.MANIFEST).is_file():
                return False
    except (OSError, RagError):
        return False
    return True


class Watchers:
    """The folder watchers of several collections, closed together; `ready` once every one is armed."""

    def __init__(self, watchers: list) -> None:
        self.watchers = watchers
        self.ready = _AllSet([w.ready for w in watchers])

    def close(self) -> None:
        for w in self.watchers:
            w.close()


class _AllSet:
    def __init__(self, events: list[threading.Event]) -> None:
        self.events = events

    def is_set(self) -> bool:
        return all(e.is_set() for e in self.events)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        return all(e.wait(None if deadline is None else max(0.0, deadline - time.monotonic())) for e in self.events)
