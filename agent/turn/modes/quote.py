"""Quote answers: the model copies spans of the scorer's best sentences (a guard enforces it), each optionally
followed by a short claim of its own, shown only when the verifier supports it."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from agent.events import Event
from agent.turn.modes import Turn, shown_excerpts
from agent.turn.quoting import REF_OPEN, QuoteGuard, parse_quote_units, quote_evidence
from agent.turn.verified import quote_display


class Quote:
    name = "quote"
    quoting = True

    def offer(self, agent, question, ledger, blocks):
        """The candidate spans the model may copy, and the excerpt blocks that show them."""
        packed = shown_excerpts(ledger.citations(), list(blocks))
        quotes = agent.candidates(question, packed, agent.retriever.chunk) if agent.candidates is not None else []
        return quote_evidence(quotes, packed, agent.retriever.chunk, agent.model.tokenizer.count)

    def respond(self, agent, turn: Turn) -> Iterator[Event]:
        guard = QuoteGuard([s for s in turn.spans if s.n in turn.shown], sorted(turn.shown))
        options = replace(agent.answer_options(turn.reserve), guard=guard, prefix=REF_OPEN)
        generation = yield from agent.generate(turn, options, opening=REF_OPEN, watch_repeats=False)
        model_text = (REF_OPEN + generation.text).strip()
        # Only references that are (a head of) an offered span are shown, guard or no guard.
        units = [
            u for u in parse_quote_units(generation.text)[0]
            if any(s.n == u.n and s.text.startswith(u.reference) for s in turn.spans)
        ]
        display = quote_display(units, agent.judge, turn.shown, agent.retriever.chunk)
        yield agent.finished(turn, model_text, generation.status(turn.cancel), display, generation)
