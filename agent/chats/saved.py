"""What a saved chat is: its turns with their recorded events, and the facts the chat list shows."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from agent.events import Answer, AnswerFinished, AnswerStatus, Event, TextDelta


@dataclass
class SavedTurn:
    """One question of a saved chat and every event recorded for it."""

    question: str
    events: list[Event] = field(default_factory=list)

    @property
    def answer(self) -> Answer:
        """The final answer; an answer cut off by a kill keeps what streamed as its unverified draft, cancelled."""
        for event in reversed(self.events):
            if isinstance(event, AnswerFinished):
                return event.answer
        text = "".join(e.text for e in self.events if isinstance(e, TextDelta))
        return Answer(question=self.question, text="", status=AnswerStatus.CANCELLED, model_text=text, draft=text)

    @property
    def complete_events(self) -> list[Event]:
        """The events, ending in an AnswerFinished even when the app died before writing one."""
        if any(isinstance(e, AnswerFinished) for e in self.events):
            return list(self.events)
        return [*self.events, AnswerFinished(self.answer)]


@dataclass(frozen=True)
class ChatInfo:
    chat_id: str
    title: str  # the first question
    created: float  # epoch seconds
    updated: float
    turns: int
    path: Path
    damaged_after: int | None = None  # the intact turns before a damaged line; None when the file is whole
    damage: str = ""  # what is wrong, e.g. "line 7 is not a saved event"
    text: str = ""  # every question and answer, for the chat list's filter

    @property
    def when(self) -> str:
        return datetime.fromtimestamp(self.updated).strftime("%Y-%m-%d %H:%M")

    def matches(self, query: str) -> bool:
        """True when every word of `query` occurs in the title, a question or an answer, whatever the case."""
        haystack = f"{self.title}\n{self.text}".casefold()
        return all(word in haystack for word in query.casefold().split())


def chat_text(turns: list[SavedTurn]) -> str:
    """What a chat's text search reads: each question and its answer's text (a cut-off answer's draft too)."""
    return "\n".join(f"{t.question}\n{t.answer.text or t.answer.draft}" for t in turns)


@dataclass(frozen=True)
class SavedNote:
    """A line the chat noted between its turns (a switch of folder or model), after its first `after` turns."""

    after: int
    text: str


@dataclass
class SavedChat:
    info: ChatInfo
    meta: dict
    turns: list[SavedTurn]
    notes: list[SavedNote] = field(default_factory=list)
