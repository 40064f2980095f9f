"""Near-duplicate texts: word 5-shingles compared by Jaccard similarity."""

from __future__ import annotations

from rag.text import word_runs

SHINGLE_WORDS = 5
DEFAULT_JACCARD = 0.85  # at or above this, two excerpts say the same thing: keep the higher-ranked one


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[tuple[str, ...]]:
    """Every run of `size` consecutive words (casefolded); a shorter text is one shingle of all its words."""
    words = word_runs(text.casefold())
    if len(words) <= size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a & b| / |a | b|; two empty sets are identical (1.0)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def check_threshold(threshold: float | None) -> float | None:
    """A Jaccard threshold in (0, 1], or None for no near-duplicate collapse; ValueError otherwise."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 < threshold <= 1.0:
        raise ValueError(f"Jaccard threshold {threshold!r} is out of range: give a number above 0 and at most 1")
    return float(threshold)
