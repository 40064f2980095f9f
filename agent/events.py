"""Typed events of one agent turn. The CLI, the TUI, the eval and the saved chats consume the same stream."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Iterable, Union

from rag.excerpts.packing import Omission
from rag.types import Hit
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict, numbers_with


class Decline(StrEnum):
    EMPTY_QUESTION = "empty_question"  # nothing was asked
    NO_EXCERPT = "no_excerpt"  # search showed no excerpt
    NO_CLOSE_SENTENCE = "no_close_sentence"  # quote decoding: no excerpt sentence to offer the model
    NOT_ANSWERABLE = "not_answerable"  # the answerability rule: the shown excerpts do not answer the question
    MODEL_DECLINED = "model_declined"  # the model said the docs do not cover it
    NOTHING_SUPPORTED = "nothing_supported"  # nothing the model wrote holds, and no quote comes close

    @classmethod
    def of(cls, value: object) -> "Decline | None":
        """The reason a saved word names; None for none, or for a word this version does not know."""
        try:
            return cls(str(value)) if value else None
        except ValueError:
            return None


@dataclass(frozen=True)
class TurnStarted:
    question: str
    turn: int  # 0 for the first question of a chat
    policy: str  # "search-first" | "model"


@dataclass(frozen=True)
class ToolStep:
    """One tool round of the model policy: what the model wrote, how many calls parsed, why the rest did not."""

    text: str
    calls: int
    parse_errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchStarted:
    query: str
    k: int
    doc_ids: tuple[str, ...] = ()
    call_id: int = 0
    by_model: bool = False  # a call the model wrote; else the agent's own search of the question


@dataclass(frozen=True)
class SearchFinished:
    query: str
    hits: tuple[Hit, ...]  # as retrieved, in rank order
    packed: tuple[int, ...]  # ledger numbers of the excerpts kept
    dropped: int
    omissions: tuple[Omission, ...] = ()
    result: str = ""  # what the model was given
    error: str | None = None  # a tool error the model sees as a result
    call_id: int = 0
    excerpts: tuple[tuple[int, str], ...] = ()  # (ledger number, chunk id) of each excerpt kept
    arguments: Any = None  # the call's arguments as given (a dict, or whatever the model wrote)
    by_model: bool = False
    searched: str = ""  # the query as searched when a misspelt word was read as another ("cahce" as "cache"); "": as given

    @property
    def ok(self) -> bool:
        return self.error is None


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


class AnswerStatus(StrEnum):
    """How a turn ended. A str, so saved chats and JSON carry the plain word."""

    ANSWERED = "answered"  # something supported (or quoted) is shown
    INSUFFICIENT_EVIDENCE = "insufficient_evidence"  # the docs do not cover the question: smoldocs declined
    CANCELLED = "cancelled"  # the user stopped it; what streamed is kept as the draft
    ERROR = "error"  # the model or a tool failed
    INTERRUPTED = "interrupted"  # the model server stopped mid-answer; what streamed is kept
    NOT_ASKED = "not_asked"  # `smoldocs eval --no-model`: searched and packed, no model asked

    @classmethod
    def of(cls, value: str) -> "AnswerStatus":
        """The status a saved word names; an unknown word (a newer smoldocs) reads as an error."""
        try:
            return cls(value)
        except ValueError:
            return cls.ERROR


@dataclass(frozen=True)
class Answer:
    """The final answer of one turn, built once when the turn ends."""

    question: str
    text: str
    status: AnswerStatus
    citations: tuple[CitationVerdict, ...] = ()  # one per number the text cites, made-up ones included
    claims: tuple[ClaimVerdict, ...] = ()
    quoted: bool = False  # text is an extractive fallback of quoted sentences, not the model's words
    model_text: str = ""  # what the model wrote, when `text` differs from it
    draft: str = ""  # the model's words the verifier did not support: never part of `text`
    prompt_tokens: int = 0
    completion_tokens: int = 0
    n_ctx: int = 0
    time_to_first_token: float = 0.0
    total_time: float = 0.0
    tokens_per_second: float = 0.0
    stop_reason: str | None = None  # why generation was cut short by the agent (a loop guard), if it was
    conflicts: tuple[dict, ...] = ()  # rag.excerpts.conflicts.Conflict.to_json() of the excerpts shown: sources disagree
    decline: Decline | None = None  # why smoldocs' own note is shown instead of an answer (agent.turn.outcome)
    missing_from_docs: tuple[str, ...] = ()  # with a decline: names the question asks about that the docs never mention
    missing_from_excerpts: tuple[str, ...] = ()  # with a decline: names the docs hold but no shown excerpt does

    @property
    def unknown(self) -> tuple[int, ...]:
        """Markers no excerpt carried: made-up numbers."""
        return numbers_with(self.citations, Verdict.MADE_UP)

    @property
    def unresolved(self) -> tuple[int, ...]:
        """Markers whose chunk is not in the index as shown."""
        return numbers_with(self.citations, Verdict.UNRESOLVED)

    def verdicts(self) -> dict[int, Verdict]:
        """The verdict of every number the answer cites."""
        return {c.n: c.verdict for c in self.citations}


@dataclass(frozen=True)
class AnswerFinished:
    answer: Answer


@dataclass(frozen=True)
class ErrorEvent:
    message: str
    fatal: bool = False


Event = Union[
    TurnStarted, ToolStep, SearchStarted, SearchFinished, ContextBuilt, TextDelta, AnswerFinished, ErrorEvent
]
EVENT_TYPES: tuple[type, ...] = (
    TurnStarted, ToolStep, SearchStarted, SearchFinished, ContextBuilt, TextDelta, AnswerFinished, ErrorEvent
)


def shown_hits(events: Iterable[Event]) -> dict[int, Hit]:
    """The numbered excerpts one turn showed the model: ledger number -> hit.

    SearchFinished lists the hits in rank order and the numbers of those kept; the kept hits are the ones
    no omission names, in the same order.
    """
    found: dict[int, Hit] = {}
    for event in events:
        if not isinstance(event, SearchFinished) or event.error:
            continue
        left_out = {o.rank for o in event.omissions}
        kept = [h for rank, h in enumerate(event.hits, 1) if rank not in left_out]
        for n, hit in zip(event.packed, kept):
            found.setdefault(n, hit)
    return found


