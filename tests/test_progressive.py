"""Progressive indexing with fakes: BM25 at once, embeddings behind, coverage, resume, snapshots, coalescing."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from fakes import CountingEmbedder, WordTokenizer
from rag.indexing import store
from rag.ingest.chunking import ChunkSettings
from rag.retrieval.fusion import Ranked, fuse
from rag.indexing.build import IndexProgress, open_index
from rag.indexing.live import LiveIndex
from rag.indexing.fill import fill_missing, missing_rows
from rag.indexing.watch import DocsFilter, is_temp_file


def open_(docs: Path, index_dir: Path, embedder=None, **kw):
    return open_index(docs, WordTokenizer(), embedder or CountingEmbedder(256), index_dir=index_dir,
                      chunking=ChunkSettings(max_tokens=40), **kw)


def test_budget_zero_gives_a_bm25_index_with_zero_coverage_and_saves_it(docs, tmp_path):
    embedder = CountingEmbedder(256)
    index = open_(docs, tmp_path / "i", embedder, embed_budget=0)
    assert embedder.seen == [] and index.dense_coverage == 0.0
    assert index.update.dense_missing == len(index) and "left to embed" in index.update.summary()
    hits = index.search("quantization", k=3)
    assert hits and all(h.dense_rank is None and h.bm25_rank is not None for h in hits)
    assert store.load(tmp_path / "i").embeddings.any() == False  # noqa: E712 - saved whole, rows still zero


def test_next_run_embeds_only_the_missing_rows_and_matches_a_blocking_build(docs, tmp_path):
    open_(docs, tmp_path / "i", embed_budget=0)
    embedder = CountingEmbedder(256)
    resumed = open_(docs, tmp_path / "i", embedder)
    assert resumed.dense_coverage == 1.0 and resumed.update.chunks_embedded == len(resumed)
    assert resumed.update.summary().split(";")[1].strip() == "resumed embedding"
    blocking = open_(docs, tmp_path / "j")
    np.testing.assert_array_equal(resumed.dense.matrix, blocking.dense.matrix)
    assert not open_(docs, tmp_path / "i").update.modified


def test_fill_missing_embeds_first_rows_first_and_stops_between_batches(docs, tmp_path):
    index = open_(docs, tmp_path / "i", embed_budget=0)
    matrix = np.array(index.dense.matrix)
    stop = threading.Event()
    seen: list[tuple[int, int]] = []

    def on_batch(done, total, secs):
        seen.append((done, total))
        stop.set()  # asked to stop after the first batch: the second never starts

    n = fill_missing(matrix, index.chunks, CountingEmbedder(256), first=[7, 3], batch=2, stop=stop, on_batch=on_batch)
    assert n == 2 and seen == [(2, len(index))]
    assert set(np.flatnonzero(matrix.any(axis=1))) == {3, 7}
    assert missing_rows(matrix).size == len(index) - 2


def test_unembedded_rows_rank_by_bm25_alone_not_below_embedded_ones():
    bm25 = Ranked(np.array([0, 1, 2]), np.array([2.0, 1.5, 1.0]))
    dense = Ranked(np.array([1]), np.array([0.9]))
    # Row 0 has no embedding: without the flag it would get only the BM25 share (0.5) and lose to row 1 (0.75).
    assert fuse("weighted", bm25, dense)[0][0] == 1
    unembedded = np.array([True, False, False])
    fused = fuse("weighted", bm25, dense, unembedded=unembedded)
    assert fused[0] == (0, pytest.approx(1.0)) and dict(fused)[1] == pytest.approx(0.5 * 0.5 + 0.5 * 1.0)
    rrf = dict(fuse("rrf", bm25, dense, unembedded=unembedded))
    assert rrf[0] == pytest.approx(2 / 61) and rrf[1] == pytest.approx(1 / 62 + 1 / 61)


def test_partial_index_mixes_hybrid_and_bm25_hits(docs, tmp_path):
    full = open_(docs, tmp_path / "i")
    half = np.array(full.dense.matrix)
    half[::2] = 0
    partial = full.with_embeddings(half)
    assert 0.4 < partial.dense_coverage < 0.6 and full.dense_coverage == 1.0
    for hit in partial.search("how do I quantize a model", k=8):
        row = full.chunks.index(full.chunk(hit.chunk_id))
        if row % 2 == 0:
            assert hit.dense_rank is None


def test_save_embeddings_replaces_rows_only_for_the_same_chunks(docs, tmp_path):
    index = open_(docs, tmp_path / "i", embed_budget=0)
    ids = [c.chunk_id for c in index.chunks]
    filled = np.array(index.dense.matrix)
    fill_missing(filled, index.chunks, CountingEmbedder(256))
    assert not store.save_embeddings(tmp_path / "i", filled, ids[:-1] + ["other#0"])
    assert not store.load(tmp_path / "i").embeddings.any()
    assert store.save_embeddings(tmp_path / "i", filled, ids)
    np.testing.assert_array_equal(store.load(tmp_path / "i").embeddings, filled)
    assert len(list((tmp_path / "i").glob("embeddings-*.npy"))) == 1


# -- the live index ------------------------------------------------------------------------------------------


def live_(docs, tmp_path, embedder=None, first_budget=None, **kw):
    embedder = embedder or CountingEmbedder(256)
    events: list[IndexProgress] = []

    def reopen(emit=None, chunk_budget=None, stop=None):
        return open_(docs, tmp_path / "i", embedder, embed_budget=0, chunk_budget=chunk_budget, stop=stop)

    live = LiveIndex(reopen(chunk_budget=first_budget), embedder, reopen, progress=events.append, publish_every=0.0,
                     **kw)
    return live, events


def test_live_index_fills_in_batches_and_each_snapshot_stays_as_it_was(docs, tmp_path):
    live, events = live_(docs, tmp_path, batch=4)
    before = live.snapshot()
    assert live.step() == "embed"
    after = live.snapshot()
    assert after is not before and before.dense_coverage == 0.0 and after.embedded.sum() == 4
    while live.step() == "embed":
        pass
    assert live.dense_coverage == 1.0 and before.dense_coverage == 0.0
    assert [e.done for e in events if e.stage == "embed"][-1] == len(live)
    live.close()
    assert store.load(tmp_path / "i").embeddings.any(axis=1).all()  # saved on close


def test_a_thousand_change_events_make_one_reindex(docs, tmp_path):
    live, events = live_(docs, tmp_path)
    (docs / "new.md").write_text("# Fresh page\n\nzebrafish telemetry\n")
    for n in range(1000):
        live.changed({f"/x/{n}.md"})
    assert live.step() == "refresh" and live.refreshes == 1
    assert live.step() != "refresh" and live.refreshes == 1
    assert [e.message for e in events if e.stage == "notice"] == ["re-indexed: 1 added, 0 changed, 0 removed"]
    assert live.search("zebrafish telemetry", k=1)[0].doc_id == "new.md"


def test_refresh_waits_for_a_reindex_that_started_after_it_was_asked(docs, tmp_path):
    live, _ = live_(docs, tmp_path)
    live.start()
    try:
        (docs / "new.md").write_text("# Fresh page\n\nzebrafish telemetry\n")
        assert live.refresh(timeout=60)
        assert live.search("zebrafish telemetry", k=1)[0].doc_id == "new.md"  # no wait, no poll: it is there
        (docs / "new.md").unlink()
        assert live.refresh(timeout=60) and "new.md" not in live.doc_ids
    finally:
        live.close()
    assert not live.refresh(timeout=0.1)  # a closed index answers at once, False: nothing will re-index it


def test_reindex_keeps_embeddings_of_unchanged_chunks_and_pinned_snapshot_is_old(docs, tmp_path):
    embedder = CountingEmbedder(256)
    live, _ = live_(docs, tmp_path, embedder)
    while live.step() == "embed":
        pass
    pinned = live.snapshot()
    embedder.seen.clear()
    (docs / "new.md").write_text("# Fresh page\n\nzebrafish telemetry\n")
    live.changed()
    live.step()
    assert not any("zebrafish" in h.text for h in pinned.search("zebrafish telemetry", k=3))
    assert live.snapshot() is not pinned and live.dense_coverage < 1.0
    while live.step() == "embed":
        pass
    assert live.dense_coverage == 1.0 and embedder.seen and all("zebrafish" in t for t in embedder.seen)


def test_a_deleted_folder_keeps_the_last_good_index_with_one_notice(docs, tmp_path):
    live, events = live_(docs, tmp_path)
    good = live.snapshot()
    shutil.rmtree(docs)
    live.changed()
    assert live.step() == "refresh"
    notices = [e.message for e in events if e.stage == "notice"]
    assert len(notices) == 1 and "last good index" in notices[0] and "\n" not in notices[0]
    assert live.snapshot() is good and live.search("quantization", k=1)
    live.gone(docs)  # the watcher says so too: still one notice
    assert len([e for e in events if e.stage == "notice"]) == 1


def test_background_work_waits_while_an_answer_holds_the_index(docs, tmp_path):
    live, _ = live_(docs, tmp_path)
    release = live.hold()
    live.changed()
    assert live.step() == "idle" and live.dense_coverage == 0.0 and live.refreshes == 0
    release()
    assert live.step() == "refresh"
    release()  # twice is harmless
    assert live.step() == "embed"


@pytest.mark.parametrize("name", ["notes.md.swp", ".notes.md.swx", "notes.md~", ".#notes.md", "#notes.md#", "4913",
                                  ".manifest.json.abc.tmp", "x.tmp"])
def test_editor_temp_files_are_ignored(name, tmp_path):
    assert is_temp_file(tmp_path / name)
    from watchfiles import Change

    assert not DocsFilter()(Change.modified, str(tmp_path / name))


def test_docs_files_and_the_index_folder(tmp_path):
    from watchfiles import Change

    flt = DocsFilter(ignore_paths=[tmp_path / "docs" / ".index"])
    assert flt(Change.modified, str(tmp_path / "docs" / "guide.md")) and not is_temp_file("guide.md")
    assert not flt(Change.added, str(tmp_path / "docs" / ".index" / "manifest.json"))
    assert not flt(Change.added, str(tmp_path / "docs" / "node_modules" / "a.md"))


def test_a_live_index_is_ready_before_chunking_and_chunks_the_rest_behind(docs, tmp_path):
    live, _ = live_(docs, tmp_path, first_budget=0)
    pending = live.update.pending
    assert len(live) == 0 and "guide.md" in pending and live.update.removed == ()
    assert "files left to chunk" in live.update.summary()
    assert live.search("quantization", k=1) == []  # an empty index answers, it does not fail
    stopped = threading.Event()
    stopped.set()  # quitting: a re-index stops between files and keeps what it has
    assert open_(docs, tmp_path / "j", stop=stopped).update.pending == pending
    assert live.step() == "refresh"
    assert live.doc_ids == sorted(pending) and not live.update.pending and live.search("quantization", k=1)
    assert live.step() == "embed"


def test_watcher_reports_a_burst_in_few_batches_and_never_temp_files(tmp_path):
    from rag.indexing.watch import FolderWatcher

    root = tmp_path / "w"
    root.mkdir()
    batches: list[set[str]] = []
    watcher = FolderWatcher(root, batches.append, step_ms=100).start()
    try:
        assert watcher.ready.wait(10)
        (root / "notes.md.swp").write_text("swap")
        (root / "4913").write_text("")
        threading.Event().wait(1.0)
        assert batches == []  # an editor's temp files alone never trigger a re-index
        for n in range(1000):
            (root / f"page-{n}.md").write_text(f"page {n}")
        deadline = time.monotonic() + 20
        while sum(len(b) for b in batches) < 1000 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        watcher.close()
    assert 1 <= len(batches) <= 5 and sum(len(b) for b in batches) >= 1000
    assert not any(is_temp_file(p) for b in batches for p in b)


def test_a_killed_index_run_keeps_its_embedding_progress_and_the_next_run_continues(tmp_path, monkeypatch):
    import rag.indexing.build as build

    monkeypatch.setattr(build, "EMBED_CHECKPOINT_SECONDS", 0.0)  # a checkpoint after every batch
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(40):
        (docs / f"page-{n:02d}.md").write_text(f"# Page {n}\n\nPage {n} tells of topic number {n}.\n")

    class Killed(CountingEmbedder):
        def embed(self, texts):
            if self.calls == 2:  # the third batch never comes: the run is killed
                raise KeyboardInterrupt
            return super().embed(texts)

    killed = Killed(256)
    with pytest.raises(KeyboardInterrupt):
        open_(docs, tmp_path / "i", killed, must_save=True)
    saved = store.load(tmp_path / "i")
    assert saved is not None and int(np.any(saved.embeddings, axis=1).sum()) == len(killed.seen) == 32
    embedder = CountingEmbedder(256)
    resumed = open_(docs, tmp_path / "i", embedder, must_save=True)
    assert len(embedder.seen) == len(resumed) - 32 and resumed.dense_coverage == 1.0
    assert resumed.update.summary().split(";")[1].strip() == "resumed embedding"
    blocking = open_(docs, tmp_path / "j")
    np.testing.assert_array_equal(resumed.dense.matrix, blocking.dense.matrix)
