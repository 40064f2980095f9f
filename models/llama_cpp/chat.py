"""Streaming chat completions from a GGUF model through llama.cpp, in-process."""

from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Iterator, Sequence

from models.config import ModelConfig
from models.errors import GenerationError
from models.llama_cpp.loading import open_llama
from models.locate import resolve_model_path
from models.llama_cpp.tokenizer import LlamaTokenizer
from models.protocols import CancelFlag, GenerationOptions, GenerationStats, Message


@functools.lru_cache(maxsize=16)
def _grammar(gbnf: str):
    from llama_cpp import LlamaGrammar

    try:
        return LlamaGrammar.from_string(gbnf, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise GenerationError(f"invalid GBNF grammar: {exc}") from None


class LlamaChatModel:
    """A chat model whose prompt is rendered with the GGUF's own template and counted before it is sent."""

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.name = Path(config.path).name
        self.n_ctx = config.n_ctx
        self.llm = open_llama(config)
        self.tokenizer = LlamaTokenizer(config.path, llm=self.llm)
        self.last_stats = GenerationStats()
        self.n_params: int | None = int(self.llm._model.n_params())
        self.supports_grammar = True  # GBNF grammars and logits guards run in-process
        self.supports_guard = True
        self._lock = threading.Lock()  # one generation at a time per Llama instance
        self._prefix: list[int] = []  # tokens of the fixed start of every prompt (the system rules), if known
        self.prefix_status = ""  # how the last call got the prefix's KV state: kept | loaded | saved | "" (none)

    def cache_prefix(self, messages: Sequence[Message]) -> None:
        """Every prompt will start with `messages` (the system rules): keep their KV state on disk so that a
        cold start loads it instead of evaluating them (models/llama_cpp/prefix_cache.py). No messages: forget it."""
        if not messages:
            self._prefix = []
            return
        prompt, added_special, _ = self.tokenizer._renderer.render(messages, add_generation_prompt=False)
        with self._lock:
            self._prefix = self.llm.tokenize(prompt.encode("utf-8"), add_bos=not added_special, special=True)

    def stream(
        self,
        messages: Sequence[Message],
        options: GenerationOptions = GenerationOptions(),
        cancel: CancelFlag | None = None,
    ) -> Iterator[str]:
        """Yield text deltas; stops at EOS, a stop string, max_tokens or cancellation (checked every token)."""
        with self._lock:
            yield from self._stream(messages, options, cancel)

    def _stream(self, messages, options: GenerationOptions, cancel: CancelFlag | None) -> Iterator[str]:
        prompt, added_special, template_stop = self.tokenizer._renderer.render(messages)
        prompt += options.prefix
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=not added_special, special=True)
        if len(tokens) + 1 > self.n_ctx:
            raise GenerationError(
                f"prompt of {len(tokens)} tokens does not fit the {self.n_ctx}-token context: shorten the input"
            )
        max_tokens = max(1, min(options.max_tokens, self.n_ctx - len(tokens)))
        stats = GenerationStats(prompt_tokens=len(tokens))
        sampled = 0
        start = time.perf_counter()
        prefix = self._prefix
        self.prefix_status = ""
        if prefix and len(tokens) > len(prefix) and tokens[: len(prefix)] == prefix:
            from models.paths import cache_dir
            from models.llama_cpp.prefix_cache import PrefixCache

            self.prefix_status = PrefixCache(self.llm, self.config.path, cache_dir() / "kv").ensure(prefix)

        def count_sample(_ids, logits):
            nonlocal sampled
            sampled += 1  # called once before each token is sampled
            return logits

        def stop_check(_ids, _logits) -> bool:
            return cancel is not None and cancel.cancelled

        from llama_cpp import LogitsProcessorList, StoppingCriteriaList

        processors = [count_sample]
        if options.guard is not None:
            from models.llama_cpp.guards import GuardProcessor, vocabulary

            processors.append(GuardProcessor(options.guard, vocabulary(self.llm), len(tokens)))

        try:
            chunks = self.llm.create_completion(
                tokens,
                max_tokens=max_tokens,
                temperature=options.temperature,
                top_k=options.top_k,
                top_p=options.top_p,
                min_p=options.min_p,
                repeat_penalty=options.repeat_penalty,
                stop=list(dict.fromkeys([*template_stop, *options.stop])),
                grammar=_grammar(options.grammar) if options.grammar else None,
                seed=options.seed if options.seed is not None else self.config.seed,
                stopping_criteria=StoppingCriteriaList([stop_check]),
                logits_processor=LogitsProcessorList(processors),
                stream=True,
            )
            finish = "stop"
            for chunk in chunks:
                choice = chunk["choices"][0]
                text = choice.get("text") or ""
                if text:
                    if not stats.time_to_first_token:
                        stats.time_to_first_token = time.perf_counter() - start
                    yield text
                if cancel is not None and cancel.cancelled:
                    finish = "cancelled"
                    break
                if choice.get("finish_reason"):
                    finish = choice["finish_reason"]
            chunks.close()
        except ValueError as exc:
            raise GenerationError(f"llama.cpp failed to generate: {exc}") from None
        finally:
            stats.total_time = time.perf_counter() - start
            stats.completion_tokens = sampled
            self.last_stats = stats
        if cancel is not None and cancel.cancelled:
            finish = "cancelled"
        elif finish == "stop" and sampled:
            stats.completion_tokens = sampled - 1  # the end-of-turn token is sampled but not text
        stats.finish_reason = finish


@functools.lru_cache(maxsize=2)
def _load(path: Path, n_ctx: int) -> LlamaChatModel:
    return LlamaChatModel(ModelConfig(path=path, n_ctx=n_ctx))


def load_chat_model(path: str | Path | None = None, n_ctx: int = 2048) -> LlamaChatModel:
    """The chat model at `path` (default: the packaged SmolLM2-135M), loaded once per process."""
    return _load(resolve_model_path(path).resolve(), n_ctx)
