"""Seams between the packages: what rag and agent need from a model, nothing about llama_cpp."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Hashable, Iterator, Mapping, Protocol, Sequence, TypeVar, runtime_checkable

import numpy as np

Message = Mapping[str, str]  # {"role": "system" | "user" | "assistant" | "tool", "content": str}


@runtime_checkable
class Counter(Protocol):
    def count(self, text: str) -> int: ...


@runtime_checkable
class Tokenizer(Counter, Protocol):
    """The chat model's own tokenizer. Counts are not additive: count whole texts."""

    name: str

    def count(self, text: str) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def render_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str: ...

    def count_chat(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> int: ...


@runtime_checkable
class Embedder(Protocol):
    """Sentence embeddings, L2-normalized float32 rows."""

    model_id: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@runtime_checkable
class QuestionEmbedder(Protocol):
    """An embedder that may give a search question a vector of its own (models.query_tower), the documents keeping
    `embed`'s (rag.indexing.dense.query_vector asks for it)."""

    def embed_query(self, text: str) -> np.ndarray: ...


@runtime_checkable
class QuoteQuestionEmbedder(Protocol):
    """An embedder that may give a question a vector of its own for choosing quotes (models.query_tower's quote
    encoder); None when it has none. The sentences keep `embed`'s vectors."""

    def embed_quote_query(self, text: str) -> np.ndarray | None: ...


class Reranker(Protocol):
    """A cross-encoder: one score per passage for how well it answers the question (a logit). Below `answer_logit`
    for every passage shown, nothing there answers."""

    answer_logit: float
    reads: str  # what it was trained on: "sentences" (a quote under its heading path) or "passages" (whole chunks)

    def score(self, question: str, passages: Sequence[str]) -> np.ndarray: ...


class CancelToken:
    """A flag checked between tokens and between agent steps."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()


class CancelFlag(Protocol):
    """What a model checks between tokens: a CancelToken, or anything that reads as one (several seen together)."""

    @property
    def cancelled(self) -> bool: ...


GuardState = TypeVar("GuardState", bound=Hashable)  # what of the text so far a guard's masks depend on


class TextGuard(Protocol[GuardState]):
    """Which vocabulary pieces may follow the text generated so far: a cheap, Python-side constraint.

    A grammar is checked against every vocabulary entry at every token; a guard's masks are computed once per
    state and cached, and in a `settled` state only pieces containing a `watch` character are ever checked.
    """

    watch: str  # in a settled state, a piece without any of these characters is always allowed

    def state(self, text: str) -> GuardState:
        """What of `text` (everything generated so far) decides the next piece; equal states, equal masks."""
        ...

    def settled(self, state: GuardState) -> bool:
        """True when every piece without a `watch` character may come next."""
        ...

    def allows(self, state: GuardState, piece: str) -> bool:
        """Whether `piece` may come next in `state`."""
        ...

    def starts(self, state: GuardState) -> str | None:
        """The characters a piece may start with in an unsettled `state` (None: any); the rest are refused unseen."""
        ...

    def only(self, state: GuardState, vocab) -> "np.ndarray | None":
        """The allowed ids in `state` (control tokens included only when listed), or None: ask `allows`. A guard
        that spells (the pieces that continue a copied span) names them by looking pieces up by text instead of
        checking the whole vocabulary; the others always return None."""
        ...


@dataclass(frozen=True)
class GenerationOptions:
    max_tokens: int = 256
    temperature: float = 0.2
    top_k: int = 40
    top_p: float = 0.9
    min_p: float = 0.05
    repeat_penalty: float = 1.15
    stop: tuple[str, ...] = ()
    grammar: str | None = None  # GBNF text
    guard: TextGuard[Any] | None = None  # pieces it refuses are never sampled
    seed: int | None = None
    prefix: str = ""  # the reply starts with this text, already written: sent after the prompt, not streamed back


@dataclass
class GenerationStats:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    time_to_first_token: float = 0.0  # seconds from call to first text delta
    total_time: float = 0.0
    finish_reason: str = ""  # "stop" | "length" | "cancelled"
    completion_source: str = "sampled"  # sampled (in-process) | server (its usage) | counted (the text, whole)

    @property
    def tokens_per_second(self) -> float:
        gen_time = self.total_time - self.time_to_first_token
        if self.completion_tokens <= 1 or gen_time <= 0:
            return 0.0
        return (self.completion_tokens - 1) / gen_time


@runtime_checkable
class ChatModel(Protocol):
    """Streams a chat completion as text deltas; `last_stats` describes the last call once it ends.

    Capabilities are declared, not probed: `n_params` (None when unknown) lets `auto` pick a tool policy, and
    `supports_grammar` says whether `GenerationOptions.grammar` and `.guard` are honoured; a model served over HTTP
    also declares `supports_guard = False`: its logits never leave the server.
    """

    name: str
    n_ctx: int
    n_params: int | None
    supports_grammar: bool
    supports_guard: bool  # logits guards (GenerationOptions.guard) run: in-process only
    last_stats: GenerationStats

    @property
    def tokenizer(self) -> Tokenizer:
        """Read-only here, so a backend may hold its own kind (LlamaTokenizer, ServerTokenizer)."""
        ...

    def cache_prefix(self, messages: Sequence[Message]) -> None:
        """Keep the KV state of `messages` for a faster cold start, where the backend can (a no-op elsewhere)."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        options: GenerationOptions = GenerationOptions(),
        cancel: CancelFlag | None = None,
    ) -> Iterator[str]: ...


def protocol_gaps(obj: object, protocol: type) -> list[str]:
    """What `obj` lacks of `protocol`, one line each: a missing member, or a method whose parameters differ.

    isinstance() on a runtime-checkable protocol only checks that the names exist. Wrappers and fakes call this
    where they are built, so a changed seam breaks them there, by name, instead of deep inside a run."""
    import inspect

    gaps = []
    for name in _protocol_members(protocol):
        if not hasattr(obj, name):
            gaps.append(f"missing {name}")
            continue
        wanted = getattr(protocol, name, None)
        if inspect.isfunction(wanted):
            theirs = _parameters(inspect.signature(wanted), drop_self=True)
            ours = _parameters(inspect.signature(getattr(obj, name)), drop_self=False)
            if ours != theirs:
                gaps.append(f"{name}({', '.join(p[0] for p in ours)}) differs from {name}({', '.join(p[0] for p in theirs)})")
    return gaps


def _protocol_members(protocol: type) -> list[str]:
    """The public attributes and methods a protocol declares, its bases' included."""
    names: dict[str, None] = {}
    for base in reversed(protocol.__mro__):
        if base in (object, Protocol) or not getattr(base, "_is_protocol", False):
            continue
        for name in [*getattr(base, "__annotations__", {}), *vars(base)]:
            if not name.startswith("_"):
                names[name] = None
    return list(names)


def _parameters(signature, drop_self: bool) -> list[tuple[str, object, bool]]:
    params = list(signature.parameters.values())[1 if drop_self else 0 :]
    return [(p.name, p.kind, p.default is not p.empty) for p in params]
