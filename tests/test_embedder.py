"""The llama.cpp MiniLM embedder against an independent numpy BERT, pinned token ids, and paraphrase retrieval."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.llama_cpp.bert_gguf import minilm_zip
from models.llama_cpp.embedder import MAX_TOKENS, LlamaEmbedder, load_embedder
from fakes import HashEmbedder
from models.protocols import Embedder
from bert_reference import ReferenceBert

pytestmark = pytest.mark.real

DATA = Path(__file__).parent / "data"
CLS, SEP = 101, 102

VARIED = [
    "The quick brown fox jumps over the lazy dog.",
    "Café déjà vu: naïve résumé in São Paulo.",
    "東京は日本の首都です。北京和上海也是大城市。",
    "def add(a, b):\n    return a + b  # sum of two ints",
    "Version 3.14.159 was released on 2024-05-17 and costs $1,299.99 (15% off).",
    "KV-cache reuse speeds up prompt processing by 10x!",
    "Ünïcödé straße — em-dash “quotes” and ‘apostrophes’…",
    "Ελληνικά και русский текст, español y français.",
    "I ❤️ embeddings 🚀 and emoji 😀",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "tab\tseparated\nnew lines\r\n   and   spaces",
]


@pytest.fixture(scope="module")
def embedder(real_embedder) -> LlamaEmbedder:
    return real_embedder


@pytest.fixture(scope="module")
def reference() -> ReferenceBert:
    return ReferenceBert.from_zip(minilm_zip())


def _long_text() -> str:
    return " ".join(f"Paragraph {i} explains how chunk number {i} is embedded offline." for i in range(120))


def test_it_is_an_embedder_with_384_dims(embedder):
    assert isinstance(embedder, Embedder)
    assert embedder.dim == 384
    assert embedder.model_id.startswith("all-MiniLM-L6-v2-f16-c")


def test_token_ids_equal_the_wordpiece_reference(embedder, reference):
    for text in VARIED:
        assert embedder.tokenize(text) == reference.tokenizer.encode(text), text


def test_embeddings_agree_with_numpy_bert(embedder, reference):
    ours = embedder.embed(VARIED)
    for text, row in zip(VARIED, ours):
        assert float(row @ reference.embed(text)) >= 0.999, text


# Pinned from bert-base-uncased's vocab ("hello"=7592, "world"=2088, "!"=999): a vocab written in the wrong
# form loads fine in llama.cpp but turns every word into [UNK]=100, and this catches it.
PINNED = {
    "Hello world!": [101, 7592, 2088, 999, 102],
    "Café déjà vu, naïve résumé.": [101, 7668, 2139, 3900, 24728, 1010, 15743, 13746, 1012, 102],
    "The tokenizer's embeddings: 3.14 ms/token": [
        101, 1996, 19204, 17629, 1005, 1055, 7861, 8270, 4667, 2015, 1024, 1017, 1012, 2403, 5796, 1013, 19204, 102,
    ],
    "unaffable": [101, 14477, 20961, 3468, 102],
}


@pytest.mark.parametrize("text", sorted(PINNED))
def test_pinned_token_ids(embedder, text):
    assert embedder.tokenize(text) == PINNED[text]


def test_rows_are_unit_length_float32(embedder):
    rows = embedder.embed(["short", "", "a somewhat longer sentence about embeddings"])
    assert rows.shape == (3, 384) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_a_batch_embeds_each_text_as_if_alone(embedder):
    # Several sequences share one llama.cpp decode; none may leak into another.
    texts = VARIED[:6] + [_long_text()]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert np.min(np.sum(together * alone, axis=1)) > 0.9999


def test_paraphrase_questions_find_their_paragraph(embedder):
    data = json.loads((DATA / "paraphrase.json").read_text(encoding="utf-8"))
    answers = [q["answer"] for q in data["questions"]]
    questions = [q["q"] for q in data["questions"]]

    def top1_hits(emb) -> int:
        scores = emb.embed(questions) @ emb.embed(data["paragraphs"]).T
        return sum(int(row.argmax()) == a for row, a in zip(scores, answers))

    hits = top1_hits(embedder)
    assert hits >= 10, f"MiniLM ranked the right paragraph first for only {hits}/12"
    # The questions avoid the paragraphs' words, so word overlap alone must do clearly worse.
    assert top1_hits(HashEmbedder(4096)) <= hits - 4


def test_over_512_tokens_is_cut_to_512_keeping_cls_and_sep(embedder, reference):
    text = _long_text()
    assert embedder.count(text) > 2 * MAX_TOKENS
    cut = embedder.truncate(text)
    ids = embedder.tokenize(cut)
    assert text.startswith(cut)
    assert MAX_TOKENS - 20 <= len(ids) <= MAX_TOKENS  # cut at a word: nearly full, never over
    assert ids[0] == CLS and ids[-1] == SEP
    row = embedder.embed([text])[0]
    assert float(row @ embedder.embed([cut])[0]) > 0.9999
    # What the model saw is the reference's own [CLS] first-510 [SEP] view of the text, up to the word cut.
    assert float(row @ reference.forward(reference.tokenizer.encode(cut))) >= 0.999


def test_one_giant_word_is_cut_inside_the_word(embedder):
    blob = "x" * 5000
    cut = embedder.truncate(blob)
    assert 0 < len(cut) < len(blob)
    assert MAX_TOKENS - 2 <= embedder.count(cut) <= MAX_TOKENS
    assert embedder.embed([blob]).shape == (1, 384)


@settings(max_examples=25, deadline=None)
@given(st.text(min_size=1, max_size=40), st.integers(min_value=1, max_value=400))
def test_truncation_always_yields_a_prefix_within_512_tokens(embedder, piece, repeats):
    text = piece * repeats
    cut = embedder.truncate(text)
    assert text.startswith(cut)
    assert embedder.count(cut) <= MAX_TOKENS
    if embedder.count(text) <= MAX_TOKENS:
        assert cut == text


def test_short_texts_are_not_touched_by_truncation(embedder):
    assert embedder.truncate(VARIED[3]) == VARIED[3]


def test_concurrent_callers_get_the_same_rows(embedder):
    texts = VARIED[:4]
    expected = embedder.embed(texts)
    results: list[np.ndarray] = [None] * 4  # type: ignore[list-item]

    def work(slot: int) -> None:
        results[slot] = embedder.embed(texts)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results:
        np.testing.assert_allclose(got, expected, atol=1e-5)


def test_load_embedder_converts_into_the_cache_and_reuses_one_instance(monkeypatch, tmp_path):
    monkeypatch.setenv("SMOLDOCS_CACHE", str(tmp_path))
    monkeypatch.setattr("models.llama_cpp.embedder._LOADED", {})
    first = load_embedder()
    assert load_embedder() is first
    assert list((tmp_path / "models").glob("all-MiniLM-L6-v2-f16-*.gguf"))
    assert first.embed(["hello"]).shape == (1, 384)
    first.close()


def test_one_string_instead_of_a_list_is_refused(embedder):
    with pytest.raises(TypeError):
        embedder.embed("a single string")


def test_a_query_embeds_on_one_thread_and_a_chunk_group_on_all_with_the_same_rows(embedder):
    from models.llama_cpp.embedder import FEW_TOKENS

    query, chunk = "what is min-p sampling", " ".join(["the kv cache stores keys and values"] * 20)
    assert embedder.count(query) <= FEW_TOKENS < embedder.count(chunk)
    alone = embedder.embed([query])
    assert embedder._current_threads == 1
    together = embedder.embed([chunk, query])
    assert embedder._current_threads == embedder._threads
    assert float(alone[0] @ together[1]) > 0.9999  # the thread count does not change the vector
