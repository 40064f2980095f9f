"""The agent's grammars decoded by the real SmolLM2-135M: what each lets the model write, and what it cannot."""

from __future__ import annotations

import re

import jsonschema
import pytest

from agent.turn.grammars import MarkerGuard, citation_grammar, tool_call_grammar
from agent.turn.loop import _grammar_schema
from agent.turn.prompts import NOT_COVERED
from agent.settings import tool_options
from agent.turn.toolcalls import parse_tool_calls
from models.protocols import GenerationOptions
from rag import markers
from rag.excerpts.search_tool import SEARCH_DOCS_NAME, SEARCH_DOCS_SCHEMA

pytestmark = pytest.mark.real

# A prompt that makes the model write a number no excerpt carried: it copies "[7]" when nothing stops it.
COPY = [
    {"role": "system", "content": "[1] docs/kv-cache.md\nThe KV cache stores keys and values.\n\n"
                                  "[2] docs/bm25.md\nBM25 ranks chunks by term frequency."},
    {"role": "user", "content": "Copy this sentence exactly: The cache keeps keys [7] and values [1]."},
]  # fmt: skip


def _generate(model, messages, grammar=None, max_tokens=40, guard=None) -> str:
    options = GenerationOptions(max_tokens=max_tokens, temperature=0.0, repeat_penalty=1.0, grammar=grammar, guard=guard)
    return "".join(model.stream(messages, options))


def test_the_guard_stops_a_made_up_number_the_model_writes_without_it(real_model):
    free = _generate(real_model, COPY)
    assert 7 in [m.n for m in markers.find(free)], free  # the prompt does elicit [7] unguarded

    guarded = _generate(real_model, COPY, guard=MarkerGuard([1, 2]))
    numbers = [m.n for m in markers.find(guarded)]
    assert set(numbers) <= {1, 2}, guarded
    assert len(guarded.split()) >= 4  # still free text, not an empty or cut-off answer
    assert not re.search(r"\[(?![12](?:, ?[12])*\])", guarded), guarded  # no other bracket got through


def test_constrained_decoding_ends_every_sentence_with_a_shown_marker(real_model):
    messages = [COPY[0], {"role": "user", "content": "What does the KV cache store?"}]
    text = _generate(real_model, messages, citation_grammar([1, 2]), max_tokens=160).strip()
    if text == NOT_COVERED:
        return  # the grammar's one other way out
    # Segments of text, each closed by " [1]" or " [2]"; only the last may be open, and only if the answer was cut.
    *closed, tail = re.split(r" \[[12]\]\.?", text)
    assert closed, text
    assert all(4 <= len(segment.strip()) and "[" not in segment and "]" not in segment for segment in closed), text
    assert "[" not in tail and "]" not in tail
    assert tail.strip() == "" or real_model.last_stats.finish_reason == "length", text
    assert {m.n for m in markers.find(text)} <= {1, 2}


def test_tool_call_grammar_gives_a_call_that_parses_and_validates(real_model):
    from models.llama_cpp.grammar import json_schema_grammar

    grammar = tool_call_grammar(SEARCH_DOCS_NAME, json_schema_grammar(_grammar_schema()))
    messages = [
        {"role": "system", "content": "Call search_docs with a short query for the user's question."},
        {"role": "user", "content": "How does the KV cache speed up decoding?"},
    ]
    text = _generate(real_model, messages, grammar, max_tokens=tool_options().max_tokens)
    calls, failures = parse_tool_calls(text, default_tool=SEARCH_DOCS_NAME)
    assert not failures and len(calls) == 1, text
    assert calls[0].name == SEARCH_DOCS_NAME
    jsonschema.validate(calls[0].arguments, SEARCH_DOCS_SCHEMA)
    assert 0 < len(calls[0].arguments["query"].strip()) <= 120  # even a looping query is closed at the bound
