"""The repetition guard stops loops and leaves ordinary answers alone."""

from hypothesis import given, strategies as st

from agent.turn.repetition import RepetitionGuard


def feed_words(guard, text):
    for word in text.split(" "):
        if guard.feed(word + " "):
            return True
    return False


def test_loop_is_detected():
    assert feed_words(RepetitionGuard(), "It is a cache. " + "the prefix of the prefix of " * 20)


def test_ordinary_answer_is_not_a_loop():
    text = (
        "The KV cache stores the key and value vectors of every past token [1]. Each new token only computes its "
        "own keys and values, so generation does not redo the prompt [1]. Its size grows with layers, heads and "
        "context length, about 22.5 KiB per token for SmolLM2-135M [2]. A byte-identical system prompt lets "
        "llama.cpp reuse the cached prefix across turns [3]."
    )
    assert not feed_words(RepetitionGuard(), text)


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "cache", "token"]), min_size=1, max_size=12))
def test_any_phrase_repeated_many_times_is_caught(words):
    phrase = " ".join(words) + " "
    assert feed_words(RepetitionGuard(), phrase * (400 // len(phrase) + 8))
