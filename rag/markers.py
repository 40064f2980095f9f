"""Citation markers: the one grammar of `[n]` in an answer, and the one code mask every reader of markers uses.

A marker is `[2]` or `[1, 3]`: positive integers without a leading zero, comma-separated, in square brackets.
`[1](url)` is a Markdown link, not a marker, and nothing inside code (a fenced block or a `code span`) is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

MARKER = re.compile(r"\[([1-9][0-9]*(?:[ \t]*,[ \t]*[1-9][0-9]*)*)\](?!\()")
# The same marker as a pattern piece with no group of its own, for patterns that embed it.
MARKER_PATTERN = r"\[[1-9][0-9]*(?:[ \t]*,[ \t]*[1-9][0-9]*)*\](?!\()"
_NUMBER = re.compile(r"[1-9][0-9]*")
FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([.,;:!?])")


@dataclass(frozen=True)
class Marker:
    """One number of a marker. A `[1, 3]` group gives two, both spanning the whole group (start, end)."""

    n: int
    start: int
    end: int
    number_start: int  # the digits of this number alone
    number_end: int


def code_lines(text: str) -> list[tuple[str, bool]]:
    """Each line of `text` (line ends kept) and whether it belongs to a fenced code block, fences included.

    A fence closes on a line holding only a run of its character at least as long as the opening run.
    """
    out = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if fence is None:
            opened = FENCE_OPEN.match(body)
            if opened:
                fence = opened.group(1)
            out.append((line, bool(opened)))
        else:
            closing = body.strip()
            if closing and set(closing) == {fence[0]} and len(closing) >= len(fence):
                fence = None
            out.append((line, True))
    return out


def mask_code(text: str) -> str:
    """A same-length copy of `text` with fenced blocks and code spans blanked, so offsets still line up.

    A code span keeps its backticks, so an identifier inside still reads as code to later steps.
    """
    out = list(text)
    pos = 0
    for line, fenced in code_lines(text):
        body = line.rstrip("\r\n")
        if fenced:
            _blank(out, pos, pos + len(body))
        else:
            for m in _CODE_SPAN.finditer(body):
                ticks = len(m.group(1))
                _blank(out, pos + m.start() + ticks, pos + m.end() - ticks)
        pos += len(line)
    return "".join(out)


def _blank(out: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        if out[i] != "\n":
            out[i] = "x"


def groups(text: str, skip_code: bool = True) -> list[re.Match]:
    """Each marker group outside code, in order (matches on the masked text; offsets are the text's).

    `skip_code=False` is for text already rendered from Markdown, where code has lost its backticks.
    """
    return list(MARKER.finditer(mask_code(text) if skip_code else text))


def find(text: str, skip_code: bool = True) -> list[Marker]:
    """Every marker number outside code, in order, repeats included."""
    found = []
    for m in groups(text, skip_code):
        for number in _NUMBER.finditer(m.group(0)):
            found.append(Marker(int(number.group(0)), m.start(), m.end(), m.start() + number.start(), m.start() + number.end()))
    return found


def numbers(text: str) -> list[int]:
    """The distinct marker numbers of `text`, in order of first appearance."""
    return list(dict.fromkeys(m.n for m in find(text)))


def parse(marker: str) -> tuple[int, ...]:
    """The numbers of one marker (`[1, 3]` -> (1, 3)); () when `marker` is not exactly one marker."""
    m = MARKER.fullmatch(marker.strip())
    return tuple(int(n) for n in _NUMBER.findall(m.group(1))) if m else ()


def replace(text: str, render: Callable[[tuple[int, ...]], str]) -> str:
    """`text` with each marker group outside code replaced by `render(its numbers)`."""
    pieces, last = [], 0
    for m in groups(text):
        pieces += [text[last : m.start()], render(tuple(int(n) for n in _NUMBER.findall(m.group(1))))]
        last = m.end()
    pieces.append(text[last:])
    return "".join(pieces)


def strip(text: str) -> str:
    """`text` without its markers (and the blanks before them); a space left before punctuation is closed up."""
    pieces, last = [], 0
    for m in groups(text):
        pieces.append(text[last : m.start()].rstrip(" \t"))
        last = m.end()
    pieces.append(text[last:])
    return _SPACE_BEFORE_PUNCT.sub(r"\1", "".join(pieces))
