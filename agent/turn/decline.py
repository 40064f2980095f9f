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


# Reasons given once excerpts were shown: a name the question asks about that none of them mentions is worth saying.
_AFTER_EXCERPTS = (Decline.NOT_ANSWERABLE, Decline.MODEL_DECLINED, Decline.NOTHING_SUPPORTED)


def named(reason: Decline, unknown: tuple[str, ...], unshown: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The names a decline for `reason` says are missing: `unknown`, names the question asks about that the docs
    never mention (not for an empty question), and `unshown`, names the docs mention but none of the shown excerpts
    does (only once excerpts were shown)."""
    return (unknown if reason is not Decline.EMPTY_QUESTION else ()), (unshown if reason in _AFTER_EXCERPTS else ())


def decline_text(reason: Decline, unknown: tuple[str, ...] = (), unshown: tuple[str, ...] = ()) -> str:
    """What the answer shows for `reason`, with the missing names `named` keeps for it."""
    unknown, unshown = named(reason, unknown, unshown)
    said = []
    if unknown:
        said.append(f"The docs never mention {_listed(unknown)}.")
    if unshown:
        said.append(f"None of the excerpts found mentions {_listed(unshown)}.")
    text = TEXT[reason]
    if not said:
        return text
    if text.endswith(")"):  # smoldocs' own parenthesised note keeps its parentheses round all it says
        return f"{text[:-1]} {' '.join(said)})"
    return f"{text} {' '.join(said)}"


MAX_NAMED = 4  # a question listing many names gets the first few said and the rest counted (--json lists them all)


def _listed(names: tuple[str, ...]) -> str:
    """"A", "A or B", "A, B or C"; past MAX_NAMED, "A, B, C, D or 3 more"."""
    if len(names) > MAX_NAMED:
        return f"{', '.join(names[:MAX_NAMED])} or {len(names) - MAX_NAMED} more"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
