"""What a turn shows, decided in one place: a pure function of the turn's facts.

Every exit of the answer path comes here with what it knows (was anything asked, were excerpts shown, what the
verifier supports of the model's words, which quotes hold); the answer it returns is the shown text, whether it is
smoldocs' own quotes, how the turn ended, and the decline reason when smoldocs' own note is shown instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.events import AnswerStatus
from agent.turn.decline import Decline, decline_text, named


@dataclass(frozen=True)
class Facts:
    """What the turn knows when it ends. The defaults are a turn that searched, showed excerpts and answered."""

    asked: bool = True  # the question has words
    offered: bool = True  # quote decoding: some excerpt sentence came close enough to offer the model
    shown: bool = True  # excerpts reached the prompt
    status: AnswerStatus = AnswerStatus.ANSWERED  # how generation ended (no model call: answered)
    wrote: bool = True  # the model was asked to write (free and quote decoding); extractive answers: False
    abstained: bool = False  # the model said the docs do not cover the question
    verified: str = ""  # what the verifier supports of the model's words, as shown
    quotes: str = ""  # smoldocs' own quotes of the shown excerpts that the verifier holds ("": none, or not sought)
    unknown: tuple[str, ...] = ()  # names the question asks about that the docs never mention (a decline says them)
    unshown: tuple[str, ...] = ()  # names the docs mention but none of the shown excerpts does


@dataclass(frozen=True)
class Outcome:
    """The shown answer: its text, whether it is smoldocs' quotes, how the turn ended, and why it declined."""

    text: str
    status: AnswerStatus
    quoted: bool = False
    decline: Decline | None = None  # set exactly when `text` is smoldocs' own note for it
    missing_from_docs: tuple[str, ...] = ()  # names the decline says the docs never mention
    missing_from_excerpts: tuple[str, ...] = ()  # names it says the docs hold but no shown excerpt does


def decide(facts: Facts) -> Outcome:
    """The shown answer of a turn with these facts."""
    if not facts.asked:
        return declined(Decline.EMPTY_QUESTION)
    if not facts.offered:
        return declined(Decline.NO_CLOSE_SENTENCE, facts)
    if not facts.shown:
        return declined(Decline.NO_EXCERPT, facts)
    status = ended(facts)
    if facts.verified:
        return Outcome(facts.verified, status)
    if status is AnswerStatus.INSUFFICIENT_EVIDENCE:
        return declined(Decline.MODEL_DECLINED, facts)  # anything more the model said stays in the draft
    if status is not AnswerStatus.ANSWERED:
        return Outcome("", status)  # cancelled, failed or interrupted: what streamed stays the draft
    if facts.quotes:
        return Outcome(facts.quotes, status, quoted=True)
    # Nothing the model wrote holds and no quote comes close; with no model call, the quotes were the answer.
    return declined(Decline.NOTHING_SUPPORTED if facts.wrote else Decline.NOT_ANSWERABLE, facts)


def ended(facts: Facts) -> AnswerStatus:
    """How generation ended, an answer in which the model declined counting as insufficient evidence."""
    if facts.status is AnswerStatus.ANSWERED and facts.abstained:
        return AnswerStatus.INSUFFICIENT_EVIDENCE
    return facts.status


def wants_quotes(facts: Facts) -> bool:
    """Whether quotes that hold would be the shown answer: the caller scores and judges them only then."""
    return decide(replace(facts, quotes="")).decline in (Decline.NOTHING_SUPPORTED, Decline.NOT_ANSWERABLE)


def declined(reason: Decline, facts: Facts = Facts()) -> Outcome:
    """smoldocs' own note for `reason` (naming what the question asks about that `facts` say is missing), ending
    the turn with insufficient evidence."""
    unknown, unshown = named(reason, facts.unknown, facts.unshown)
    return Outcome(decline_text(reason, unknown, unshown), AnswerStatus.INSUFFICIENT_EVIDENCE, decline=reason,
                   missing_from_docs=unknown, missing_from_excerpts=unshown)
