"""Lowercase terms for BM25: identifiers whole and split, function words dropped, Snowball stems.

API docs name things `fs.readFile`, `spawnSync`, `os.path.join`, `n_ctx`, `--no-deps`; questions say "read a
file". So every identifier is indexed whole (lowercased) and as its parts: split at dots, dashes and underscores,
then at camelCase humps. Each part is stemmed with the English Snowball stemmer (PyStemmer, as bm25s does).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from functools import lru_cache

from rag.text import INDEX_STOPWORDS, STEMMERS, index_tokens, stem

WHOLES = ("segment", "token")
_SEPARATORS = re.compile(r"[.\-_]+")
_CHAIN = re.compile(r"[.\-]+")
# camelCase humps: "readFile" -> read|File, "HTTPServer" -> HTTP|Server, "utf8Decode" -> utf8|Decode; an acronym's
# plural is the acronym: "PDFs" -> PDF (not PD|Fs), "getURLsFor" -> get|URL|For.
_HUMP = re.compile(r"(?P<plural>[A-Z]{2,})s(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+\d*|[A-Z]+\d*|\d+[a-z]*")
TERMS_VERSION = 2  # bump whenever a text's terms change, so stored BM25 postings are rebuilt; 2: acronyms' plurals


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


def identifier_parts(token: str) -> list[str]:
    """The lowercase parts of an identifier: split at dots, dashes, underscores and camelCase humps.

    "fs.readFile" -> ["fs", "read", "file"]; "HTTPServer" -> ["http", "server"]; "n_ctx" -> ["n", "ctx"];
    "PDFs" -> ["pdf"] (Snowball leaves "pdfs", "cpus" and "vms" as they are, so the plural's "s" goes here).
    """
    parts: list[str] = []
    for segment in _SEPARATORS.split(token):
        if segment.isascii():
            parts.extend((m.group("plural") or m.group()).lower() for m in _HUMP.finditer(segment))
        else:  # case rules of other scripts are not camelCase: keep the segment whole
            parts.append(segment.lower())
    return [p for p in parts if p]


def index_terms(text: str, settings: TermSettings = TermSettings()) -> list[str]:
    """The BM25 terms of `text`, in order, repeated as often as they occur.

    Dots and dashes always split ("os.path.join" -> os, path, join). A segment with parts of its own ("n_ctx",
    "readFile") also gives its whole lowercased form before them; with wholes="token" so does the dotted chain.
    """
    out: list[str] = []
    for token in index_tokens(text):
        out.extend(token_terms(token, settings))
    return out


@lru_cache(maxsize=1 << 18)
def token_terms(token: str, settings: TermSettings = TermSettings()) -> tuple[str, ...]:
    """The terms of one `index_tokens` token; cached, since a word's terms never depend on its neighbours.

    Measured on 2,000 man pages (20,120 chunks): splitting and stemming every occurrence anew was a quarter of a
    cold index build, and a few thousand distinct words make up most of the text.
    """
    out: list[str] = []
    method = settings.stemmer if settings.stem else "none"
    token = token.strip("_")
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
            if settings.stopwords and part in INDEX_STOPWORDS:
                continue
            term = stem(part, method)
            if term not in seen:
                seen.add(term)
                out.append(term)
    return tuple(out)
