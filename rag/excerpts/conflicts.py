"""Numeric disagreement among the excerpts shown for one question: the same subject, in the same unit, with
different numbers, in different documents. Both excerpts stay; the annotation says who says what.

A statement is a number with a unit ("512 tokens", "40 %") outside code, with the key words of its clause
around it ("the course default context was ... which"). Two statements from different documents are about the
same subject when they share at least two key words and at least half of the smaller set, or one key word and
two words of the excerpts' last headings ("Context window defaults", "Defaults of the context window").
Statements about one subject form a group; the group is a conflict when two documents in it share no number.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from rag.verification.claims import split_claims
from rag.markers import mask_code
from rag.text import INDEX_STOPWORDS, key_words, snowball
from rag.types import Hit

log = logging.getLogger(__name__)

MIN_SHARED = 2  # key words two statements must share to be about one subject
MIN_SHARED_SHARE = 0.5  # ... and that share of the smaller statement's key words
MIN_SHARED_HEADING = 2  # or one key word and this many words of the excerpts' last headings
WORDS_BEFORE, WORDS_AFTER = 8, 4
# A number, not part of a word, version, date or path; then an optional unit word or %.
_QUANTITY = re.compile(
    r"(?<![\w.,/\-])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\w.,]?\d)(?:-|[ \t]?)(?P<unit>%|[A-Za-z]+\b)?"
)
_BOUNDARY = re.compile(r"[,;:\u2014\u2013]|\s-\s")
# Units a year-like number may carry and still be a quantity ("2048 tokens", not "the 2023 edition").
MEASURES = frozenset(
    "token byte kb mb gb tb kib mib gib bit ms second sec minute hour day % dimension dim layer head parameter "
    "word character char line step turn chunk excerpt passage result hit thread core".split()
)
# Words that say nothing about which quantity is meant.
_GENERIC = INDEX_STOPWORDS | frozenset(
    "also just only not no one each every all any some more less most much many than up out over per about "
    "use used uses using like other same such value values number numbers set".split()
)


@dataclass(frozen=True)
class Statement:
    """One number with its unit in one excerpt, and the key words of the clause around it."""

    n: int  # the excerpt number
    doc_id: str
    uri: str
    value: float
    written: str  # "2,048 tokens" as in the text
    unit: str  # normalized: "token", "%", "mb"
    outdated: bool = False
    terms: tuple[str, ...] = field(default=(), compare=False)  # stemmed key words in reading order
    words: tuple[str, ...] = field(default=(), compare=False)  # the same key words as written
    heading_terms: frozenset[str] = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class Conflict:
    """Excerpts that give different numbers for one subject."""

    subject: str  # the key words the statements share, e.g. "context window"
    unit: str
    statements: tuple[Statement, ...]  # by excerpt number, one per (excerpt, value)

    @property
    def numbers(self) -> tuple[int, ...]:
        """The excerpt numbers involved."""
        return tuple(sorted({s.n for s in self.statements}))

    @property
    def outdated(self) -> tuple[int, ...]:
        """The excerpt numbers whose document is outdated."""
        return tuple(sorted({s.n for s in self.statements if s.outdated}))

    def note(self) -> str:
        """`The sources disagree on context window: 2048 tokens [1]; 512 tokens [2] (outdated).`"""
        parts = []
        for written in dict.fromkeys(s.written for s in self.statements):
            ns = sorted({s.n for s in self.statements if s.written == written})
            old = all(s.outdated for s in self.statements if s.written == written)
            parts.append(f"{written} {''.join(f'[{n}]' for n in ns)}" + (" (outdated)" if old else ""))
        return f"The sources disagree on {self.subject}: " + "; ".join(parts) + "."

    def to_json(self) -> dict[str, Any]:
        return {
            "subject": self.subject,
            "unit": self.unit,
            "numbers": list(self.numbers),
            "outdated": list(self.outdated),
            "values": [
                {"n": s.n, "value": s.written, "uri": s.uri, "doc_id": s.doc_id, "outdated": s.outdated}
                for s in self.statements
            ],
            "note": self.note(),
        }


def find_conflicts(excerpts: Sequence[tuple[int, Hit]]) -> tuple[Conflict, ...]:
    """Conflicts among `(number, hit)` excerpts; a failure inside detection gives none, never an error."""
    try:
        return detect_conflicts(excerpts)
    except Exception:  # an annotation is advice: losing it must not lose the answer
        log.warning("conflict detection failed; answering without conflict notes", exc_info=True)
        return ()


def detect_conflicts(excerpts: Sequence[tuple[int, Hit]]) -> tuple[Conflict, ...]:
    """Conflicts among `(number, hit)` excerpts, in order of their first excerpt number."""
    found = [s for n, hit in sorted(excerpts, key=lambda e: e[0]) for s in statements(n, hit)]
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(found):
        for j in range(i + 1, len(found)):
            if same_subject(a, found[j]):
                parent[root(j)] = root(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(found)):
        groups.setdefault(root(i), []).append(i)
    conflicts = []
    for members in groups.values():
        group = [found[i] for i in members]
        if _disagree(group):
            conflicts.append(_conflict(group))
    return tuple(sorted(conflicts, key=lambda c: c.numbers))


def statements(n: int, hit: Hit) -> list[Statement]:
    """Every number with a unit outside code in excerpt `n`, with the key words of its clause."""
    text = hit.text
    masked = mask_code(text)
    heading = hit.heading_path
    heading_terms = key_terms(heading[-1]) if heading else ()
    out = []
    for claim in split_claims(text, keep_markers=True):
        if claim.kind == "heading":
            continue
        start, end = claim.start, claim.end
        previous = start
        for m in _QUANTITY.finditer(masked, start, end):
            unit = _unit(m.group("unit"), m.group("num"))
            if unit is not None:
                before = _clause_before(text, max(previous, start), m.start())
                after = _clause_after(text, m.end(), end)
                pairs = _key_words(before)[-WORDS_BEFORE:] + _key_words(after)[:WORDS_AFTER]
                first: dict[str, str] = {}
                for t, w in pairs:
                    if t not in (unit, snowball(unit)):
                        first.setdefault(t, w)
                pairs = list(first.items())
                written = " ".join(text[m.start() : m.end()].split())
                out.append(Statement(
                    n, hit.doc_id, hit.uri, _value(m.group("num")), written, unit,
                    hit.outdated, tuple(t for t, _ in pairs), tuple(w for _, w in pairs),
                    frozenset(heading_terms),
                ))
            previous = m.end()
    return out


def same_subject(a: Statement, b: Statement) -> bool:
    """Two statements of different documents about one quantity: same unit, shared key words."""
    if a.doc_id == b.doc_id or a.unit != b.unit:
        return False
    shared = set(a.terms) & set(b.terms)
    if len(shared) >= MIN_SHARED and len(shared) >= MIN_SHARED_SHARE * min(len(a.terms), len(b.terms)):
        return True
    return bool(shared) and len(a.heading_terms & b.heading_terms) >= MIN_SHARED_HEADING


def key_terms(text: str) -> tuple[str, ...]:
    """Stemmed content words of `text` in order."""
    return tuple(t for t, _ in _key_words(text))


def _key_words(text: str) -> list[tuple[str, str]]:
    """(stem, word as written) of each content word of `text`, in order."""
    return [(snowball(w.lower()), w) for w in key_words(text) if w.lower() not in _GENERIC and len(w) > 1]


def _clause_before(text: str, lo: int, hi: int) -> str:
    cuts = [m.end() for m in _BOUNDARY.finditer(text, lo, hi)]
    return text[cuts[-1] if cuts else lo : hi]


def _clause_after(text: str, lo: int, hi: int) -> str:
    cut = _BOUNDARY.search(text, lo, hi)
    nxt = re.compile(r"\d|[.!?](?:\s|$)").search(text, lo, cut.start() if cut else hi)
    return text[lo : nxt.start() if nxt else (cut.start() if cut else hi)]


def _unit(raw: str | None, number: str) -> str | None:
    """The normalized unit, or None when the number has none (then it is not compared)."""
    if not raw:
        return None
    unit = raw.lower()
    if unit in _GENERIC or (len(unit) == 1 and unit != "%" and raw.islower()) or unit.endswith(("ing", "ed", "ly")):
        return None
    if len(unit) > 3 and unit.endswith("s") and not unit.endswith("ss"):
        unit = unit[:-1]
    if re.fullmatch(r"19[7-9]\d|20[0-3]\d", number) and unit not in MEASURES:
        return None  # a year: "2023 edition" is a date, not 2023 editions
    return unit


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def _disagree(group: list[Statement]) -> bool:
    """Two documents in the group share no number."""
    by_doc: dict[str, set[float]] = {}
    for s in group:
        by_doc.setdefault(s.doc_id, set()).add(s.value)
    docs = list(by_doc.values())
    return any(not (a & b) for i, a in enumerate(docs) for b in docs[i + 1 :])


def _conflict(group: list[Statement]) -> Conflict:
    shared: dict[str, int] = {}
    for i, a in enumerate(group):
        for b in group[i + 1 :]:
            if a.doc_id != b.doc_id:
                for t in set(a.terms) & set(b.terms):
                    shared[t] = shared.get(t, 0) + 1
    ordered = sorted(group, key=lambda s: (s.n, s.value))
    unique = tuple(dict.fromkeys(ordered))
    subject = _subject(unique, set(shared))
    return Conflict(subject, unique[0].unit, unique)


def _subject(statements: Sequence[Statement], shared: set[str]) -> str:
    """The shared key words as the statement holding most of them writes them, or the shared heading words."""
    if shared:
        best = max(statements, key=lambda s: (len(shared & set(s.terms)), not s.outdated, -s.n))
        return " ".join(w for t, w in zip(best.terms, best.words) if t in shared)
    common = set.intersection(*(set(s.heading_terms) for s in statements))
    return " ".join(sorted(common)) or statements[0].unit
