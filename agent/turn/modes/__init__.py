"""How a turn's answer is made, one module per mode; the Agent chooses one mode per turn from the settings.

| mode | serves | measured (docs_corpus, 164 questions, SmolLM2-135M) |
|---|---|---|
| extractive | models under 1B (the `auto` default there): no model call, the scorer's best quotes | displayed precision 0.98, evidence hit 75.7%, 0.2 s p50 |
| free | models of 1B and more (the `auto` default there): the model's sentences, only verified ones shown; `guarded` (a shown-number guard) and `constrained` (a citation grammar) are free with a guard | on the 135M model nothing it writes verifies: it shows what extractive shows, 9 s later |
| quote | trying how well a model copies: it copies spans of the scorer's best sentences | displayed precision 1.00, evidence hit 36.2%, 2.7 s p50 |
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping, Protocol, Sequence

from agent.events import Answer, Event
from models.protocols import CancelToken

if TYPE_CHECKING:
    from agent.events import AnswerFinished, AnswerStatus
    from agent.turn.quoting import QuoteCandidates, Span
    from agent.turn.verified import Display
    from models.protocols import ChatModel, GenerationOptions
    from rag.answering.extractive import Quoter
    from rag.types import Retriever
    from agent.turn.outcome import Facts
    from rag.verification.verdicts import Judge, Verification
    from rag.citations import Citation, CitationLike
    from rag.excerpts.packing import Ledger


@dataclass(frozen=True)
class Turn:
    """What a mode answers from: the prompt, the excerpts it showed, and the answer so far."""

    question: str
    messages: list[dict]
    reserve: int  # tokens left for the answer
    shown: Mapping[int, "Citation"]
    spans: list["Span"]  # quote decoding: the spans the model may copy
    base: Answer
    cancel: CancelToken


class Answerer(Protocol):
    """What a mode uses of the agent that runs the turn (agent.turn.loop.Agent)."""

    model: "ChatModel"
    retriever: "Retriever"
    judge: "Judge"
    quoter: "Quoter | None"
    candidates: "QuoteCandidates | None"

    def concluded(self, facts: "Facts", base: Answer, verification: "Verification | None" = None) -> "AnswerFinished": ...

    def absent(self, facts: "Facts", question: str, shown: "Mapping[int, CitationLike] | None" = None) -> "Facts": ...

    def answer_options(self, reserve: int) -> "GenerationOptions": ...

    def generate(self, turn: "Turn", options: "GenerationOptions", opening: str = "", watch_repeats: bool = True): ...

    def finished(self, turn: "Turn", model_text: str, status: "AnswerStatus", display: "Display", generation,
                 abstained: bool = False) -> "AnswerFinished": ...


class AnswerMode(Protocol):
    name: str
    quoting: bool  # the prompt shows the quote candidates' excerpts, best first, and asks for copies

    def offer(self, agent: "Answerer", question: str, ledger: "Ledger", blocks: dict[int, str]) -> tuple[list["Span"], dict[int, str]]:
        """The spans the model may copy and the excerpt blocks the prompt shows."""
        ...

    def respond(self, agent: "Answerer", turn: Turn) -> Iterator[Event]:
        """The answer's events, ending in AnswerFinished."""
        ...


def shown_excerpts(citations: Sequence["Citation"], numbers: Sequence[int]) -> dict[int, "Citation"]:
    """The ledger's citations restricted to the numbers that reached the prompt."""
    wanted = set(numbers)
    return {c.n: c for c in citations if c.n in wanted}


def mode_for(decoding: str) -> AnswerMode:
    """The mode of a resolved decoding setting (`auto` resolved already)."""
    from agent.turn.modes.extractive import Extractive
    from agent.turn.modes.free import Free
    from agent.turn.modes.quote import Quote

    modes: dict[str, AnswerMode] = {"extractive": Extractive(), "free": Free(), "guarded": Free("guarded"), "constrained": Free("constrained"),
             "quote": Quote()}
    if decoding not in modes:
        raise ValueError(f"unknown decoding {decoding!r}: choose one of {', '.join(modes)}")
    return modes[decoding]
