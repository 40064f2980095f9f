"""Lowercase word terms for BM25: optional stop-word removal and a light suffix stemmer."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

_WORD = re.compile(r"\w+")

# Function words only: "not", "off", "before", "after" and the like carry meaning in docs and stay.
STOPWORDS = frozenset(
    """a an the is are was were be been being am do does did doing has have had having of in on at to for from
    by with and or as it its itself this that these those i my me you your yours we our ours they them their he
    she his her what which who whom how why when where will would should can could shall may might must there
    here if then than so into about""".split()
)


@dataclass(frozen=True)
class TermSettings:
    """How text becomes BM25 terms; stored in the index manifest and chosen by measurement."""

    stem: bool = True
    stopwords: bool = True
    headings: bool = True  # index the heading path with the chunk text

    def to_dict(self) -> dict:
        return asdict(self)


def stem(word: str) -> str:
    """A light English suffix stripper: plurals, -ing, -ed. Enough to match "chunks" with "chunk"."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # "running" -> "run"
            break
    return word


def terms(text: str, settings: TermSettings = TermSettings()) -> list[str]:
    """The BM25 terms of `text`, in order, repeated as often as they occur."""
    out = []
    for word in _WORD.findall(text.lower()):
        if settings.stopwords and word in STOPWORDS:
            continue
        out.append(stem(word) if settings.stem else word)
        if "_" in word.strip("_"):  # n_ctx also matches "ctx"
            out.extend(stem(p) if settings.stem else p for p in word.split("_") if p)
    return out
