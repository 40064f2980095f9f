"""The live index against the real tokenizer, MiniLM and watchfiles: edits become searchable, embedding resumes."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from rag.indexing import store
from rag.indexing.build import open_index
from rag.indexing.live import LiveIndex, open_live_index

pytestmark = pytest.mark.real
CORPUS = Path(__file__).resolve().parent.parent / "docs_corpus"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A few real pages of the bundled corpus."""
    root = tmp_path / "docs"
    root.mkdir()
    for path in sorted(CORPUS.rglob("*.md"), key=lambda p: p.stat().st_size)[:4]:
        shutil.copy(path, root / path.name)
    return root


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_an_edited_file_is_searchable_with_its_new_text_within_seconds(docs, tmp_path, real_tokenizer, real_embedder):
    live = open_live_index(docs, real_tokenizer, real_embedder, index_dir=tmp_path / "i")
    try:
        assert live.watcher is not None and wait_until(live.watcher.ready.is_set, 5)
        assert wait_until(lambda: live.dense_coverage == 1.0, 60)  # embeddings filled in behind
        target = sorted(docs.glob("*.md"))[0]
        (docs / ".notes.md.swp").write_bytes(b"vim swap")  # ignored: no re-index for it
        target.write_text("# Heliotrope quotas\n\nThe heliotrope quota of a tenant is seventeen parcels.\n")
        edited_at = time.monotonic()

        def found() -> bool:
            hits = live.search("heliotrope quota of a tenant", k=1)
            return bool(hits) and hits[0].doc_id == target.name and hits[0].dense_rank is not None

        assert wait_until(found, 15), "the edit never became searchable"
        assert time.monotonic() - edited_at < 15
        assert live.refreshes >= 1 and live.dense_coverage == 1.0
    finally:
        live.close()


def test_a_stopped_embedding_run_resumes_where_it_stopped(docs, tmp_path, real_tokenizer, real_embedder):
    def reopen(emit=None, chunk_budget=None, stop=None):
        return open_index(docs, real_tokenizer, real_embedder, index_dir=tmp_path / "i", embed_budget=0)

    first = reopen()
    live = LiveIndex(first, real_embedder, reopen, batch=8)
    assert live.step() == "embed" and live.step() == "embed"
    live.close()  # like quitting the TUI mid-embedding: what was embedded is saved whole
    saved = store.load(tmp_path / "i")
    done = int(saved.embeddings.any(axis=1).sum())
    assert done == 16 < len(first)

    resumed = open_index(docs, real_tokenizer, real_embedder, index_dir=tmp_path / "i")
    assert resumed.update.chunks_embedded == len(first) - done and resumed.dense_coverage == 1.0
    np.testing.assert_array_equal(resumed.dense.matrix[:16], saved.embeddings[:16])  # kept, not recomputed
    norms = np.linalg.norm(resumed.dense.matrix, axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3)
