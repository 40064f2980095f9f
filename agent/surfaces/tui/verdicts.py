"""How each citation verdict looks in the app: its mark and label (rag.verification.verdicts) and the class that colours it."""

from __future__ import annotations

from typing import Iterator

from textual.content import Content

from agent.events import Answer
from rag import markers as marker_grammar
from rag.verification.verdicts import ORDER, Verdict

STALE_CLASS = "cite--stale"  # a saved answer's source changed since: not a verdict, a fact about the index now
COMPONENT_CLASSES = {f"cite--{v}" for v in ORDER} | {STALE_CLASS}


def css_class(verdict: str) -> str:
    return f"cite--{Verdict.of(verdict)}"


def verdict_map(answer: Answer) -> dict[int, Verdict]:
    """The verdict of every number the answer cites: judged ones, made-up ones, unresolved ones."""
    return answer.verdicts()


def markers(text: str) -> Iterator[tuple[int, int, int]]:
    """(number, start, end) of each citation number in rendered text, where the first of a marker starts at `[`
    and the last ends after `]`, so a single marker is styled whole."""
    found = marker_grammar.find(text, skip_code=False)
    for i, m in enumerate(found):
        first = i == 0 or found[i - 1].start != m.start
        last = i == len(found) - 1 or found[i + 1].start != m.start
        yield m.n, m.start if first else m.number_start, m.end if last else m.number_end


def summary(answer: Answer) -> str:
    """`2 supported · 1 made up`: the citation verdicts of an answer, counted."""
    counts: dict[Verdict, int] = {}
    for verdict in verdict_map(answer).values():
        counts[verdict] = counts.get(verdict, 0) + 1
    return " · ".join(f"{counts[v]} {v.label}" for v in ORDER if v in counts)


def verdict_legend() -> Content:
    """Each verdict's marker as answers show it, with its meaning, in two short lines."""
    samples = [
        ("[1]", Verdict.SUPPORTED), ("[2]", Verdict.WEAK), ("[3]", Verdict.UNSUPPORTED),
        ("[4]", Verdict.CITED), ("[5?]", Verdict.MADE_UP), ("[6]", Verdict.UNRESOLVED),
    ]
    lines = []
    for row in (samples[:3], samples[3:]):
        parts: list = []
        for i, (marker, verdict) in enumerate(row):
            label = verdict.label if i == len(row) - 1 else f"{verdict.label:<12}"
            parts += ["  ", (marker, f".{css_class(verdict)}"), f" {label}"]
        lines.append(Content.assemble(*parts))
    return Content("\n").join(lines)
