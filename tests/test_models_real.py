"""The real SmolLM2 tokenizer and chat model through llama.cpp."""

from __future__ import annotations

import pytest

from models.protocols import CancelToken, GenerationOptions

pytestmark = pytest.mark.real


def test_token_counts_are_not_additive(real_tokenizer):
    parts = real_tokenizer.count("hello wor") + real_tokenizer.count("ld again")
    whole = real_tokenizer.count("hello world again")
    assert parts == 4 and whole == 3


def test_encode_decode_round_trip(real_tokenizer):
    text = "The KV cache stores keys and values — naïve café, 東京, `n_ctx = 2048`."
    assert real_tokenizer.decode(real_tokenizer.encode(text)) == text


def test_special_tokens_are_single_tokens(real_tokenizer):
    assert real_tokenizer.count("<|im_start|>") == 1


MESSAGE_LISTS = [
    [{"role": "user", "content": "What is a KV cache?"}],
    [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Define BM25."}],
    [
        {"role": "system", "content": "Rules."},
        {"role": "system", "content": "[1] docs/a.md\nalpha beta\n"},
        {"role": "user", "content": "first?"},
        {"role": "assistant", "content": "An answer [1]."},
        {"role": "user", "content": "Ünïcödé and 東京 and code `x = 1`?"},
    ],
    [{"role": "user", "content": ""}],
]


@pytest.mark.parametrize("messages", MESSAGE_LISTS)
def test_count_chat_matches_prompt_tokens_reported_by_the_model(real_model, messages):
    reported = real_model.llm.create_chat_completion(messages, max_tokens=1)["usage"]["prompt_tokens"]
    assert real_model.tokenizer.count_chat(messages) == reported


def test_count_chat_is_not_the_sum_of_message_counts(real_tokenizer):
    messages = MESSAGE_LISTS[2]
    summed = sum(real_tokenizer.count(m["content"]) for m in messages)
    assert real_tokenizer.count_chat(messages) != summed


def test_short_streamed_generation_produces_text(real_model):
    messages = [{"role": "user", "content": "Name one colour."}]
    pieces = list(real_model.stream(messages, GenerationOptions(max_tokens=16, temperature=0)))
    assert len(pieces) >= 1 and "".join(pieces).strip()
    stats = real_model.last_stats
    assert 1 <= stats.completion_tokens <= 16
    assert stats.prompt_tokens == real_model.tokenizer.count_chat(messages)


def test_cancel_mid_stream_stops_within_a_few_tokens(real_model):
    messages = [{"role": "user", "content": "Write a long story about a lighthouse keeper."}]
    cancel = CancelToken()
    seen = 0
    for _ in real_model.stream(messages, GenerationOptions(max_tokens=200, temperature=0), cancel=cancel):
        seen += 1
        if seen == 5:
            cancel.cancel()
    assert seen <= 7
    assert real_model.last_stats.finish_reason == "cancelled"
    assert real_model.last_stats.completion_tokens <= 8


def test_grammar_constrains_output(real_model):
    messages = [{"role": "user", "content": "Pick a number."}]
    grammar = 'root ::= "[" ("1" | "2") "]"'
    text = "".join(real_model.stream(messages, GenerationOptions(max_tokens=8, grammar=grammar)))
    assert text in ("[1]", "[2]")


def test_prompt_that_cannot_fit_is_refused_before_llama_cpp(real_model):
    from models.errors import GenerationError

    messages = [{"role": "user", "content": "word " * 5000}]
    with pytest.raises(GenerationError, match="does not fit"):
        list(real_model.stream(messages))
