"""What the benchmarks run on: the real model, the real docs index, and prompts captured from the real agent."""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Iterator, Sequence

from models.protocols import CancelToken, ChatModel, GenerationOptions, GenerationStats, Message, protocol_gaps

QUESTION = "How does the KV cache speed up generation?"
FOLLOW_UP = "How much memory does it take for SmolLM2?"
CANNED_ANSWER = "The KV cache stores the keys and values of earlier tokens, so they are not computed again [1]."


def implements(obj, protocol: type):
    """`obj`, once it has every member of `protocol` with the same parameters; else a TypeError naming the gaps.

    The benchmarks wrap the real parts in small recorders: each checks itself when built, so a changed seam
    stops them at once instead of measuring something else (or failing deep inside the agent)."""
    gaps = protocol_gaps(obj, protocol)
    if gaps:
        raise TypeError(f"{type(obj).__name__} does not implement models.protocols.{protocol.__name__}: {'; '.join(gaps)}")
    return obj


@functools.lru_cache(maxsize=1)
def chat_model():
    """The packaged SmolLM2 chat model, as the agent loads it."""
    from models.llama_cpp.chat import load_chat_model

    return load_chat_model()


@functools.lru_cache(maxsize=1)
def docs_index():
    """The hybrid index of docs_corpus/ (built on first use, then read from the cache)."""
    from models.llama_cpp.embedder import load_embedder
    from rag.indexing.build import open_index

    return open_index(None, chat_model().tokenizer, load_embedder())


class PromptRecorder:
    """A ChatModel for the agent that records every prompt; live: the real model answers, else a canned reply.

    It declares every ChatModel member itself (no __getattr__ passing through): a member the protocol gains
    stops the benchmarks here, by name, instead of an AttributeError deep inside the agent."""

    def __init__(self, model: ChatModel, live: bool = False) -> None:
        self.model = model
        self.live = live
        self.name = model.name
        self.n_ctx = model.n_ctx
        self.tokenizer = model.tokenizer
        self.n_params = model.n_params
        self.supports_grammar = model.supports_grammar
        self.supports_guard = model.supports_guard
        self.prompts: list[tuple[list[Message], GenerationOptions]] = []
        self.prefixes: list[list[Message]] = []  # what the agent asked to keep the KV state of
        implements(self, ChatModel)

    @property
    def last_stats(self) -> GenerationStats:
        return self.model.last_stats if self.live else GenerationStats()

    def cache_prefix(self, messages: Sequence[Message]) -> None:
        """Recorded, not passed on: the benchmarks time the model without the rules' KV state on disk (as before
        the agent asked for it); end_to_end measures what that cache saves on a cold start."""
        self.prefixes.append([dict(m) for m in messages])

    def stream(
        self, messages: Sequence[Message], options: GenerationOptions = GenerationOptions(), cancel: CancelToken | None = None
    ) -> Iterator[str]:
        self.prompts.append(([dict(m) for m in messages], options))
        if self.live:
            yield from self.model.stream(messages, options, cancel)
        else:
            yield CANNED_ANSWER


def session(recorder: PromptRecorder, k: int = 5, answer_tokens: int | None = None, decoding: str = "free"):
    """A real ChatSession (search-first, as `auto` picks for SmolLM2) over the docs index, driving `recorder`;
    `answer_tokens` caps the answers' length (None: the agent's own setting)."""
    from agent.session import ChatSession
    from agent.settings import AgentSettings
    from models.llama_cpp.embedder import load_embedder

    settings = AgentSettings(policy="search-first", k=k, decoding=decoding)
    if answer_tokens is not None:
        settings = settings.with_(generation=replace(settings.generation, max_tokens=answer_tokens))
    return ChatSession(recorder, docs_index(), embedder=load_embedder(), settings=settings)


def answer_prompt(question: str = QUESTION, k: int = 5, decoding: str = "free") -> tuple[list[Message], GenerationOptions]:
    """The messages and options the agent sends for the answer to `question` (one turn, no history)."""
    recorder = PromptRecorder(chat_model())
    for _ in session(recorder, k=k, decoding=decoding).ask(question):
        pass
    return recorder.prompts[-1]


def finish(events) -> object:
    """Drain a turn's events; the final Answer."""
    answer = None
    for event in events:
        answer = getattr(event, "answer", answer)
    return answer
