"""GBNF grammars the agent decodes with: citation markers limited to the excerpts shown, and tool-call shape."""

from __future__ import annotations

from typing import Sequence

from agent.prompts import NOT_COVERED


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def citation_grammar(numbers: Sequence[int], max_sentences: int = 4) -> str:
    """Sentences that each end with a marker naming one of `numbers`; or the plain abstention."""
    if not numbers:
        raise ValueError("a citation grammar needs at least one excerpt number")
    choices = " | ".join(_literal(str(n)) for n in sorted(set(numbers)))
    extra = max(0, max_sentences - 1)
    return "\n".join(
        [
            f"root ::= sentence (\" \" sentence){{0,{extra}}} | {_literal(NOT_COVERED)}",
            # No brackets or newlines inside a sentence: a marker can only appear where the grammar puts it.
            r'sentence ::= [A-Za-z0-9`"(] [^\[\]\n<]{4,300} " [" num "]" "."?',
            f"num ::= {choices}",
        ]
    )


def tool_call_grammar(tool_name: str, json_grammar: str) -> str:
    """Wrap a JSON-schema grammar (root = the arguments object) in `<tool_call>{"name": ..., "arguments": ...}`."""
    body = json_grammar.replace("root ::=", "arguments-root ::=", 1)
    head = (
        'root ::= "<tool_call>{\\"name\\": \\"' + tool_name + '\\", \\"arguments\\": " arguments-root "}</tool_call>"'
    )
    return head + "\n" + body
