"""Free answers: the model writes; only the sentences the verifier supports are shown, the rest is its draft.

`guarded` lets an opening bracket start only a marker with a shown number; `constrained` makes every sentence end
with a shown marker (a grammar). Both are free answers with a guard on what the model may write."""

from __future__ import annotations

from dataclasses import replace
from typing import Iterator

from agent.events import Event
from agent.turn.grammars import MarkerGuard, citation_grammar
from agent.turn.modes import Turn
from agent.turn.prompts import abstains
from agent.turn.verified import free_display
from models.protocols import GenerationOptions


class Free:
    quoting = False

    def __init__(self, guard: str = "") -> None:
        self.name = guard or "free"
        self.guard = guard

    def offer(self, agent, question, ledger, blocks):
        return [], blocks

    def options(self, options: GenerationOptions, shown) -> GenerationOptions:
        if self.guard == "constrained":
            return replace(options, grammar=citation_grammar(sorted(shown)))
        if self.guard == "guarded":
            return replace(options, guard=MarkerGuard(sorted(shown)))
        return options

    def respond(self, agent, turn: Turn) -> Iterator[Event]:
        generation = yield from agent.generate(turn, self.options(agent.answer_options(turn.reserve), turn.shown))
        model_text = generation.text.strip()
        # a reference cut off mid-way (cancelled) is dropped by parse_quote_units: never shown as a quote
        display = free_display(model_text, agent.judge, turn.shown, agent.retriever.chunk)
        yield agent.finished(turn, model_text, generation.status(turn.cancel), display, generation, abstains(model_text))
