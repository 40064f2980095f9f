"""The system rules' KV state on disk: loaded instead of evaluated, with exactly the same logits."""

from __future__ import annotations

import numpy as np
import pytest

from agent.turn.prompts import system_rules
from models.llama_cpp.prefix_cache import PrefixCache, prefix_key


def _logits(llm) -> np.ndarray:
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()


def _tokens(model, messages, generation_prompt):
    prompt, added, _ = model.tokenizer._renderer.render(messages, add_generation_prompt=generation_prompt)
    return model.llm.tokenize(prompt.encode(), add_bos=not added, special=True)


@pytest.mark.real
def test_loaded_rules_give_exactly_the_logits_of_evaluated_rules(real_model, tmp_path):
    llm = real_model.llm
    system = [{"role": "system", "content": system_rules(True, "quote")}]
    prompt = _tokens(real_model, [*system, {"role": "user", "content": "What does the kv cache store?"}], True)
    prefix = _tokens(real_model, system, False)
    assert prompt[: len(prefix)] == prefix  # the rules are a token prefix of every prompt
    cache = PrefixCache(llm, real_model.config.path, tmp_path)
    with real_model._lock:
        llm.reset()
        assert cache.ensure(prefix) == "saved" and cache.path(prefix).exists()
        llm.eval(prompt[len(prefix):])
        evaluated = _logits(llm)
        llm.reset()  # as a new process would start: nothing in the KV cache
        assert cache.ensure(prefix) == "loaded"
        llm.eval(prompt[len(prefix):])
        loaded = _logits(llm)
        assert cache.ensure(prefix) == "kept"
        cache.path(prefix).write_bytes(b"not a state")  # damaged: evaluated and saved again, no error
        llm.reset()
        assert cache.ensure(prefix) == "saved"
    assert np.array_equal(evaluated, loaded)
    assert prefix_key(real_model.config.path, 2048, prefix) != prefix_key(real_model.config.path, 2048, prefix[:-1])


@pytest.mark.real
def test_a_cold_answer_loads_the_rules_from_disk(real_model, tmp_path, monkeypatch):
    from models.protocols import GenerationOptions

    monkeypatch.setenv("SMOLDOCS_CACHE", str(tmp_path))
    system = [{"role": "system", "content": system_rules(True, "quote")}]
    messages = [*system, {"role": "user", "content": "Say hi."}]
    real_model.cache_prefix(system)
    try:
        real_model.llm.reset()
        "".join(real_model.stream(messages, GenerationOptions(max_tokens=2, temperature=0.0)))
        assert real_model.prefix_status == "saved"
        real_model.llm.reset()
        "".join(real_model.stream(messages, GenerationOptions(max_tokens=2, temperature=0.0)))
        assert real_model.prefix_status == "loaded"
        "".join(real_model.stream([{"role": "user", "content": "no rules"}], GenerationOptions(max_tokens=1)))
        assert real_model.prefix_status == ""  # a prompt that does not start with the rules is left alone
    finally:
        real_model.cache_prefix([])


@pytest.mark.real
def test_the_vocabulary_is_read_back_from_the_cache_as_computed(real_model, tmp_path, monkeypatch):
    from models.llama_cpp.guards import _pieces

    monkeypatch.setenv("SMOLDOCS_CACHE", str(tmp_path))
    computed = _pieces(real_model.llm)
    saved = list((tmp_path / "vocab").glob("*.json"))
    assert len(saved) == 1
    assert _pieces(real_model.llm) == computed
    (token,) = real_model.llm.tokenize(b" cache", add_bos=False)
    assert computed[token] == " cache" and computed[real_model.llm.token_eos()] == ""
    saved[0].write_text("[1, 2")  # damaged: computed again, no error
    assert _pieces(real_model.llm) == computed


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _flipped(at: float):
    def flip(data: bytes) -> bytes:
        i = int(len(data) * at)
        return data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1 :]

    return flip


@pytest.mark.real
@pytest.mark.parametrize(
    "damage",
    [_truncated, lambda data: b"", _flipped(0.01), _flipped(0.5), _flipped(0.999)],
    ids=["truncated", "empty", "bit-flipped-header", "bit-flipped-state", "bit-flipped-directory"],
)
def test_a_damaged_state_file_is_a_miss_that_is_rebuilt(real_model, tmp_path, damage):
    llm = real_model.llm
    system = [{"role": "system", "content": system_rules(True, "quote")}]
    prefix = _tokens(real_model, system, False)
    rest = _tokens(real_model, [*system, {"role": "user", "content": "What does the kv cache store?"}], True)[len(prefix):]
    cache = PrefixCache(llm, real_model.config.path, tmp_path)
    with real_model._lock:
        llm.reset()
        assert cache.ensure(prefix) == "saved"
        llm.eval(rest)
        evaluated = _logits(llm)
        path = cache.path(prefix)
        path.write_bytes(damage(path.read_bytes()))
        llm.reset()
        assert cache.ensure(prefix) == "saved"  # discarded, evaluated, saved whole again
        llm.eval(rest)
        assert np.array_equal(_logits(llm), evaluated)
        llm.reset()
        assert cache.ensure(prefix) == "loaded"


@pytest.mark.real
def test_a_state_path_that_is_a_folder_is_a_miss_too(real_model, tmp_path):
    system = [{"role": "system", "content": system_rules(True, "quote")}]
    prefix = _tokens(real_model, system, False)
    cache = PrefixCache(real_model.llm, real_model.config.path, tmp_path)
    cache.path(prefix).mkdir(parents=True)
    with real_model._lock:
        real_model.llm.reset()
        assert cache.ensure(prefix) == "saved"  # evaluated; the folder is left alone and nothing is saved over it
    assert cache.path(prefix).is_dir()
