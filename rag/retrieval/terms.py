"""Lowercase terms for BM25: identifiers whole and split, function words dropped, Snowball stems.

API docs name things `fs.readFile`, `spawnSync`, `os.path.join`, `n_ctx`, `--no-deps`; questions say "read a
file". So every identifier is indexed whole (lowercased) and as its parts: split at dots, dashes and underscores,
then at camelCase humps. Each part is stemmed with the English Snowball stemmer (PyStemmer, as bm25s does).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

import Stemmer

STEMMERS = ("snowball", "light", "none")
WHOLES = ("segment", "token")
# A word, or words joined by dots and dashes with nothing between them: "fs.readFile", "utf-8", "--no-deps".
_TOKEN = re.compile(r"\w+(?:[.\-]+\w+)*")
_SEPARATORS = re.compile(r"[.\-_]+")
_CHAIN = re.compile(r"[.\-]+")
# camelCase humps: "readFile" -> read|File, "HTTPServer" -> HTTP|Server, "utf8Decode" -> utf8|Decode.
_HUMP = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+[a-z]*")

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
    stemmer: str = "snowball"  # used when stem is True: "snowball" (PyStemmer) or "light" (the old suffix stripper)
    identifiers: bool = True  # split camelCase too: readFile -> readfile, read, file
    wholes: str = "segment"  # "token": also index "fs.readfile" whole (measured: longer API pages rank lower)

    def __post_init__(self) -> None:
        if self.stemmer not in STEMMERS:
            raise ValueError(f"unknown stemmer {self.stemmer!r}: choose one of {', '.join(STEMMERS)}")
        if self.wholes not in WHOLES:
            raise ValueError(f"unknown wholes {self.wholes!r}: choose one of {', '.join(WHOLES)}")

    def to_dict(self) -> dict:
        return asdict(self)


_SNOWBALL = Stemmer.Stemmer("english")


@lru_cache(maxsize=65536)
def snowball(word: str) -> str:
    """The English Snowball (Porter 2) stem of a lowercase word."""
    return _SNOWBALL.stemWord(word)


def light_stem(word: str) -> str:
    """The suffix stripper used before Snowball (plurals, -ing, -ed); kept to measure against."""
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


def stem(word: str, stemmer: str = "snowball") -> str:
    """`word` (lowercase) stemmed by the named stemmer; digits-only and one-letter words stay as they are."""
    if stemmer == "none" or len(word) < 3 or word.isdigit():
        return word
    return snowball(word) if stemmer == "snowball" else light_stem(word)


def identifier_parts(token: str) -> list[str]:
    """The lowercase parts of an identifier: split at dots, dashes, underscores and camelCase humps.

    "fs.readFile" -> ["fs", "read", "file"]; "HTTPServer" -> ["http", "server"]; "n_ctx" -> ["n", "ctx"].
    """
    parts: list[str] = []
    for segment in _SEPARATORS.split(token):
        if segment.isascii():
            parts.extend(m.group().lower() for m in _HUMP.finditer(segment))
        else:  # case rules of other scripts are not camelCase: keep the segment whole
            parts.append(segment.lower())
    return [p for p in parts if p]


def index_terms(text: str, settings: TermSettings = TermSettings()) -> list[str]:
    """The BM25 terms of `text`, in order, repeated as often as they occur.

    Dots and dashes always split ("os.path.join" -> os, path, join). A segment with parts of its own ("n_ctx",
    "readFile") also gives its whole lowercased form before them; with wholes="token" so does the dotted chain.
    """
    out: list[str] = []
    method = settings.stemmer if settings.stem else "none"
    for match in _TOKEN.finditer(text):
        token = match.group().strip("_")
        segments = [seg for seg in _CHAIN.split(token) if seg.strip("_")]
        if settings.wholes == "token" and len(segments) > 1:
            out.append(token.lower())  # "fs.readfile", "os.path.join" as written
        for segment in segments:
            segment = segment.strip("_")
            parts = identifier_parts(segment) if settings.identifiers else [p for p in segment.lower().split("_") if p]
            lower = segment.lower()
            if len(parts) > 1:
                out.append(lower)  # "n_ctx", "readfile": the name as one word too
            if len(parts) > 1 and not settings.identifiers:  # the word terms before identifiers, kept as they were
                out.extend(stem(part, method) for part in parts)
                continue
            seen = {lower} if len(parts) > 1 else set()
            for part in parts:
                if settings.stopwords and part in STOPWORDS:
                    continue
                term = stem(part, method)
                if term not in seen:
                    seen.add(term)
                    out.append(term)
    return out
