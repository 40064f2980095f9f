"""How many chunks of an index hold each BM25 term: what the answerability rule asks of the index."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Protocol

from rag.retrieval.terms import TermSettings

PREFIX = 6  # "proposed" and "proposal" share a stem this long: a morphological variant is not an unknown word


class DocumentFrequencies(Protocol):
    """Document frequencies of an index's BM25 terms (HybridIndex.vocabulary gives one)."""

    @property
    def settings(self) -> TermSettings: ...

    @property
    def documents(self) -> int: ...

    def frequency(self, term: str, prefix: bool = True) -> int: ...

    def frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """Chunks holding each of `terms`, exactly (no prefix), asked at once."""
        ...


@dataclass(frozen=True)
class TermCounts:
    """Document frequency of every term of an index, and of every PREFIX-character term prefix."""

    counts: Mapping[str, int]
    documents: int
    settings: TermSettings = TermSettings()
    prefixes: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, counts: Mapping[str, int], documents: int, settings: TermSettings = TermSettings()) -> "TermCounts":
        prefixes: dict[str, int] = {}
        for term, n in counts.items():
            if len(term) >= PREFIX:
                prefixes[term[:PREFIX]] = prefixes.get(term[:PREFIX], 0) + n
        return cls(dict(counts), documents, settings, prefixes)

    def frequency(self, term: str, prefix: bool = True) -> int:
        """Chunks holding `term`; with `prefix`, else chunks holding a term of the same PREFIX first letters."""
        exact = self.counts.get(term, 0)
        if exact or not prefix or len(term) < PREFIX:
            return exact
        return self.prefixes.get(term[:PREFIX], 0)

    def frequencies(self, terms: Iterable[str]) -> dict[str, int]:
        """Chunks holding each of `terms`, exactly (no prefix)."""
        return {term: self.counts.get(term, 0) for term in terms}
