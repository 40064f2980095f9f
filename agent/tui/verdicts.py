"""How each citation verdict looks: its label, its mark, and the component class that colours it."""

from __future__ import annotations

import re
from typing import Iterator

from textual.content import Content

from agent.events import Answer

VERDICTS: tuple[str, ...] = ("supported", "weak", "unsupported", "cited", "made_up", "unresolved", "uncited")
LABELS = {
    "supported": "supported",
    "weak": "weak support",
    "unsupported": "unsupported",
    "cited": "not judged",
    "made_up": "made up",
    "unresolved": "unresolved",
    "uncited": "uncited",
}
# A mark readable without colour (light themes, screen readers, capture-pane).
MARKS = {
    "supported": "✓",
    "weak": "~",
    "unsupported": "✗",
    "cited": "·",
    "made_up": "?",
    "unresolved": "!",
    "uncited": " ",
}
COMPONENT_CLASSES = {f"cite--{v}" for v in VERDICTS}

# The same marker grammar as rag.citations: [2] or [1, 3], numbers from 1, no leading zero.
MARKER = re.compile(r"\[([1-9][0-9]*(?:[ \t]*,[ \t]*[1-9][0-9]*)*)\]")
_NUMBER = re.compile(r"[1-9][0-9]*")


def css_class(verdict: str) -> str:
    return f"cite--{verdict if verdict in LABELS else 'cited'}"


def verdict_map(answer: Answer) -> dict[int, str]:
    """The verdict of every number the answer cites: judged ones, made-up ones, unresolved ones."""
    verdicts = {c.n: c.verdict for c in answer.citations}
    for n in answer.unresolved:
        verdicts.setdefault(n, "unresolved")
    for n in answer.unknown:
        verdicts[n] = "made_up"
    return verdicts


def markers(text: str) -> Iterator[tuple[int, int, int]]:
    """(number, start, end) of each citation number, where the first of a marker starts at `[` and the last
    ends after `]`, so a single marker is styled whole."""
    for match in MARKER.finditer(text):
        numbers = list(_NUMBER.finditer(match.group(0)))
        for i, number in enumerate(numbers):
            start = match.start() if i == 0 else match.start() + number.start()
            end = match.end() if i == len(numbers) - 1 else match.start() + number.end()
            yield int(number.group(0)), start, end


def summary(answer: Answer) -> str:
    """`2 supported · 1 made up`: the citation verdicts of an answer, counted."""
    counts: dict[str, int] = {}
    for verdict in verdict_map(answer).values():
        counts[verdict] = counts.get(verdict, 0) + 1
    return " · ".join(f"{counts[v]} {LABELS[v]}" for v in VERDICTS if v in counts)


def legend() -> Content:
    """Each verdict's marker as answers show it, with its meaning, in two short lines."""
    samples = [("[1]", "supported"), ("[2]", "weak"), ("[3]", "unsupported"), ("[4]", "cited"), ("[5?]", "made_up"), ("[6]", "unresolved")]
    lines = []
    for row in (samples[:3], samples[3:]):
        parts: list = []
        for i, (marker, verdict) in enumerate(row):
            label = LABELS[verdict] if i == len(row) - 1 else f"{LABELS[verdict]:<12}"
            parts += ["  ", (marker, f".{css_class(verdict)}"), f" {label}"]
        lines.append(Content.assemble(*parts))
    return Content("\n").join(lines)
