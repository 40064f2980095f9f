"""Messages the TUI's workers and widgets send: every thread talks to the UI only through these."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from agent.events import Event
from agent.session import Session
from rag.types import Hit

if TYPE_CHECKING:
    from agent.surfaces.tui.citation_screen import CitationInfo
    from agent.surfaces.tui.switching import Switch


@dataclass
class LoadProgress(Message):
    """Loading the session: what is happening, and how far (None when unknown)."""

    label: str
    done: float | None = None
    total: float | None = None
    stage: str = ""  # rag.indexing.build.IndexProgress.stage; after loading, "embed" and "notice" still come


@dataclass
class SessionReady(Message):
    session: Session
    switch: "Switch | None" = None  # set when the session replaces another (agent.surfaces.tui.switching)


@dataclass
class SwitchFailed(Message):
    """The switched-to session could not open: why, and the switch (its `previous` choice is opened again)."""

    message: str
    switch: "Switch"


@dataclass
class SessionFailed(Message):
    message: str


@dataclass
class TurnEvent(Message):
    """One event of the agent's turn `turn_id`, in the order the session yielded it."""

    turn_id: int
    event: Event


@dataclass
class TurnEnded(Message):
    turn_id: int


@dataclass
class SearchResults(Message):
    """Hits of a `/search` (no model involved)."""

    query: str
    hits: list[Hit]
    error: str | None = None


@dataclass
class OpenCitation(Message):
    """Show excerpt `n` of turn `turn_id` (None: the latest answer)."""

    n: int
    turn_id: int | None = None


@dataclass
class AnswerSelected(Message):
    """The user clicked an answer: the sources panel, 1-9 and Ctrl+T now refer to it."""

    turn_id: int


@dataclass
class CopyQuote(Message):
    """Copy the quote of the source the citation view shows."""

    info: "CitationInfo"


@dataclass
class OpenSource(Message):
    """Open the source the citation view shows in the pager or the editor (agent.surfaces.tui.open_source.OPENERS)."""

    info: "CitationInfo"
    opener: str
