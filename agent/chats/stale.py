"""Stale citations: a saved answer cites text the index no longer holds as it was shown."""

from __future__ import annotations

from typing import Callable, Iterable

from agent.events import Answer, Event, shown_hits
from rag.types import Chunk
from rag.verification.verdicts import Verdict

CHANGED, VANISHED = "changed", "vanished"


def stale_citations(answer: Answer, events: Iterable[Event], lookup: Callable[[str], Chunk | None]) -> dict[int, str]:
    """Each cited number whose chunk text changed since the turn showed it, or that the index no longer holds.

    The text compared is the excerpt as the turn's search showed it (saved with the chat), with whitespace
    folded; made-up numbers cite nothing and are never stale.
    """
    shown = shown_hits(events)
    out: dict[int, str] = {}
    for c in answer.citations:
        if c.verdict is Verdict.MADE_UP or not c.chunk_id:
            continue
        now = lookup(c.chunk_id)
        if now is None:
            out[c.n] = VANISHED
            continue
        then = shown.get(c.n)
        if then is not None and " ".join(then.text.split()) != " ".join(now.text.split()):
            out[c.n] = CHANGED
    return out
