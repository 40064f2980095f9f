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


def marker_guard_grammar(numbers: Sequence[int]) -> str:
    """Free text in which `[` can only open a marker naming shown excerpts: `[2]`, `[1, 3]`.

    The model still chooses whether and where to cite; it just cannot write a number no excerpt carried. Brackets
    are otherwise unavailable (no `[link](url)`, no `a[i]`): a small price for never inventing `[7]`.
    """
    if not numbers:
        raise ValueError("a marker guard needs at least one excerpt number")
    choices = " | ".join(_literal(str(n)) for n in sorted(set(numbers)))
    return "\n".join(
        [
            "root ::= (plain | marker)*",
            r"plain ::= [^\[\]]",
            'marker ::= "[" num ("," " "? num)* "]"',
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
