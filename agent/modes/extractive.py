"""Extractive answers: no model call; the quote scorer's best sentences of the shown excerpts, or a decline."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from agent.decline import Decline
from agent.events import AnswerFinished, Event, TextDelta
from agent.modes import Turn
from agent.verified import verified_quotes


class Extractive:
    name = "extractive"
    quoting = False

    def offer(self, agent, question, ledger, blocks):
        return [], blocks

    def respond(self, agent, turn: Turn) -> Iterator[Event]:
        lookup = agent.retriever.chunk
        quoted = agent.quoter(turn.question, turn.shown, lookup) if agent.quoter is not None else None
        # judged before anything is shown: a quote the verifier does not hold never reaches the screen
        quoted, verification = verified_quotes(quoted, agent.judge, turn.shown, lookup)
        if not quoted or verification is None:  # verified_quotes gives both or neither
            yield agent.declined(Decline.NOT_ANSWERABLE, turn.base)
            return
        yield TextDelta(quoted.text)
        yield AnswerFinished(
            replace(turn.base, text=quoted.text, quoted=True, citations=verification.citations, claims=verification.claims)
        )
