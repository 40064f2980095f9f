"""Typed events of one agent turn. The CLI, the TUI and the eval consume the same stream."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from rag.types import Hit


@dataclass(frozen=True)
class TurnStarted:
    question: str
    turn: int  # 0 for the first question of a chat
    policy: str  # "search-first" | "model"


@dataclass(frozen=True)
class SearchStarted:
    query: str
    k: int
    doc_ids: tuple[str, ...] = ()
    call_id: int = 0


@dataclass(frozen=True)
class SearchFinished:
    query: str
    hits: tuple[Hit, ...]  # as retrieved, in rank order
    packed: tuple[int, ...]  # ledger numbers of the excerpts kept
    dropped: int
    omissions: tuple[Any, ...] = ()  # rag.packing omissions
    result: str = ""  # what the model was given
    error: str | None = None  # a tool error the model sees as a result
    call_id: int = 0
    excerpts: tuple[tuple[int, str], ...] = ()  # (ledger number, chunk id) of each excerpt kept


@dataclass(frozen=True)
class ContextBuilt:
    """The prompt about to be sent, counted whole with the model's template and tokenizer."""

    prompt_tokens: int
    n_ctx: int
    reserve: int  # tokens kept free for the answer
    layers: dict[str, int]  # system, evidence, history, question: tokens each layer added
    omissions: tuple[str, ...] = ()  # what was dropped to fit, one line each


@dataclass(frozen=True)
class TextDelta:
    text: str


# Strongest first. Where one number gets two verdicts (several claims cite it; the model's words and the quotes
# are checked apart) it keeps the weaker: one good use of [n] must not vouch for another.
VERDICT_STRENGTH = {"supported": 5, "weak": 4, "cited": 3, "unsupported": 2, "unresolved": 1, "made_up": 0}


def weaker(a: "CitationVerdict", b: "CitationVerdict") -> "CitationVerdict":
    """The verdict to show for one number judged twice."""
    return a if VERDICT_STRENGTH.get(a.verdict, 0) < VERDICT_STRENGTH.get(b.verdict, 0) else b


@dataclass(frozen=True)
class CitationVerdict:
    n: int
    chunk_id: str | None
    doc_id: str | None
    uri: str | None
    verdict: str  # supported | weak | unsupported | cited | made_up | unresolved
    support: float | None = None  # support score, when judged
    evidence: str | None = None  # best-matching sentence of the cited chunk


@dataclass(frozen=True)
class ClaimVerdict:
    text: str
    citations: tuple[int, ...]
    verdict: str  # supported | weak | unsupported | made_up | unresolved | uncited
    support: float | None = None
    evidence: str | None = None


@dataclass
class Answer:
    question: str
    text: str
    status: str  # answered | insufficient_evidence | cancelled | error
    citations: list[CitationVerdict] = field(default_factory=list)
    claims: list[ClaimVerdict] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)  # markers no excerpt carried
    unresolved: list[int] = field(default_factory=list)  # markers whose chunk is not in the index
    quoted: bool = False  # text is an extractive fallback of quoted sentences, not the model's words
    model_text: str = ""  # what the model wrote, when `text` differs from it
    prompt_tokens: int = 0
    completion_tokens: int = 0
    n_ctx: int = 0
    time_to_first_token: float = 0.0
    total_time: float = 0.0
    tokens_per_second: float = 0.0
    trace: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class AnswerFinished:
    answer: Answer


@dataclass(frozen=True)
class ErrorEvent:
    message: str
    fatal: bool = False


Event = Union[TurnStarted, SearchStarted, SearchFinished, ContextBuilt, TextDelta, AnswerFinished, ErrorEvent]
