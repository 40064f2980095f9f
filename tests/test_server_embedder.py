"""Embeddings from a server: llama-cpp-python's own server on 127.0.0.1 serving the packaged MiniLM GGUF."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from models.llama_cpp.bert_gguf import ensure_minilm_gguf
from models.errors import ServerRefused, ServerUnreachable
from models.openai_server.local_server import LocalServer, free_port
from models.openai_server.server_embedder import ServerEmbedder
from rag.errors import StoreRefused
from rag.postgres.ingest import ingest
from rag.postgres.search import PgIndex
from tests.mcp_support import ROOT

pytestmark = [pytest.mark.real, pytest.mark.server]
KEY = "embed-test-key"


@pytest.fixture(scope="module")
def embed_server():
    with LocalServer(ensure_minilm_gguf().path, n_ctx=512, api_key=KEY, embedding=True) as server:
        yield server


@pytest.fixture(scope="module")
def served(embed_server):
    embedder = ServerEmbedder(embed_server.base_url, api_key=KEY, batch=4)
    yield embedder
    embedder.close()


def test_served_vectors_match_the_in_process_embedder(served, real_embedder):
    texts = ["how do I configure the cache", "The KV cache stores keys and values.", "zebra", "a b c", "x y", "end"]
    remote, local = served.embed(texts), real_embedder.embed(texts)
    assert served.dim == 384 and remote.shape == (6, 384) and remote.dtype == np.float32
    assert np.allclose(np.linalg.norm(remote, axis=1), 1.0, atol=1e-5)
    # llama.cpp's vectors move with the batch they share (up to ~1.5e-4 seen); the meaning does not.
    assert np.abs(remote - local).max() < 1e-3
    assert served.embed([]).shape == (0, 384)


def test_a_store_records_the_served_model_and_refuses_another(pg_url, docs, real_tokenizer, served, real_embedder):
    ingest(pg_url, docs, real_tokenizer, served)
    index = PgIndex(pg_url, served)
    assert index.settings["embedding_model"] == served.model_id and index.dense_coverage == 1.0
    assert index.search("building the index", k=1)[0].chunk_id == "guide.md#2"
    with pytest.raises(StoreRefused, match="holds embeddings of .* use the same embedder"):
        PgIndex(pg_url, real_embedder)
    with pytest.raises(StoreRefused, match="holds embeddings of"):
        ingest(pg_url, docs, real_tokenizer, real_embedder)
    index.close()


def test_a_wrong_key_and_no_server_are_one_line_each(embed_server):
    with pytest.raises(ServerRefused, match="refused the API key") as refused:
        ServerEmbedder(embed_server.base_url, api_key="wrong-key", retries=0)
    with pytest.raises(ServerUnreachable, match=r"cannot reach the embeddings server .* \(connection refused\)") as gone:
        ServerEmbedder(f"http://127.0.0.1:{free_port()}/v1", retries=0)
    for error in (refused.value, gone.value):
        assert "\n" not in str(error) and "wrong-key" not in str(error)


def test_cli_searches_a_store_with_query_embeddings_from_the_server(pg_url, docs, real_tokenizer, served, embed_server):
    ingest(pg_url, docs, real_tokenizer, served)
    env = dict(os.environ, SMOLDOCS_EMBED_API_KEY=KEY)
    out = subprocess.run(
        [sys.executable, "-m", "agent", "search", "building the index", "-k", "1", "--json", "--store", pg_url,
         "--embed-url", embed_server.base_url], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert '"chunk_id": "guide.md#2"' in out.stdout and '"dense_rank": 1' in out.stdout
