"""The eval without the model: each question searched and packed as a search-first turn would be, the prompt
fitted, and the conflict notes of the excerpts it would show. Cheap enough to run over every question."""

from __future__ import annotations

from typing import Iterator, Sequence

from agent.turn.context import ContextWindow
from agent.eval.records import Record
from agent.events import AnswerStatus
from agent.turn.prompts import system_rules
from agent.settings import AgentSettings
from rag.excerpts.conflicts import find_conflicts
from rag.evaluation import Question, gold_chunk_ids
from rag.excerpts.packing import Ledger, block
from rag.excerpts.search_tool import SEARCH_DOCS_NAME, search_first


def probe_questions(index, tokenizer, questions: Sequence[Question], settings: AgentSettings) -> Iterator[Record]:
    """One record per question: what was retrieved and shown, and the conflict notes; no answer."""
    window = ContextWindow(tokenizer, settings.budgets, system_rules(settings.few_shot))
    for question in questions:
        yield probe_question(index, tokenizer, window, question, settings)


def probe_question(index, tokenizer, window: ContextWindow, question: Question, settings: AgentSettings) -> Record:
    prepared = window.prepare(question.q, [])
    ledger = Ledger()
    result = search_first(index, ledger, tokenizer, question.q, settings.k, prepared.evidence_budget)
    used = result.packed.used if result.packed else ()
    numbered = {ledger.peek(h): h for h in used}
    _messages, _built, shown = window.build(prepared, [(n, block(n, h)) for n, h in sorted(numbered.items())])
    shown_hits = [(n, numbered[n]) for n in shown if n in numbered]
    gold = tuple(gold_chunk_ids(question, index.chunks)) if question.answerable else ()
    return Record.of(
        question,
        gold,
        status=AnswerStatus.NOT_ASKED,
        packed=tuple(sorted(numbered)),
        retrieved=tuple(h.chunk_id for h in result.hits),
        queries=(question.q,),
        shown_chunks=tuple(h.chunk_id for _, h in shown_hits),
        shown_outdated=tuple(h.chunk_id for _, h in shown_hits if h.outdated),
        policy=f"{SEARCH_DOCS_NAME} only (no model)",
        tags=question.tags,
        conflicts=tuple(c.to_json() for c in find_conflicts(shown_hits)),
    )
