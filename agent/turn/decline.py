"""Every way a turn ends without an answer from the docs: one reason each, and the one text shown for it.

Whether the docs cover a question is decided by rag.answering.answerability (for extractive and quote answers)
or by the model saying so (free answers); this module names each exit of the answer path and what it shows, and
agent.turn.outcome decides which one applies (an Answer records it as `decline`).
"""

from __future__ import annotations

from enum import StrEnum

from agent.turn.prompts import NOT_COVERED, UNSUPPORTED_NOTE


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
