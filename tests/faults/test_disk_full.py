"""A disk that fills up while the index is saved: exit non-zero, one line, the old index intact, no partial files.

A real full disk: a small tmpfs mounted for the test (needs root; skipped with the reason otherwise), filled so
the save runs out of space inside each of the files it writes in turn.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from faults_support import cli, index_args
from rag.indexing import store
DATA = Path(__file__).parent.parent / "data" / "retrieval_docs"
MOUNT_BYTES = 4 << 20


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={MOUNT_BYTES}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def pages(n: int, page: int = 4096) -> int:
    """What a file of n bytes takes on a tmpfs."""
    return -(-n // page) * page


def fill_until(mount: Path, leave: int) -> Path:
    """A filler file that leaves about `leave` bytes free."""
    filler = mount / f"filler-{uuid.uuid4().hex[:6]}"
    with open(filler, "wb") as fh:
        fh.write(bytes(max(0, free_bytes(mount) - leave)))
    return filler


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """The tiny corpus (the old index), and the same plus a large file (the new index, ~1 MB of files)."""
    root = tmp_path_factory.mktemp("full")
    shutil.copytree(DATA, root / "old")
    shutil.copytree(DATA, root / "new")
    words = " ".join(f"word{i}" for i in range(150))
    (root / "new" / "big.md").write_text("".join(f"# Part {i}\n\n{words}.\n\n" for i in range(200)))
    assert cli(*index_args(root / "new", root / "sizes")).rc == 0
    manifest = store.load(root / "sizes").manifest
    sizes = [manifest["checksums"][manifest[f"{k}_file"]]["bytes"] for k in ("chunks", "embeddings", "bm25")]
    sizes.append((root / "sizes" / store.MANIFEST).stat().st_size)
    return root, sizes


@pytest.mark.parametrize("runs_out_in", ["chunks", "embeddings", "bm25", "manifest"])
def test_a_full_disk_mid_save_fails_cleanly_and_keeps_the_old_index(small_disk, docs, runs_out_in):
    root, sizes = docs
    index_dir = small_disk / "idx"
    assert cli(*index_args(root / "old", index_dir)).rc == 0
    before = {p.name: p.read_bytes() for p in index_dir.iterdir()}
    k = ["chunks", "embeddings", "bm25", "manifest"].index(runs_out_in)
    fill_until(small_disk, sum(pages(n) for n in sizes[:k]) + sizes[k] // 2)

    run = cli(*index_args(root / "new", index_dir))
    assert run.rc == 2 and run.out == ""
    assert len(run.err_lines) == 1, run.err
    [line] = run.err_lines
    assert line.startswith("smoldocs: error: could not save the index in ")
    assert "No space left on device" in line and "previous index is unchanged" in line
    assert {p.name: p.read_bytes() for p in index_dir.iterdir()} == before  # no partial files, old one intact

    for filler in small_disk.glob("filler-*"):
        filler.unlink()
    run = cli(*index_args(root / "new", index_dir))
    assert run.rc == 0 and "stored in" in run.out
