"""Heading-aware chunks bounded by the chat model's tokenizer.

A chunk never crosses a heading (except that headings with no text of their own ride along with the next
text), never cuts a code fence unless the fence alone is over budget (then each piece is re-fenced), and
is counted whole: `count(chunk.text) <= max_tokens` for every chunk. Cuts are as coarse as fit: between
paragraphs, then sentences, then lines, then words, then characters.
"""

from __future__ import annotations

import bisect
import re
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from models.protocols import Counter
from rag import tuned
from rag.ingest.blocks import Unit
from rag.errors import BudgetError
from rag.ingest.formats import Layout, parse_text
from rag.ingest.formats.manuals import display_name
from rag.text import CHUNK_SENTENCE_CUT
from rag.types import Chunk

CHUNKER_VERSION = 10  # 3: AsciiDoc titles, lists and blocks; HTML and PDF layouts; 4: definition terms in the path;
# 5: prose paragraphs of an HTML <pre> read as paragraphs; 6: and its indented prose and "- " items; 7: and its
# paragraphs opened by a first-line indent and "Note:" remarks, Vim's section titles as headings; 8: its titles in
# capitals as headings too; 9: not (no better on fit), and a reStructuredText line of backticks is a title's adornment
# or a transition, never a code fence; 10: man pages' stacked option names (`.PD 0`, `.TQ`) kept together, `\ `
# inside a macro's argument, groff's `\#` comments, one-line `.ie n`/`.el` branches, mdoc's `.Nm .` and `.Nd`
MAX_TERM_CHARS = 60  # a term carried into a heading path is cut to this (a Python signature runs to 300)
DEFAULT_MAX_TOKENS = tuned.CHUNK_TOKENS
MIN_MAX_TOKENS = 16
MAX_CHARS_PER_TOKEN = 64

_LIST_ITEM = re.compile(r"\n(?=[ \t]*(?:[-*+|>]|\d+[.)])(?:\s|$))")
_LINE_START = re.compile(r"\n(?=[^\n])")
_WORD_START = re.compile(r"(?<=\s)(?=\S)")
_LEADING_BLANK_LINES = re.compile(r"^(?:[ \t]*\n)+")
_NON_SPACE = re.compile(r"\S")
# Texts whose count each counter remembers. On 2,000 man1 pages a fifth of the counts were of a text counted before
# (gcloud's 1,800 pages share whole sections), and counting was three quarters of a cold index's CPU.
COUNT_MEMO = 1 << 14
_MEMOS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # counter -> OrderedDict(text -> count)
_UNITS, _CHARS = -1, -2  # _last_fitting's width memory for whole units and for characters (finer cuts: 0, 1, 2)


@dataclass(frozen=True)
class ChunkSettings:
    """What the chunker needs besides the text; stored in the index manifest."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    version: int = CHUNKER_VERSION

    def __post_init__(self) -> None:
        if self.max_tokens < MIN_MAX_TOKENS:
            raise BudgetError(f"chunk budget {self.max_tokens} is too small: use at least {MIN_MAX_TOKENS} tokens")

    def to_dict(self) -> dict:
        return asdict(self)


def chunk_id(doc_id: str, n: int) -> str:
    return f"{doc_id}#{n}"


def split_chunk_id(cid: str) -> tuple[str, int] | None:
    """(doc_id, n) of a `<doc_id>#<n>` id, or None if it is not one."""
    doc_id, sep, n = cid.rpartition("#")
    return (doc_id, int(n)) if sep and doc_id and n.isdigit() else None


def chunk_document(doc_id: str, text: str, counter: Counter, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Chunk]:
    """The chunks of one text document, numbered from 0 in document order."""
    return chunk_layout(doc_id, parse_text(doc_id, text), counter, max_tokens)


def chunk_layout(doc_id: str, layout: Layout, counter: Counter, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[Chunk]:
    """The chunks of one parsed document (any format), with lines of its file or the pages they come from."""
    ChunkSettings(max_tokens)  # validates the budget
    cutter = _Cutter(layout.text, counter, max_tokens)
    chunks: list[Chunk] = []
    uri = display_name(doc_id)  # `ls(1)` for a man page; a file's id otherwise
    for path, units in _groups(list(layout.units)):
        spans = cutter.cut(units)
        for (a, b), terms in zip(spans, _terms_in_force(units, [a for a, _ in spans])):
            body, first, last = cutter.render(a, b)
            if body:
                cid = chunk_id(doc_id, len(chunks))
                chunks.append(Chunk(cid, doc_id, uri, body, path + terms, *_provenance(layout, first, last)))
    return chunks


def _terms_in_force(units: list[Unit], starts: list[int]) -> Iterable[tuple[str, ...]]:
    """For each chunk start (ascending), the definition-list terms it sits under but does not show: a chunk that
    begins inside an option's or a function's description keeps that term in its heading path (and so in what
    BM25 and the embedder read). A term is in force from its item to the next item of its list or the list's end."""
    stack: list[tuple[int, str]] = []  # (depth, term), outermost first
    i = 0
    for start in starts:
        while i < len(units) and units[i].start < start:
            stack = _after(stack, units[i])
            i += 1
        if i == len(units) or (i > 0 and start < units[i - 1].end):
            here = stack  # the chunk starts inside a unit already read
        elif units[i].term:
            here = [t for t in stack if t[0] < units[i].level]  # it starts with an item, whose term it shows
        else:
            here = _after(stack, units[i])
        yield tuple(term for _, term in here if term)


def _after(stack: list[tuple[int, str]], unit: Unit) -> list[tuple[int, str]]:
    """The terms in force after `unit`: a heading ends every list, an item replaces its list's item and those
    below it, and text at depth d ends the lists deeper than d."""
    if unit.kind == "heading":
        return []
    if unit.term:
        kept = [t for t in stack if t[0] < unit.level]
        return kept + [(unit.level, _short_term(unit.term))]
    return [t for t in stack if t[0] <= unit.level]


def _short_term(term: str) -> str:
    """A term as a heading path shows it: one line, at most MAX_TERM_CHARS, cut at a word; "" if it has no word."""
    term = " ".join(term.split())
    if not any(ch.isalnum() for ch in term):
        return ""  # a bullet (`.IP \(bu`) is not a term
    if len(term) <= MAX_TERM_CHARS:
        return term
    cut = term.rfind(" ", 0, MAX_TERM_CHARS)
    return term[: cut if cut > MAX_TERM_CHARS // 2 else MAX_TERM_CHARS].rstrip(" ,(") + "…"


def _provenance(layout: Layout, first: int, last: int) -> tuple[int, int, int, int]:
    """(line_start, line_end, page_start, page_end) of rendered lines first..last (pages 0 when not paged)."""
    if layout.line_sources:
        return layout.line_sources[first - 1], layout.line_sources[last - 1], 0, 0
    if layout.line_pages:
        return first, last, layout.line_pages[first - 1], layout.line_pages[last - 1]
    return first, last, 0, 0


def count_memoized(counter: Counter, text: str) -> int:
    """counter.count(text), remembered for the last COUNT_MEMO texts of that counter (a count never changes)."""
    try:
        memo = _MEMOS.setdefault(counter, OrderedDict())
    except TypeError:  # a counter that cannot be weakly referenced: count every time
        return counter.count(text)
    n = memo.get(text)
    if n is None:
        n = memo[text] = counter.count(text)
        if len(memo) > COUNT_MEMO:
            try:
                memo.popitem(last=False)
            except KeyError:  # another thread emptied it first
                pass
    return n


def indexed_text(chunk: Chunk, with_heading: bool = True) -> str:
    """What BM25 and the embedder see: the heading path, then the text."""
    if with_heading and chunk.heading_path:
        return f"{chunk.heading}\n{chunk.text}"
    return chunk.text


def _groups(units: list[Unit]) -> Iterable[tuple[tuple[str, ...], list[Unit]]]:
    """Runs of (headings with no text of their own, then the text under the last one) with its heading path."""
    stack: list[tuple[int, str]] = []
    group: list[Unit] = []
    has_text = False  # kept as we go: rescanning the group made 100k bare headings quadratic
    path: tuple[str, ...] = ()
    for unit in units:
        if unit.kind == "heading":
            if has_text:
                yield path, group
                group, has_text = [], False
            while stack and stack[-1][0] >= unit.level:
                stack.pop()
            stack.append((unit.level, unit.title))
            path = tuple(title for _, title in stack if title)
        else:
            has_text = True
        group.append(unit)
    if group:
        yield path, group


class _Cutter:
    """Chooses chunk boundaries in one document: the farthest cut that still fits, coarsest kind first."""

    def __init__(self, text: str, counter: Counter, max_tokens: int) -> None:
        self.text = text
        self.counter = counter
        self.max_tokens = max_tokens
        self.line_offsets = [0] + [m.end() for m in re.finditer("\n", text)]
        self.fences: list[Unit] = []  # of the units being cut, in order (they never overlap)
        self._fence_starts: list[int] = []  # their body_start, for bisection
        self._ends: list[int] = []  # of the units being cut, ascending
        self._text_units: list[Unit] = []  # the same without headings, and their ends
        self._text_ends: list[int] = []
        self._widths: dict[int, int] = {}  # how many cuts of each kind the last chunk cut that way spanned
        self._cuts: dict[int, list[list[int]]] = {}

    def cut(self, units: list[Unit]) -> list[tuple[int, int]]:
        self.fences = [u for u in units if u.kind == "fence"]
        self._fence_starts = [f.body_start for f in self.fences]
        self._ends = [u.end for u in units]
        self._text_units = [u for u in units if u.kind != "heading"]
        self._text_ends = [u.end for u in self._text_units]
        end = units[-1].end
        pos = units[0].start
        spans = []
        # Work per chunk stays bounded by the chunk, not the rest of the document (a 10 MB single line): no
        # slicing of what remains, units found by bisection, the farthest cut by galloping search.
        while _NON_SPACE.search(self.text, pos, end):
            nxt = self._farthest(pos, units, protect_headings=True)
            if nxt is None:
                nxt = self._farthest(pos, units, protect_headings=False)
            if nxt is None:  # not even one character fits with its fence lines: accept it to make progress
                nxt = pos + 1
            spans.append((pos, nxt))
            pos = nxt
        return spans

    def render(self, a: int, b: int) -> tuple[str, int, int]:
        """The chunk text of [a, b) (re-fenced if it starts or ends inside a fence) and its 1-based line range."""
        raw = self.text[a:b]
        lead = _LEADING_BLANK_LINES.match(raw)
        skip = lead.end() if lead else 0
        body = raw[skip:].rstrip()
        if not body.strip():
            return "", 0, 0
        first = bisect.bisect_right(self.line_offsets, a + skip)
        last = bisect.bisect_right(self.line_offsets, a + skip + len(body) - 1)
        # Only the fence around each end matters: found by bisection (a loop over 10k fences per count was quadratic).
        i = bisect.bisect_right(self._fence_starts, a + skip) - 1
        if i >= 0 and a + skip < self.fences[i].body_end:
            body = f"{self.fences[i].opener}\n{body}"
        j = bisect.bisect_left(self._fence_starts, b) - 1
        if j >= 0 and b <= self.fences[j].body_end:
            body = f"{body}\n{self.fences[j].closer}"
        return body, first, last

    def fits(self, a: int, b: int) -> bool:
        # No tokenizer packs MAX_CHARS_PER_TOKEN chars into a token on average: skip counting huge texts.
        if b - a > self.max_tokens * MAX_CHARS_PER_TOKEN:
            return False
        body = self.render(a, b)[0]
        return bool(body) and count_memoized(self.counter, body) <= self.max_tokens

    def _farthest(self, pos: int, units: list[Unit], protect_headings: bool) -> int | None:
        """The farthest unit end after `pos` that fits (headings not an end when protected), else a finer cut."""
        kept, ends = (self._text_units, self._text_ends) if protect_headings else (units, self._ends)
        first = bisect.bisect_right(ends, pos)
        if first == len(kept):
            return None
        target = kept[first]
        # Galloping search over the unit ends, never a walk over the rest of the document: counting unit by unit,
        # or listing every unit within reach, made 100k one-line headings cost work per heading per chunk.
        best = self._last_fitting(pos, ends, _UNITS)
        if best is not None:
            after = bisect.bisect_right(ends, best)
            if after < len(kept) and self.text[pos:best].rstrip().endswith(":"):
                # "... as follows:" belongs with what follows: take as many of its items as fit.
                best = self._fill(pos, kept[after], best)
            return best
        if target.kind in ("fence", "literal") and pos < target.start and self.fits(target.start, target.end):
            # A code block that fits on its own is never cut: end this chunk before it instead.
            last = bisect.bisect_right(self._ends, target.start) - 1
            if last >= 0 and self._ends[last] > pos:
                return self._ends[last]
        for kind, cuts in enumerate(self._finer_cuts(target)):
            best = self._last_fitting(pos, cuts, kind)
            if best is not None:
                return best
        return self._char_cut(pos, target)

    def _last_fitting(self, pos: int, cuts: Sequence[int], kind: int) -> int | None:
        """The farthest of the sorted `cuts` after `pos` that fits: try as many cuts as the last chunk of this
        kind took, then gallop and bisect.

        The same cut a scan that stops at the first misfit finds, since a longer text never counts fewer tokens,
        but ~3 counts per chunk instead of one per cut: what keeps a 10 MB paragraph from taking minutes.
        """
        first = lo = bisect.bisect_right(cuts, pos)
        if lo == len(cuts) or not self.fits(pos, cuts[lo]):
            return None
        hi = len(cuts)  # cuts[lo] fits; cuts[hi] does not, or is past the end
        guess = lo + self._widths.get(kind, 0)
        if lo < guess < hi:
            if self.fits(pos, cuts[guess]):
                lo = guess
            else:
                hi = guess
        step = 1
        while lo + step < hi:
            if not self.fits(pos, cuts[lo + step]):
                hi = lo + step
                break
            lo, step = lo + step, step * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.fits(pos, cuts[mid]):
                lo = mid
            else:
                hi = mid
        self._widths[kind] = lo - first
        return cuts[lo]

    def _fill(self, pos: int, u: Unit, best: int) -> int:
        """Extend a chunk ending in a colon into the next paragraph or list, up to its last item that fits."""
        if u.kind != "para":
            return best
        for c in self._finer_cuts(u)[0]:
            if not self.fits(pos, c):
                break
            best = c
        return best

    def _finer_cuts(self, u: Unit) -> list[list[int]]:
        """Cut positions strictly inside `u`, one sorted list per kind, coarsest first (cached per unit)."""
        if u.start not in self._cuts:
            self._cuts[u.start] = self._find_cuts(u)
        return self._cuts[u.start]

    def _find_cuts(self, u: Unit) -> list[list[int]]:
        seg = self.text[u.start : u.end]

        def at(pattern: re.Pattern, lo: int = u.start, hi: int = u.end) -> list[int]:
            return [u.start + m.end() for m in pattern.finditer(seg) if lo < u.start + m.end() < hi]

        if u.kind == "fence":
            return [at(_LINE_START, u.body_start, u.body_end), at(_WORD_START, u.body_start, u.body_end)]
        if u.kind == "literal":
            return [at(_LINE_START), at(_WORD_START)]
        sentences = sorted(set(at(CHUNK_SENTENCE_CUT) + at(_LIST_ITEM)))
        return [sentences, at(_LINE_START), at(_WORD_START)]

    def _char_cut(self, pos: int, u: Unit) -> int | None:
        """The farthest character that fits: galloping from the last chunk's width, as for the other cuts (a
        bisection over the whole unit counted ~40 characters per character of a 5 MB word)."""
        return self._last_fitting(pos, range(max(pos, u.start) + 1, u.end + 1), _CHARS)
