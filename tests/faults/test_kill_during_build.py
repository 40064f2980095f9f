"""kill -9 at random points of an index build: the next open sees the old index or the new one, never a mix.

Each seed forks a child that builds the index and SIGKILLs itself at its k-th step inside rag/indexing/build.py or
rag/indexing/store.py (every function entered and every builtin called there: writes, fsyncs, renames, deletes), k drawn
from the seed. Half the seeds update an existing index, half build a first one.
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import rag.indexing.build
import rag.indexing.store
from faults_support import forked, kill_self, wait
from fakes import HashEmbedder, WordTokenizer
from rag.indexing import store
from rag.ingest.chunking import ChunkSettings
from rag.indexing.build import open_index

DATA = Path(__file__).parent.parent / "data" / "retrieval_docs"
WATCHED = {rag.indexing.build.__file__, rag.indexing.store.__file__}
QUERIES = ("install guide", "quantization weights", "speculative decoding", "asciidoc manual", "deep markdown")
SEEDS = range(20)


def build(docs: Path, index_dir: Path, progress=None):
    return open_index(docs, WordTokenizer(), HashEmbedder(), index_dir=index_dir, progress=progress,
                      chunking=ChunkSettings(max_tokens=24))


def results(index) -> list:
    return [[(h.chunk_id, round(h.score, 6)) for h in index.search(q, k=5)] for q in QUERIES]


def count_steps(fn) -> int:
    """How many watched steps `fn()` takes: the range the kill point is drawn from."""
    steps = 0

    def profile(frame, event, arg):
        nonlocal steps
        if event in ("call", "c_call") and frame.f_code.co_filename in WATCHED:
            steps += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return steps


def die_at(step: int, fn) -> int:
    """Run fn() in this (forked) process and SIGKILL it at its `step`-th watched step."""
    steps = 0

    def profile(frame, event, arg):
        nonlocal steps
        if event in ("call", "c_call") and frame.f_code.co_filename in WATCHED:
            steps += 1
            if steps == step:
                kill_self()

    sys.setprofile(profile)
    fn()
    sys.setprofile(None)
    return 0


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Docs before and after an edit, and the clean builds of each."""
    root = tmp_path_factory.mktemp("kill")
    old, new = root / "docs-old", root / "docs-new"
    shutil.copytree(DATA, old)
    shutil.copytree(DATA, new)
    (new / "guide.md").write_text("# Install guide\n\nRewritten: install with pip, then run the guide.\n")
    (new / "readme.txt").unlink()
    (new / "spec.md").write_text("# Speculative decoding\n\nA small draft model proposes tokens.\n" * 3)
    clean_old, clean_new = build(old, root / "clean-old"), build(new, root / "clean-new")
    first_steps = count_steps(lambda: build(new, root / "count-first"))
    shutil.copytree(root / "clean-old", root / "count-update")
    update_steps = count_steps(lambda: build(new, root / "count-update"))
    return {
        "root": root, "old": old, "new": new,
        "old_chunks": store.load(root / "clean-old").chunks, "new_chunks": store.load(root / "clean-new").chunks,
        "old_embeddings": clean_old.dense.matrix, "new_embeddings": clean_new.dense.matrix,
        "new_results": results(clean_new), "old_results": results(clean_old),
        "steps": {"first": first_steps, "update": update_steps},
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_a_build_killed_at_a_random_point_leaves_the_old_or_the_new_index(world, seed):
    kind = "update" if seed % 2 else "first"
    index_dir = world["root"] / f"idx-{seed}"
    if kind == "update":
        shutil.copytree(world["root"] / "clean-old", index_dir)
    step = random.Random(seed).randint(1, world["steps"][kind])
    status = wait(forked(lambda: die_at(step, lambda: build(world["new"], index_dir))))
    assert status == -9, f"the child was not killed at step {step} (status {status})"

    stored = store.load(index_dir)  # never IndexCorrupt: a kill leaves a consistent manifest and files
    if stored is None:
        assert kind == "first"
    else:
        generation = "new" if stored.chunks == world["new_chunks"] else "old"
        assert kind == "update" or generation == "new"
        assert stored.chunks == world[f"{generation}_chunks"]  # whole files of one generation, never a mix
        np.testing.assert_array_equal(stored.embeddings, world[f"{generation}_embeddings"])

    events = []
    index = build(world["new"], index_dir, progress=events.append)
    assert [e.message for e in events if e.stage == "notice"] == []  # nothing to warn about
    assert results(index) == world["new_results"]
    leftovers = {p.name for p in index_dir.iterdir()} - {store.MANIFEST, *_generation(index_dir)}
    # Only the killed run's own files remain (young, so possibly a concurrent writer's), never anything else.
    assert all(name.startswith(("chunks-", "embeddings-", "bm25-", ".")) for name in leftovers), leftovers


def _generation(index_dir: Path) -> tuple[str, ...]:
    manifest = store.load(index_dir).manifest
    return manifest["chunks_file"], manifest["embeddings_file"], manifest["bm25_file"]
