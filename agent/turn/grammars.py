"""GBNF grammars the agent decodes with: citation markers limited to the excerpts shown, and tool-call shape."""

from __future__ import annotations

import re
from typing import Sequence

from agent.turn.prompts import NOT_COVERED


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


class MarkerGuard:
    """Free text in which `[` can only open a marker naming shown excerpts: `[2]`, `[1, 3]` (a TextGuard).

    The model still chooses whether and where to cite; it just cannot write a number no excerpt carried. Brackets
    are otherwise unavailable (no `[link](url)`, no `a[i]`): a small price for never inventing `[7]`. Checked in
    Python per guard state, not as a grammar: a GBNF grammar over the whole vocabulary cost ~40% of decode speed.
    """

    watch = "[]"

    def __init__(self, numbers: Sequence[int]) -> None:
        if not numbers:
            raise ValueError("a marker guard needs at least one excerpt number")
        self.numbers = frozenset(str(n) for n in numbers)

    def state(self, text: str) -> str | None:
        """The inside of a marker still open at the end of `text`, or None outside one."""
        opened = text.rfind("[")
        return None if opened < 0 or "]" in text[opened:] else text[opened + 1 :]

    def settled(self, state: str | None) -> bool:
        return state is None

    def starts(self, state: str | None) -> str | None:
        """Inside a marker only a digit, `]`, a comma after a number, or a space after a comma can come next."""
        state = state or ""
        return "0123456789]" + ("," if state[-1:].isdigit() else "") + (" " if state.endswith(",") else "")

    def allows(self, state: str | None, piece: str) -> bool:
        inside = state
        for ch in piece:
            if inside is None:
                if ch == "]":
                    return False
                if ch == "[":
                    inside = ""
            elif ch == "]":
                if not self._complete(inside):
                    return False
                inside = None
            elif ch in "0123456789, ":
                inside += ch
                if not self._prefix(inside):
                    return False
            else:
                return False
        return True

    def only(self, state: str | None, vocab) -> None:
        """None: every piece is checked with `allows` (a marker's few digits need no lookup by text)."""
        return None

    def _parts(self, inside: str) -> list[str]:
        return [part.strip() for part in inside.split(",")]

    def _complete(self, inside: str) -> bool:
        return re.fullmatch(r"[1-9][0-9]*(, ?[1-9][0-9]*)*", inside) is not None and all(
            part in self.numbers for part in self._parts(inside)
        )

    def _prefix(self, inside: str) -> bool:
        """Whether `inside` can still grow into a complete marker."""
        if re.fullmatch(r"([1-9][0-9]*, ?)*([1-9][0-9]*)?", inside) is None:
            return False
        *done, last = self._parts(inside)
        return all(part in self.numbers for part in done) and (
            last == "" or any(n.startswith(last) for n in self.numbers)
        )


def tool_call_grammar(tool_name: str, json_grammar: str) -> str:
    """Wrap a JSON-schema grammar (root = the arguments object) in `<tool_call>{"name": ..., "arguments": ...}`."""
    body = json_grammar.replace("root ::=", "arguments-root ::=", 1)
    head = (
        'root ::= "<tool_call>{\\"name\\": \\"' + tool_name + '\\", \\"arguments\\": " arguments-root "}</tool_call>"'
    )
    return head + "\n" + body
