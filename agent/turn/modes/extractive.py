"""Extractive answers: no model call; the quote scorer's best sentences of the shown excerpts, or a decline."""

from __future__ import annotations

from typing import Iterator

from agent.events import Event, TextDelta
from agent.turn.modes import Turn
from agent.turn.outcome import Facts
from agent.turn.verified import verified_quotes


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
        if quoted:
            yield TextDelta(quoted.text)
        facts = Facts(wrote=False, quotes=quoted.text) if quoted else agent.absent(Facts(wrote=False), turn.question, turn.shown)
        yield agent.concluded(facts, turn.base, verification)
