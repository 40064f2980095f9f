"""Large indexes (all of man1): the same chunks as before the speed work, only what changed read and chunked again."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.indexing import build, store
from rag.indexing.build import open_index
from rag.ingest.chunking import ChunkSettings
from rag.ingest.man_pages import ManSource, so_target

DATA = Path(__file__).parent / "data"
# The chunks of tests/data/manpages and tests/data/info at three budgets, written by the chunker before the speed
# work (SmolLM2's tokenizer): a faster path must give the same ids, text, headings and lines. Rewritten only where a
# reader reads a page differently on purpose (CHUNKER_VERSION 10: mdoc's `.Nd` dash and `.Ar file .` as "file.").
GOLDEN = DATA / "manpages_chunks.json"


@pytest.fixture
def man_tree(tmp_path) -> Path:
    tree = tmp_path / "man"
    shutil.copytree(DATA / "manpages", tree)
    return tree


@pytest.mark.parametrize("name", ["manpages", "info"])
@pytest.mark.parametrize("budget", [200, 48, 24])
def test_man_pages_and_info_manuals_chunk_exactly_as_before(real_tokenizer, tmp_path, name, budget):
    index = open_index(DATA / name, real_tokenizer, None, index_dir=tmp_path / "idx", chunking=ChunkSettings(budget))
    golden = json.loads(GOLDEN.read_text())[f"{name}@{budget}"]
    assert [store.chunk_to_json(c) for c in index.chunks] == golden


def _so_target_line_by_line(text: str) -> str | None:
    """so_target without its shortcut: the one line that is not blank or a comment, if it is a `.so`."""
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith(('.\\"', "'\\\""))]
    m = re.match(r"^\.\s*so\s+(\S+)\s*$", lines[0]) if len(lines) == 1 else None
    return m.group(1) if m else None


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=".so \t\n\r\x0b\x0c\\\"'man1/x.TH\u00a0\u2028", max_size=40))
def test_the_alias_shortcut_agrees_with_reading_every_line(text):
    assert so_target(text) == _so_target_line_by_line(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.text(max_size=12) | st.integers(), max_size=3), max_size=6))
def test_json_lines_read_back_as_one_array_round_trip(rows):
    data = b"".join(store.to_json_line(row) for row in rows)
    assert store.from_json_lines(data) == rows


def test_a_line_holding_two_values_is_an_error_not_two_rows():
    with pytest.raises(ValueError, match="2 lines hold 3 JSON values"):
        store.from_json_lines(b'{"a": 1}, {"b": 2}\n{"c": 3}\n')


def _open(tree: Path, index_dir: Path, tokenizer):
    return open_index(ManSource((tree,), frozenset({"1", "8"})), tokenizer, None, index_dir=index_dir,
                      chunking=ChunkSettings(48))


@pytest.fixture
def chunked(monkeypatch) -> list[str]:
    """The doc ids open_index chunks, in order (it calls chunk_layout once per new or changed page)."""
    seen: list[str] = []
    real = build.chunk_layout

    def counting(doc_id, *args, **kwargs):
        seen.append(doc_id)
        return real(doc_id, *args, **kwargs)

    monkeypatch.setattr(build, "chunk_layout", counting)
    return seen


def test_only_the_page_a_package_changed_is_chunked_again(man_tree, tmp_path, real_tokenizer, chunked):
    idx = tmp_path / "idx"
    first = _open(man_tree, idx, real_tokenizer)
    assert "man1/lsx.1" in chunked and len(chunked) == first.update.files
    before = {c.chunk_id: c for c in first.chunks}

    chunked.clear()
    page = man_tree / "man1" / "lsx.1"
    os.utime(page, (1, 1))  # touched, same bytes: nothing to chunk, nothing to save
    touched = _open(man_tree, idx, real_tokenizer)
    assert chunked == [] and not touched.update.modified

    page.write_text(page.read_text().replace("sort by time, newest first", "sort by mtime, newest first"))
    (man_tree / "man1" / "newtool.1").write_text(".TH NEWTOOL 1\n.SH NAME\nnewtool \\- installed just now\n")
    (man_tree / "man8" / "toold.8").unlink()
    after = _open(man_tree, idx, real_tokenizer)
    assert chunked == ["man1/lsx.1", "man1/newtool.1"]
    assert (after.update.changed, after.update.added) == (("man1/lsx.1",), ("man1/newtool.1",))
    assert after.update.removed == ("man8/toold.8",)
    kept = {cid: c for cid, c in before.items() if c.doc_id not in ("man1/lsx.1", "man8/toold.8")}
    assert {cid: c for cid, c in ((c.chunk_id, c) for c in after.chunks) if cid in kept} == kept
    assert any("sort by mtime" in c.text for c in after.chunks)


def test_a_page_is_chunked_again_when_a_fragment_it_includes_changes(man_tree, tmp_path, real_tokenizer, chunked):
    idx = tmp_path / "idx"
    _open(man_tree, idx, real_tokenizer)
    chunked.clear()
    fragment = man_tree / "man1" / "fragment.inc"
    fragment.write_text(fragment.read_text().replace("read from the shared fragment", "read from the new fragment"))
    after = _open(man_tree, idx, real_tokenizer)
    both = ["man1/lsxall.1", "man1/withfrag.1"]  # lsxall(1) includes the fragment too
    assert chunked == both and after.update.changed == tuple(both)
    assert any("read from the new fragment" in c.text for c in after.chunks)


def test_a_slow_reread_buys_the_next_slice_more_chunking_time(man_tree, tmp_path, real_tokenizer, monkeypatch):
    """A slice that spends 0.2 s besides chunking (re-reading man1 took minutes) lets the next chunk that long."""
    from rag.indexing import live as live_module

    monkeypatch.setattr(live_module, "REFRESH_SLICE", 0.01)
    budgets: list[float | None] = []
    chunk_all = False

    def reopen(emit=None, chunk_budget=None, stop=None):
        budgets.append(chunk_budget)
        time.sleep(0.2)  # stands for reading a large man tree again
        return open_index(ManSource((man_tree,)), real_tokenizer, None, index_dir=tmp_path / "idx", progress=emit,
                          chunk_budget=None if chunk_all else 0)  # 0: the slice is always spent, pages left

    live = live_module.LiveIndex(reopen(), None, reopen)
    for _ in range(2):
        live.changed()
        assert live.step() == "refresh"
    assert budgets[1] == 0.01 and budgets[2] >= 0.19
    monkeypatch.setattr(live_module, "MAX_REFRESH_SLICE", 0.05)
    live.changed()
    live.step()
    assert live.slice == 0.05  # capped: a caller waiting for a refresh still gets one in time
    chunk_all = True
    live.changed()
    live.step()
    assert not live.update.pending and "man1/lsx.1" in live.doc_ids
    assert live.slice == 0.01  # nothing left: a later change starts with a short slice again
    live.close()


def test_a_warm_open_reads_no_indexed_page_again_and_a_rebuild_reads_them_all(man_tree, tmp_path, real_tokenizer,
                                                                               monkeypatch):
    from rag.ingest import corpus

    reads: list[str] = []
    real = corpus.read_manual

    def counting(doc_id, *args, **kwargs):
        reads.append(doc_id)
        return real(doc_id, *args, **kwargs)

    monkeypatch.setattr(corpus, "read_manual", counting)
    first = open_index(man_tree, real_tokenizer, None, index_dir=tmp_path / "idx", chunking=ChunkSettings(48))
    indexed = set(first.doc_ids)
    assert "man1/lsx.1" in indexed and indexed <= set(reads)
    reads.clear()
    warm = open_index(man_tree, real_tokenizer, None, index_dir=tmp_path / "idx", chunking=ChunkSettings(48))
    assert not warm.update.modified and warm.chunks == first.chunks
    assert reads and not indexed & set(reads)  # only what was skipped (aliases, loops, junk) is read again
    reads.clear()
    rebuilt = open_index(man_tree, real_tokenizer, None, index_dir=tmp_path / "idx", chunking=ChunkSettings(24))
    assert rebuilt.update.rebuilt and indexed <= set(reads)
    assert [store.chunk_to_json(c) for c in rebuilt.chunks] == json.loads(GOLDEN.read_text())["manpages@24"]


def test_a_run_that_only_embeds_rewrites_only_the_embeddings(docs, tmp_path):
    """A one-shot search on a stored index embeds a few chunks: chunks and BM25 postings are not written again."""
    from fakes import CountingEmbedder, WordTokenizer

    idx = tmp_path / "idx"
    open_index(docs, WordTokenizer(), CountingEmbedder(64), index_dir=idx, embed_budget=0)
    before = json.loads((idx / store.MANIFEST).read_text())
    index = open_index(docs, WordTokenizer(), CountingEmbedder(64), index_dir=idx, embed_budget=None)
    after = json.loads((idx / store.MANIFEST).read_text())
    assert index.update.chunks_embedded == len(index.chunks) > 0
    assert (after["chunks_file"], after["bm25_file"]) == (before["chunks_file"], before["bm25_file"])
    assert after["embeddings_file"] != before["embeddings_file"]
    assert store.load(idx).embeddings.any(axis=1).all() and len(list(idx.glob("embeddings-*.npy"))) == 1


def test_a_section_many_pages_share_is_counted_once(real_tokenizer):
    """gcloud's pages repeat whole sections: the second page's copy is counted from memory, to the same chunks."""
    from rag.ingest.chunking import chunk_document

    class Counting:
        name = real_tokenizer.name

        def __init__(self) -> None:
            self.texts: list[str] = []

        def count(self, text: str) -> int:
            self.texts.append(text)
            return real_tokenizer.count(text)

    shared = "# FLAGS\n\n" + "".join(f"--flag-{n}\n: what flag {n} does, at some length.\n\n" for n in range(30))
    counter = Counting()
    first = chunk_document("a.md", "# A\n\nPage a.\n\n" + shared, counter, max_tokens=48)
    before = len(counter.texts)
    second = chunk_document("b.md", "# B\n\nPage b.\n\n" + shared, counter, max_tokens=48)
    assert len(counter.texts) - before < before / 2 and len(counter.texts) == len(set(counter.texts))
    assert [c.text for c in second[1:]] == [c.text for c in first[1:]]
    assert [c.text for c in second] == [c.text for c in chunk_document("b.md", "# B\n\nPage b.\n\n" + shared,
                                                                       real_tokenizer, max_tokens=48)]
