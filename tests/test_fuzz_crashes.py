"""Every crash `python -m benchmarks.fuzz` found, as a test with its shrunk input (issue 31)."""

from __future__ import annotations

import pytest

from fakes import WordTokenizer
from rag.ingest.chunking import chunk_document


@pytest.mark.parametrize("doc_id, text", [
    ("page.adoc", "////\r"),  # a comment delimiter ending in CR: the comment test stripped it, the fence test did not
])
def test_fuzzed_documents_parse_and_chunk(doc_id, text):
    chunks = chunk_document(doc_id, text, WordTokenizer(), 16)
    assert all(c.text.strip() for c in chunks)


@pytest.mark.parametrize("text", [
    "a = " + "{a = " * 2000,  # found by the fuzzer: tomllib nests inline tables by recursion
    "a = " + "[" * 3000,
    "n_ctx = " + "9" * 5000,  # int() refuses more than 4,300 digits with a ValueError of its own
])
def test_a_fuzzed_settings_file_is_one_config_error(tmp_path, text):
    from agent.config import ConfigError, read_file

    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_file(path)


@pytest.mark.parametrize("text", ["[" * 100_000, '{"citations": ' * 50_000])  # found by the fuzzer: json nests by recursion
def test_a_fuzzed_shown_file_is_one_clear_error(text):
    from rag.errors import ShownUnreadable
    from rag.excerpts.shown_file import read_shown
    from rag.types import Chunk

    class Catalog:
        chunks = [Chunk("docs/a.md#1", "docs/a.md", "docs/a.md", "The cache keeps keys.", ("A",), 1, 2)]

        def chunk(self, chunk_id):
            return None

    with pytest.raises(ShownUnreadable, match="nests too deep"):
        read_shown(text, Catalog())
