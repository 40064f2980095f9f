"""Every index file truncated, garbled or zero-filled in turn: the user sees one notice and the right results."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from faults_support import cli, search_args, search_hits
from rag.indexing import store
DATA = Path(__file__).parent.parent / "data" / "retrieval_docs"
QUERY = "quantization weights"
FILES = {
    "manifest": lambda d: d / store.MANIFEST,
    "chunks": lambda d: next(d.glob("chunks-*.jsonl")),
    "embeddings": lambda d: next(d.glob("embeddings-*.npy")),
    "bm25": lambda d: next(d.glob("bm25-*.npz")),
}


def truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def garbled(data: bytes) -> bytes:
    middle = len(data) // 2
    noise = random.Random(len(data)).randbytes(64)
    return data[:middle] + noise + data[middle + 64 :]


def zero_filled(data: bytes) -> bytes:
    return bytes(len(data))  # what a crash can leave on a filesystem with delayed allocation


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    shutil.copytree(DATA, root / "docs")
    clean = cli(*search_args(QUERY, root / "docs", root / "clean"))
    assert clean.rc == 0 and clean.err_lines == []
    return root, search_hits(clean)


@pytest.mark.parametrize("damage", [truncated, garbled, zero_filled])
@pytest.mark.parametrize("name", list(FILES))
def test_a_damaged_index_file_is_detected_and_rebuilt(built, tmp_path, name, damage):
    root, clean_hits = built
    index_dir = tmp_path / "idx"
    shutil.copytree(root / "clean", index_dir)
    path = FILES[name](index_dir)
    path.write_bytes(damage(path.read_bytes()))

    found = cli(*search_args(QUERY, root / "docs", index_dir))
    assert found.rc == 0
    [notice] = found.err_lines
    assert notice.startswith("smoldocs: index at ") and "is unusable" in notice and notice.endswith("rebuilding it")
    assert search_hits(found) == clean_hits
    again = cli(*search_args(QUERY, root / "docs", index_dir))
    assert again.err_lines == [] and search_hits(again) == clean_hits  # the rebuilt index was saved


def test_a_missing_generation_file_is_detected_and_rebuilt(built, tmp_path):
    root, clean_hits = built
    shutil.copytree(root / "clean", tmp_path / "idx")
    next((tmp_path / "idx").glob("bm25-*.npz")).unlink()
    found = cli(*search_args(QUERY, root / "docs", tmp_path / "idx"))
    [notice] = found.err_lines
    assert "missing bm25-" in notice and search_hits(found) == clean_hits


@pytest.mark.real
def test_real_components_damaged_embeddings_give_the_clean_results(real_tokenizer, real_embedder, tmp_path):
    from rag.indexing.build import open_index

    shutil.copytree(DATA, tmp_path / "docs")

    def search(index_dir: Path):
        events = []
        index = open_index(tmp_path / "docs", real_tokenizer, real_embedder, index_dir=index_dir,
                           progress=events.append)
        hits = [(h.chunk_id, round(h.score, 5)) for h in index.search("four-bit quantization of weights", k=3)]
        return hits, [e.message for e in events if e.stage == "notice"]

    clean, _ = search(tmp_path / "idx")
    emb = next((tmp_path / "idx").glob("embeddings-*.npy"))
    data = bytearray(emb.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # a few numbers zeroed: still a valid .npy
    emb.write_bytes(bytes(data))
    hits, notices = search(tmp_path / "idx")
    assert len(notices) == 1 and "embeddings-" in notices[0] and "checksum" in notices[0]
    assert hits == clean and hits[0][0] == "manual.adoc#0"
