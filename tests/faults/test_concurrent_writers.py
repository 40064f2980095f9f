"""Two `smoldocs index` runs on one index at the same moment, and a search while they save."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from faults_support import cli, finish, forked_cli, index_args, search_args, search_hits
from rag.indexing import store
DATA = Path(__file__).parent.parent / "data" / "retrieval_docs"


def both_in_save(barrier: Path, parties: int = 2, timeout: float = 10.0):
    """Wrap store.save so each writer waits until every writer is about to save: a real overlap, every time."""
    real_save = store.save

    def save(*args, **kwargs):
        (barrier / f"{time.monotonic_ns()}").touch()
        deadline = time.monotonic() + timeout
        while len(list(barrier.iterdir())) < parties and time.monotonic() < deadline:
            time.sleep(0.005)
        return real_save(*args, **kwargs)

    store.save = save
    return real_save


def test_two_writers_at_once_both_succeed_and_leave_one_whole_index(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DATA, docs)
    assert cli(*index_args(docs, tmp_path / "idx")).rc == 0
    (docs / "guide.md").write_text("# Install guide\n\nChanged while two writers ran.\n")
    (docs / "new.md").write_text("# New\n\nA page both writers add.\n")
    clean = cli(*search_args("install guide", docs, tmp_path / "clean"))

    barrier = tmp_path / "barrier"
    barrier.mkdir()
    real_save = both_in_save(barrier)
    try:
        writers = [forked_cli(*index_args(docs, tmp_path / "idx")) for _ in range(2)]
    finally:
        store.save = real_save
    runs = [finish(*w) for w in writers]

    for run in runs:
        assert run.rc == 0, run.err
        assert run.err_lines == [] and "updated: 1 added, 1 changed, 0 removed" in run.out
    # One manifest and exactly the files it names: the loser's generation was replaced, not orphaned.
    stored = store.load(tmp_path / "idx")
    names = {stored.manifest[k] for k in ("chunks_file", "embeddings_file", "bm25_file")}
    assert {p.name for p in (tmp_path / "idx").iterdir()} == {store.MANIFEST, *names}
    found = cli(*search_args("install guide", docs, tmp_path / "idx"))
    assert found.err_lines == [] and search_hits(found) == search_hits(clean)


def test_a_search_while_writers_save_never_sees_a_broken_index(tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(DATA, docs)
    assert cli(*index_args(docs, tmp_path / "idx")).rc == 0
    expected = {}
    for version in range(3):
        (docs / "guide.md").write_text(f"# Install guide\n\nVersion {version} of the install guide.\n")
        expected[version] = search_hits(cli(*search_args("install guide", docs, tmp_path / f"clean{version}")))
    writers = []
    for version in range(3):
        (docs / "guide.md").write_text(f"# Install guide\n\nVersion {version} of the install guide.\n")
        writers.append(forked_cli(*index_args(docs, tmp_path / "idx", "--rebuild")))
        seen = store.load(tmp_path / "idx")  # whichever generation is committed, it loads whole
        assert seen is not None and len(seen.chunks) == seen.embeddings.shape[0]
    for w in writers:
        assert finish(*w).rc == 0
    found = cli(*search_args("install guide", docs, tmp_path / "idx"))
    assert found.err_lines == [] and search_hits(found) == expected[2]
