"""Settings: everything one run is set up with (`Settings`), and how a turn runs (`AgentSettings`, part of it)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from models.protocols import GenerationOptions
from rag.excerpts.search_tool import DEFAULT_MAX_TOKENS

if TYPE_CHECKING:
    from rag.indexing.collections import Collections
    from rag.ingest.man_pages import ManSource

POLICIES = ("auto", "search-first", "model")
DECODINGS = ("auto", "free", "guarded", "constrained", "quote", "extractive")
RERANK_DEFAULT = False  # measured on the real-docs held-back packages (benchmarks/realdocs/RESULTS.md)
SMALL_MODEL_PARAMS = 1_000_000_000  # below this, `auto` searches first: small models call tools badly


def answer_options() -> GenerationOptions:
    # Low temperature with a repeat penalty: greedy decoding made SmolLM2-135M loop ("the prefix of the prefix").
    return GenerationOptions(max_tokens=256, temperature=0.2, top_k=40, top_p=0.9, min_p=0.05, repeat_penalty=1.2)


def tool_options() -> GenerationOptions:
    # The tool-call grammar bounds a call to ~200 characters (query <= 120), so 200 tokens always let it close:
    # at 96 a looping query ("KV_CACHE_CACHE_...") was cut off as invalid JSON.
    return GenerationOptions(max_tokens=200, temperature=0.0, repeat_penalty=1.0)


@dataclass(frozen=True)
class Effective:
    """Every setting's value and where it came from: `flag --x`, `env X`, `file`, or `default`."""

    values: dict
    sources: dict
    path: Path
    file_found: bool
    api_key: str | None = None
    api_key_source: str = "none"


@dataclass(frozen=True)
class Budgets:
    n_ctx: int = 2048
    reserve: int = 256  # kept free for the answer (the generation's max_tokens)
    question_max: int = 256
    history_max: int = 640
    evidence_max: int = DEFAULT_MAX_TOKENS
    evidence_min: int = 320  # older history is dropped before evidence gets less than this

    @property
    def prompt_limit(self) -> int:
        return self.n_ctx - self.reserve

    @classmethod
    def for_window(cls, n_ctx: int) -> "Budgets":
        """The default budgets for a model whose window is not 2048: history and evidence scale with it."""
        base = cls()
        scale = n_ctx / base.n_ctx
        return cls(n_ctx=n_ctx, history_max=int(base.history_max * scale), evidence_max=int(base.evidence_max * scale))


@dataclass(frozen=True)
class AgentSettings:
    policy: str = "auto"
    k: int = 5
    max_steps: int = 3  # model policy: tool rounds before the answer step
    # free: unconstrained (the default: fewest wrong citations, measured below); guarded: free text in which `[`
    # can only open a marker naming a shown excerpt, so no number is made up (a Python guard, ~2% of decode
    # speed); constrained: every sentence must end with a shown marker (a grammar, ~30% of decode speed).
    # Full eval, search-first, 159 questions: made-up 2.0% / 0% / 0%, unsupported citations 74 / 127 / 298,
    # precision 0.35 / 0.32 / 0.29: barred from writing [6] or a [link](...), SmolLM2-135M writes a wrong shown
    # number instead, so the guard trades 6 made-up numbers for 53 more unsupported ones.
    # quote: the answer opens with a reference copied verbatim from one of the quote scorer's best sentences
    # (a copy guard, agent/turn/quoting.py), cited by the system, then an optional short claim, up to 3 times.
    # extractive: no model call; the best quotes of the shown excerpts, or a refusal (the baseline of #16).
    # auto: extractive below 1B parameters, free above (and when the size is unknown). Measured (all 164
    # questions, SmolLM2-135M): free, guarded and constrained showed exactly the sentences extractive shows (the
    # model's own words were never verified: model share 0%), displayed precision 0.98 and evidence hit 0.757 for
    # all four, at 9 s vs 0.2 s; quote 1.00 / 0.36.
    decoding: str = "auto"
    tool_grammar: bool = True  # model policy: force tool calls into the schema's shape
    fallback: bool = True  # extractive quotes when no claim of the model's answer is supported
    few_shot: bool = True  # one worked example after the system rules (measured: fewer made-up numbers)
    # The cross-encoder (models.reranker) orders the quotes and decides declines; off: the quote scorer's features.
    rerank: bool = RERANK_DEFAULT
    budgets: Budgets = field(default_factory=Budgets)
    generation: GenerationOptions = field(default_factory=answer_options)
    tool_generation: GenerationOptions = field(default_factory=tool_options)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown tool policy {self.policy!r}: choose one of {', '.join(POLICIES)}")
        if self.decoding not in DECODINGS:
            raise ValueError(f"unknown decoding {self.decoding!r}: choose one of {', '.join(DECODINGS)}")

    def with_(self, **changes) -> "AgentSettings":
        return replace(self, **changes)

    def resolve_decoding(self, n_params: int | None) -> str:
        """The decoding in force: `auto` is extractive for a model known to be small, free otherwise."""
        if self.decoding != "auto":
            return self.decoding
        return "extractive" if n_params is not None and n_params < SMALL_MODEL_PARAMS else "free"

    def resolve_policy(self, n_params: int | None) -> str:
        if self.policy != "auto":
            return self.policy
        if n_params is None or n_params < SMALL_MODEL_PARAMS:
            return "search-first"
        return "model"


@dataclass(frozen=True)
class Settings:
    """What one run is set up with, resolved once at the CLI's entry (agent.config.settings_from): flags over the
    environment over the settings file over defaults. `origin` keeps every value's source (`smoldocs config`)."""

    docs: Path | ManSource | None = None  # None: the bundled docs; --man's pages stay a ManSource
    index: Path | None = None
    # Every named source the docs are read from (rag.indexing.collections): --docs given several times, --man/--info
    # after one, or the settings file's [collections]. None: the one source `docs` (and `index`), as built in code.
    sources: Collections | None = None
    collections: tuple[str, ...] = ()  # --collection: the collections every search stays in (); all of them
    store: str | None = None  # a PostgreSQL URL: the shared index instead of a folder's
    quiet: bool = False  # no indexing progress
    current_only: bool = False
    embed_budget: float | None = None  # seconds a one-shot command embeds before answering; None: all
    model: Path | None = None  # the chat GGUF (None: the packaged SmolLM2-135M)
    base_url: str | None = None  # a model server instead of an in-process GGUF
    api_key: str | None = None
    model_name: str | None = None
    tokenizer: Path | None = None
    n_ctx: int | None = None
    connect_timeout: float = 5.0
    first_token_timeout: float = 120.0
    token_timeout: float = 60.0
    answer_timeout: float = 600.0
    embed_url: str | None = None  # an embeddings server instead of MiniLM in-process
    embed_model: str | None = None
    # The question's vectors: "tuned", from the question encoders trained on the fit packages (models.query_tower:
    # search's, held back R@5 0.95 -> 0.96, evidence sentence 0.46 -> 0.48; and the quote scorer's:
    # benchmarks/realdocs/RESULTS.md), or "base", MiniLM's own for search and no quote encoder.
    queries: str = "tuned"
    agent: AgentSettings = field(default_factory=AgentSettings)
    origin: Effective | None = None  # None: built in code, not resolved from flags, environment and file

    def with_(self, **changes) -> "Settings":
        return replace(self, **changes)
