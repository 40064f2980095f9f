"""Quote decoding: the model copies a span of a shown excerpt verbatim, the system cites it, then a short claim.

The answer's text, after the `> ` that the system writes first, is a few lines:

    > <span copied from excerpt n> [n]
    <optional claim in the model's own words>
    > <another span> [m]

`QuoteGuard` enforces that shape while llama.cpp samples. In a reference only the pieces that continue one of
the candidate spans (or, at its end, the ` [n]` and the line break) are allowed; pieces are matched on their text,
so the tokenizer may split a span however it likes. Claims are bounded free text in which `[` can only open a
marker naming a shown excerpt (the MarkerGuard's rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Hashable, Mapping, Sequence

import numpy as np

from agent.turn.grammars import MarkerGuard
from models.protocols import Embedder
from rag.answering.extractive import Quote, Standout, assess_ranked, rank_sentences, select
from rag.answering.quote_features import quotable_text
from rag.retrieval.vocabulary import DocumentFrequencies
from rag import markers
from rag.markers import MARKER_PATTERN, mask_code
from rag.citations import CitationLike, Lookup

QUOTE_CANDIDATES = 3  # sentences the model may copy from: the scorer's best few, never every sentence start
REF_OPEN = "> "  # written by the system before the model's first token: the answer opens with a reference
MAX_UNITS = 3
MAX_SPAN_TOKENS = 60
CLAIM_MAX_CHARS = 200  # ~40 tokens: a claim is one short sentence
_CLAUSE_END = re.compile(r"[,;:](?= )|\s[-\u2013\u2014](?= )")  # where a long span may be cut
_CLAUSE_START = re.compile(r"[;:] (?=\S)")  # where a span may start inside a sentence
_REF_LINE = re.compile(r"^> (?P<body>.*?) (?P<marker>" + MARKER_PATTERN + r")$")


class QuoteCandidates:
    """The sentences quote decoding offers the model: the quote scorer's best few (rag.answering.extractive.best_quotes),
    best first; none when rag.answering.answerability says the shown excerpts do not answer the question (then smoldocs
    abstains without calling the model). `vocabulary`: the index's term counts (None: quote scores alone);
    `standout`: the index's IndexReader.standout (None: the rule without it)."""

    def __init__(self, embedder: Embedder | None, vocabulary: DocumentFrequencies | None = None, k: int = QUOTE_CANDIDATES,
                 standout: Standout | None = None):
        self.embedder = embedder
        self.vocabulary = vocabulary
        self.k = k
        self.standout = standout

    def __call__(self, question: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> list[Quote]:
        ranked = rank_sentences(question, shown, lookup, self.embedder)
        if not assess_ranked(question, ranked, self.embedder, self.vocabulary, self.standout).answerable:
            return []
        return select(ranked, self.embedder is not None, max_sentences=self.k)


@dataclass(frozen=True)
class Span:
    """Text the model may copy, verbatim from excerpt `n` (modulo whitespace), and its number."""

    n: int
    text: str


def normalized(text: str) -> str:
    return " ".join(text.split())


def quote_spans(
    quotes: Sequence, excerpts: Mapping[int, str], count: Callable[[str], int], max_tokens: int = MAX_SPAN_TOKENS
) -> list[Span]:
    """Copyable spans of the candidate sentences (`rag.answering.extractive.Quote`s): each starts at the sentence's start or
    after a `;`/`:`, and is cut at a clause boundary outside code to at most `max_tokens`. A table row is copied
    whole or not at all, and a span that is not in its excerpt's text (whitespace aside) is never offered."""
    spans: dict[tuple[int, str], Span] = {}
    for quote in quotes:
        source = normalized(excerpts.get(quote.n, ""))
        sentence = normalized(quote.sentence)
        masked = mask_code(sentence)
        row = sentence.startswith("|")
        starts = [0] if row else [0, *(m.end() for m in _CLAUSE_START.finditer(masked))]
        for start in starts:
            text = _cut(sentence[start:], masked[start:], count, max_tokens)
            if text is None or (row and text != sentence):
                continue
            if len(text.split()) >= 3 and text in source and not text.startswith(">"):
                spans.setdefault((quote.n, text), Span(quote.n, text))
    return list(spans.values())


def quote_evidence(
    quotes: Sequence[Quote], packed: Mapping[int, CitationLike], lookup: Lookup, count: Callable[[str], int]
) -> tuple[list[Span], dict[int, str]]:
    """What quote decoding may copy (spans of the candidate sentences of the packed excerpts), and the evidence
    blocks the model is shown: those candidate sentences only, under their excerpt's `[n] uri`. The model can
    copy from nothing else, and every other sentence would only cost prompt evaluation before the first token."""
    # candidates are sentences of the readable text (no markup): spans are checked against the same rendering
    texts = {n: (quotable_text(chunk) if (chunk := lookup(c.chunk_id)) is not None else "") for n, c in packed.items()}
    spans = quote_spans(quotes, texts, count)
    usable = [q for q in quotes if any(s.n == q.n and s.text in normalized(q.sentence) for s in spans)]
    return spans, quote_blocks(usable, {n: c.uri for n, c in packed.items()})


def quote_blocks(quotes: Sequence, uris: Mapping[int, str]) -> dict[int, str]:
    """The evidence of quote decoding: each excerpt's candidate sentences in its `[n] uri` block, the block of the
    best candidate first (a small model copies what it read first more readily)."""
    sentences: dict[int, list[str]] = {}
    for quote in quotes:
        sentences.setdefault(quote.n, []).append(normalized(quote.sentence))
    return {n: f"[{n}] {uris[n]}\n" + "\n".join(texts) + "\n" for n, texts in sentences.items()}


def _cut(text: str, masked: str, count: Callable[[str], int], max_tokens: int) -> str | None:
    """`text` if it is short enough, else its longest head ending at a clause boundary outside code."""
    if count(text) <= max_tokens:
        return text
    for m in reversed(list(_CLAUSE_END.finditer(masked))):
        head = text[: m.start()].rstrip()
        if head and count(head) <= max_tokens:
            return head
    return None


class QuoteGuard:
    """The TextGuard of quote decoding; see the module docstring for the shape it enforces.

    States: ("ref", line, used) while a reference line is typed; ("open", after, used) at the start of a line;
    ("claim", open marker, too long) inside a claim. `used` holds the reference lines already written: a span is
    copied once per answer.
    """

    watch = "[]\n>"  # in a settled state, only pieces with one of these need checking

    def __init__(self, spans: Sequence[Span], shown: Sequence[int], prefix: str = REF_OPEN,
                 max_units: int = MAX_UNITS, claim_chars: int = CLAIM_MAX_CHARS) -> None:
        if not spans:
            raise ValueError("a quote guard needs at least one span to copy")
        self.spans = list(spans)
        self.targets = [f"{REF_OPEN}{s.text} [{s.n}]\n" for s in spans]
        self.prefix = prefix
        self.max_units = max_units
        self.claim_chars = claim_chars
        self.markers = MarkerGuard(shown or [s.n for s in spans])

    # -- states ---------------------------------------------------------------------------------------------

    def state(self, text: str) -> Hashable:
        *done, line = (self.prefix + text).split("\n")
        used = tuple(d + "\n" for d in done if d.startswith(">"))
        if line.startswith(">"):
            return ("ref", line, used)
        if not line:
            after = "start" if not done else ("ref" if done[-1].startswith(">") else "claim")
            return ("open", after, used)
        return ("claim", self.markers.state(line), len(line) >= self.claim_chars)

    def settled(self, state) -> bool:
        if state[0] == "open":
            return state[1] == "ref"  # a claim may start with any piece but `>` (a reference) or a line break
        return state[0] == "claim" and state[1] is None and not state[2]

    def starts(self, state) -> str | None:
        if state[0] == "claim" and state[2]:
            return "\n"
        if state[0] == "claim" and state[1] is not None:
            return self.markers.starts(state[1])
        return None

    def allows(self, state, piece: str) -> bool:
        kind = state[0]
        if kind == "ref":
            return any(rest.startswith(piece) for rest in self._rests(state[1], state[2]))
        if kind == "open":
            _, after, used = state
            if piece.startswith(">"):
                return any(t.startswith(piece) for t in self._free(used))
            return after == "ref" and not piece.startswith("\n") and self._claim_allows(None, False, piece)
        return self._claim_allows(state[1], state[2], piece)

    def _claim_allows(self, inside: str | None, long: bool, piece: str) -> bool:
        head, newline, tail = piece.partition("\n")
        if tail or (long and head):
            return False  # a claim is one line, and a long one may only end
        if not self.markers.allows(inside, head):
            return False
        opened = "" if inside is None else "[" + inside
        return not newline or self.markers.state(opened + head) is None  # no line break inside a marker

    def only(self, state, vocab) -> np.ndarray | None:
        """Allowed ids in a reference, or at a line start where only a reference (or the end) may come next."""
        kind = state[0]
        if kind == "ref":
            rests = self._rests(state[1], state[2])
            ids = {i for rest in rests for i in vocab.prefixes_of(rest)}
            if not ids:  # the vocabulary cannot spell the next character: end the reference here, cited
                ids = {i for rest in self._stuck(state[1], state[2]) for i in vocab.prefixes_of(rest)}
            if ids:
                return np.fromiter(ids, dtype=np.intp)
            return vocab.control  # cannot happen with a byte-level vocabulary; stop rather than break the shape
        if kind == "open" and state[1] != "ref":
            ids = {i for t in self._free(state[2]) for i in vocab.prefixes_of(t)}
            return np.concatenate([np.fromiter(ids, dtype=np.intp), vocab.control])
        return None

    def _free(self, used: tuple[str, ...]) -> list[str]:
        """The targets still open to copy: none once `max_units` references are written, and none that overlaps
        one already copied (a clause of a sentence already quoted, or the sentence around a quoted clause)."""
        if len(used) >= self.max_units:
            return []
        copied = [line[len(REF_OPEN) : line.rfind(" [")] for line in used]
        return [t for s, t in zip(self.spans, self.targets) if not any(s.text in c or c in s.text for c in copied)]

    def _pairs(self, used: tuple[str, ...]) -> list[tuple[Span, str]]:
        free = set(self._free(used))
        return [(s, t) for s, t in zip(self.spans, self.targets) if t in free]

    def _rests(self, line: str, used: tuple[str, ...]) -> list[str]:
        """What may still follow `line` in the reference: the rest of each target it begins, or of the marker
        that ends a reference cut short (the vocabulary could not spell on; `only` decides when that may start)."""
        rests = []
        for span, t in self._pairs(used):
            if t.startswith(line):
                rests.append(t[len(line):])
                continue
            marker = f" [{span.n}]\n"
            for cut in range(max(len(REF_OPEN) + 1, len(line) - len(marker) + 1), len(line)):
                if t.startswith(line[:cut]) and marker.startswith(line[cut:]):
                    rests.append(marker[len(line) - cut:])
                    break
        return rests

    def _stuck(self, line: str, used: tuple[str, ...]) -> list[str]:
        return [f" [{s.n}]\n" for s, t in self._pairs(used) if t.startswith(line) and len(line) > len(REF_OPEN)]


@dataclass(frozen=True)
class QuoteUnit:
    """One reference (copied text and its excerpt number) and the claim the model wrote after it, if any."""

    reference: str
    n: int
    claim: str = ""


def parse_quote_units(text: str, prefix: str = REF_OPEN) -> tuple[list[QuoteUnit], str]:
    """The complete units of a quote-decoded answer, and a reference left unfinished (dropped: never shown)."""
    units: list[QuoteUnit] = []
    partial = ""
    lines = (prefix + text).split("\n")
    for i, line in enumerate(lines):
        if line.startswith(">"):
            m = _REF_LINE.match(line.rstrip())
            numbers = markers.parse(m.group("marker")) if m else ()
            if m is not None and len(numbers) == 1:
                units.append(QuoteUnit(m.group("body"), numbers[0]))
            elif i == len(lines) - 1 or line.strip():
                partial = line[len(REF_OPEN):] if line.startswith(REF_OPEN) else line
        elif line.strip() and units:
            last = units[-1]
            units[-1] = QuoteUnit(last.reference, last.n, (last.claim + " " + line.strip()).strip())
    return units, partial.strip()
