"""Verdicts: what a citation or a claim of an answer earned, as one enum and two frozen types.

`rag.verification.verifier` decides every verdict; the agent, the TUI, the CLI, the eval and the saved chats only carry and show
them. Strength orders them: a claim takes the best verdict among its citations, and a number judged twice (several
claims cite it) shows the weaker, so one good use of `[n]` never vouches for another.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import StrEnum
from typing import Mapping, Protocol, Sequence

from rag.citations import CitationLike, Lookup


class Verdict(StrEnum):
    SUPPORTED = "supported"
    WEAK = "weak"
    CITED = "cited"  # resolved, not judged (only in chats saved without a judge)
    UNSUPPORTED = "unsupported"
    UNRESOLVED = "unresolved"  # the excerpt was shown, but its chunk is not in the index as shown
    MADE_UP = "made_up"  # no excerpt with that number was shown
    UNCITED = "uncited"  # a factual claim with no marker (claims only)

    @property
    def strength(self) -> int:
        return _STRENGTH[self]

    @property
    def label(self) -> str:
        """A short name for lists and legends: `weak support`."""
        return _LABEL[self]

    @property
    def note(self) -> str:
        """What the verdict means to a reader of a citation list."""
        return _NOTE[self]

    @property
    def mark(self) -> str:
        """A one-character mark readable without colour."""
        return _MARK[self]

    @classmethod
    def of(cls, value: str) -> "Verdict":
        """The verdict named `value`; an unknown name (a newer file) reads as not judged."""
        try:
            return cls(value)
        except ValueError:
            return cls.CITED


# Strongest first.
ORDER: tuple[Verdict, ...] = tuple(Verdict)
_STRENGTH = {v: len(ORDER) - i for i, v in enumerate(ORDER)}
_LABEL = {
    Verdict.SUPPORTED: "supported",
    Verdict.WEAK: "weak support",
    Verdict.CITED: "not judged",
    Verdict.UNSUPPORTED: "unsupported",
    Verdict.UNRESOLVED: "unresolved",
    Verdict.MADE_UP: "made up",
    Verdict.UNCITED: "uncited",
}
_NOTE = {
    Verdict.SUPPORTED: "supported",
    Verdict.WEAK: "weak support",
    Verdict.CITED: "cited (not judged)",
    Verdict.UNSUPPORTED: "NOT supported by the cited text",
    Verdict.UNRESOLVED: "UNRESOLVED: the chunk is not in the index",
    Verdict.MADE_UP: "MADE UP: no excerpt with this number was shown",
    Verdict.UNCITED: "uncited: no marker ties it to the docs",
}
_MARK = {
    Verdict.SUPPORTED: "✓",
    Verdict.WEAK: "~",
    Verdict.CITED: "·",
    Verdict.UNSUPPORTED: "✗",
    Verdict.UNRESOLVED: "!",
    Verdict.MADE_UP: "?",
    Verdict.UNCITED: " ",
}


@dataclass(frozen=True)
class CitationVerdict:
    """One `[n]`: the chunk it stands for (None when made up) and whether that text supports the claim."""

    n: int
    chunk_id: str | None
    doc_id: str | None
    uri: str | None
    verdict: Verdict
    support: float | None = None  # support score, when judged
    evidence: str | None = None  # best-matching sentence of the cited chunk, when judged
    reason: str = ""


@dataclass(frozen=True)
class ClaimVerdict:
    """One factual claim (sentence or list item) and the best verdict among its citations."""

    text: str
    citations: tuple[int, ...]
    verdict: Verdict
    support: float | None = None
    evidence: str | None = None
    reason: str = ""
    start: int = 0  # span in the text that was checked
    end: int = 0


def weaker(a: CitationVerdict, b: CitationVerdict) -> CitationVerdict:
    """The verdict to show for one number judged twice."""
    return a if a.verdict.strength < b.verdict.strength else b


@dataclass(frozen=True)
class Verification:
    """Every verdict of one checked text: per claim, and per number (each number once, its weakest use)."""

    claims: tuple[ClaimVerdict, ...]
    citations: tuple[CitationVerdict, ...]  # one per distinct number: resolved in order of use, then made up
    lexical_only: bool = False  # judged by word overlap alone (no embedder)

    @property
    def made_up(self) -> tuple[int, ...]:
        return numbers_with(self.citations, Verdict.MADE_UP)

    @property
    def unresolved(self) -> tuple[int, ...]:
        return numbers_with(self.citations, Verdict.UNRESOLVED)

    @property
    def has_supported_claim(self) -> bool:
        return any(c.verdict is Verdict.SUPPORTED for c in self.claims)

    def counts(self) -> dict[Verdict, int]:
        """How many claims got each verdict."""
        tally = Counter(c.verdict for c in self.claims)
        return {v: tally[v] for v in ORDER if v is not Verdict.CITED}

    def merged(self, other: "Verification") -> "Verification":
        """The verdicts of two texts checked apart (the model's words, the quotes): a shared number keeps its
        weaker verdict."""
        by_n: dict[int, CitationVerdict] = {}
        for c in (*self.citations, *other.citations):
            by_n[c.n] = weaker(c, by_n[c.n]) if c.n in by_n else c
        return Verification((*self.claims, *other.claims), _ordered(by_n.values()), self.lexical_only or other.lexical_only)


def numbers_with(citations: Sequence[CitationVerdict], verdict: Verdict) -> tuple[int, ...]:
    """The numbers, sorted, whose verdict is `verdict`."""
    return tuple(sorted(c.n for c in citations if c.verdict is verdict))


def per_number(citations: Sequence[CitationVerdict]) -> tuple[CitationVerdict, ...]:
    """One verdict per number, the weakest of its uses: shown numbers in order of first use, then made-up ones."""
    by_n: dict[int, CitationVerdict] = {}
    for c in citations:
        by_n[c.n] = weaker(c, by_n[c.n]) if c.n in by_n else c
    return _ordered(by_n.values())


def _ordered(citations) -> tuple[CitationVerdict, ...]:
    cs = list(citations)
    made_up = sorted((c for c in cs if c.verdict is Verdict.MADE_UP), key=lambda c: c.n)
    return (*[c for c in cs if c.verdict is not Verdict.MADE_UP], *made_up)


class Judge(Protocol):
    """Checks every marker of `text` against the excerpts `shown` (number -> citation), and only those."""

    def __call__(self, text: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> Verification: ...
