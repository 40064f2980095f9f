"""Every way a turn ends without an answer from the docs: one reason each, and the one text shown for it.

Whether the docs cover a question is decided by rag.answering.answerability (for extractive and quote answers)
or by the model saying so (free answers); this module names each exit of the answer path and what it shows, and
agent.turn.outcome decides which one applies (an Answer records it as `decline`). The reasons themselves,
Decline, live in agent.events beside the Answer that carries them, so the surfaces read them without the turn.
"""

from __future__ import annotations

from agent.events import Decline
from agent.turn.prompts import NOT_COVERED, UNSUPPORTED_NOTE

TEXT = {
    Decline.EMPTY_QUESTION: "Ask a question about the docs.",
    Decline.NO_EXCERPT: f"{NOT_COVERED} search_docs found no excerpt for this question.",
    Decline.NO_CLOSE_SENTENCE: f"{NOT_COVERED} No excerpt sentence comes close to the question.",
    Decline.NOT_ANSWERABLE: NOT_COVERED,
    Decline.MODEL_DECLINED: NOT_COVERED,
    Decline.NOTHING_SUPPORTED: UNSUPPORTED_NOTE,
}


def decline_text(reason: Decline) -> str:
    """What the answer shows for `reason`."""
    return TEXT[reason]
