"""Shared fixtures. Real components load once per test session; caches go to a temp dir per session."""

from __future__ import annotations

import os
import tempfile

# Before numpy loads: multi-threaded OpenBLAS was ~10x slower for the small products tests make on a busy machine.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import pytest  # noqa: E402

# Tests never write into the user's real cache or data dirs.
_TMP_ROOT = tempfile.mkdtemp(prefix="smoldocs-tests-")
os.environ.setdefault("SMOLDOCS_CACHE", os.path.join(_TMP_ROOT, "cache"))
os.environ.setdefault("SMOLDOCS_DATA", os.path.join(_TMP_ROOT, "data"))
os.environ.setdefault("SMOLDOCS_CONFIG", os.path.join(_TMP_ROOT, "config.toml"))  # never the user's settings file


@pytest.fixture(autouse=True)
def _question_vectors_as_loaded():
    """Each test leaves every loaded MiniLM embedder's question encoder as it found it. A test that opens smoldocs
    in-process (agent.opening) attaches the tuned encoder to the process's one embedder, which is also the session's
    real_embedder: without this, a test's search results depended on which tests ran before it."""
    import sys

    def loaded():
        module = sys.modules.get("models.llama_cpp.embedder")
        return dict(module._LOADED) if module is not None else {}

    before = {key: (embedder.query_encoder, embedder.quote_encoder) for key, embedder in loaded().items()}
    yield
    for key, embedder in loaded().items():
        # one loaded during the test: as load_embedder() gives it
        embedder.query_encoder, embedder.quote_encoder = before.get(key, (None, None))


@pytest.fixture(scope="session")
def real_tokenizer():
    """The SmolLM2-135M tokenizer, vocab only."""
    from models.llama_cpp.tokenizer import load_tokenizer

    return load_tokenizer()


@pytest.fixture(scope="session")
def real_model():
    """The SmolLM2-135M chat model with a 2048-token context."""
    from models.llama_cpp.chat import load_chat_model

    return load_chat_model()


@pytest.fixture(scope="session")
def real_embedder():
    """all-MiniLM-L6-v2 converted to GGUF and run by llama.cpp."""
    from models.llama_cpp.embedder import load_embedder

    return load_embedder()


@pytest.fixture(scope="session")
def real_index(real_tokenizer, real_embedder):
    """The hybrid index over the bundled docs_corpus, built once per test session in the session's cache."""
    from rag.indexing.build import open_index

    return open_index(None, real_tokenizer, real_embedder)


@pytest.fixture
def docs(tmp_path):
    """A copy of tests/data/retrieval_docs (7 small pages) to index, edit and damage; a module may define its own."""
    import shutil
    from pathlib import Path

    root = tmp_path / "docs"
    shutil.copytree(Path(__file__).parent / "data" / "retrieval_docs", root)
    return root


@pytest.fixture(scope="session")
def pg_server():
    """A real PostgreSQL with pgvector on 127.0.0.1 (tests/pg_support.py), started once per session.

    Without its binaries the PostgreSQL tests are skipped, except in CI (CI=true), where that is a failure.
    """
    from tests.pg_support import PgUnavailable, running_server

    try:
        context = running_server()
        server = context.__enter__()
    except PgUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        context.__exit__(None, None, None)


@pytest.fixture
def pg_url(pg_server):
    """The URL of a new empty database with pgvector on the session's server (as its superuser)."""
    return pg_server.url(pg_server.create_database())
