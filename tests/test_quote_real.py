"""Quote decoding with the real model, index and embedder: every reference is verbatim from the excerpt it cites."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from agent.events import AnswerFinished
from agent.turn.quoting import normalized, parse_quote_units
from agent.session import ChatSession
from agent.settings import AgentSettings, answer_options
from rag.answering.quote_features import quotable_text

QUESTIONS = Path(__file__).resolve().parent.parent / "docs_corpus" / "questions.jsonl"
N_QUESTIONS = 30


def _questions() -> list[str]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    answerable = [r["q"] for r in rows if r.get("doc")]
    step = max(1, len(answerable) // N_QUESTIONS)
    return answerable[::step][:N_QUESTIONS]


@pytest.mark.real
def test_every_reference_is_a_verbatim_substring_of_the_excerpt_its_number_names(real_model, real_index, real_embedder):
    # Lean: one reference per question (the line break after its [n] stops the generation), no claims.
    options = replace(answer_options(), max_tokens=72, stop=("\n",))
    settings = AgentSettings(policy="search-first", decoding="quote", generation=options)
    session = ChatSession(real_model, real_index, embedder=real_embedder, settings=settings)
    questions = _questions()
    assert len(questions) >= N_QUESTIONS
    referenced = 0
    for question in questions:
        session.new_chat()
        answer = next(e.answer for e in session.ask(question) if isinstance(e, AnswerFinished))
        if answer.status == "insufficient_evidence" and not answer.model_text:
            continue  # no sentence close enough to the question: abstained without calling the model
        units, _partial = parse_quote_units(answer.model_text[len("> "):])
        by_number = {c.n: c.chunk_id for c in answer.citations}
        for unit in units:
            chunk = real_index.chunk(by_number[unit.n])
            # verbatim from the excerpt as quotes render it (markup.readable: the model is shown those sentences)
            assert normalized(unit.reference) in normalized(quotable_text(chunk)), (question, unit)
            assert f"> {unit.reference} [{unit.n}]" in answer.text  # shown, with the number the system added
        referenced += bool(units)
    assert referenced >= N_QUESTIONS * 2 // 3  # most questions get a reference; the rest abstain
