"""Split an answer into claims: sentences and list items, each with the `[n]` markers it carries."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag import markers
from rag.markers import MARKER, MARKER_PATTERN, code_lines, mask_code
from rag.text import FACTUAL_STOPWORDS, prose_words

_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_QUOTE = re.compile(r"^\s*>\s?")
_QUOTE_PREFIX = re.compile(r"(?m)^\s*>\s?")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
# End of a sentence: terminal punctuation, closing quotes/brackets, then any markers that follow it.
_END = re.compile(r"[.!?]+[\"')\]*_]*((?:\s*" + MARKER_PATTERN + ")*)")
_MARKER_BEFORE = re.compile(MARKER_PATTERN + r"\s*$")
_CODEISH_START = re.compile(r"[a-z][\w]*[-_.][\w]")
_ABBREVIATIONS = frozenset("e.g i.e etc vs cf approx fig no eq sec ch incl resp al".split())

# A sentence about the answer itself, not about the subject ("Here is what the docs say:", "I hope this helps.").
_FILLER_OPENING = re.compile(
    r"^(?:sure|certainly|of course|great question|good question|thanks|thank you|okay|ok|yes|no|"
    r"i hope|hope this|let me know|feel free|happy to help|i(?:'m| am) (?:happy|glad)|"
    r"here(?: is|'s| are)|below(?: is| are)|as (?:shown|noted|mentioned) (?:above|below))\b[\s,!.]*",
    re.IGNORECASE,
)
# A statement about what the excerpts cover is an abstention, not a claim about the subject.
_ABSTENTION = re.compile(
    r"^(?:i (?:do not|don't|could not|couldn't|cannot|can't|did not|didn't) (?:know|find|see|tell)|"
    r"i(?:'m| am) not sure|"
    r"(?:the|these|those|my) (?:provided )?(?:docs|documentation|excerpts?|sources?|search results?|results?)"
    r"(?: provided| above| shown)? (?:do not|don't|does not|doesn't|did not|didn't) "
    r"(?:say|mention|cover|contain|explain|describe|include|specify|state|answer))",
    re.IGNORECASE,
)
_META_WORDS = frozenset(
    "docs doc documentation excerpt excerpts source sources answer question questions help helps helpful "
    "information info say says said following below above result results".split()
)
_DIGIT = re.compile(r"\d")
MIN_CONTENT_WORDS = 3  # fewer, with no number, identifier or marker: not a factual claim


@dataclass(frozen=True)
class Claim:
    """One sentence or list item of an answer. `text` has the markers removed."""

    text: str
    citations: tuple[int, ...]  # marker numbers in order of first appearance
    start: int  # span of the sentence in the answer, markers included
    end: int
    kind: str  # "sentence" | "item" | "heading"
    factual: bool

    @property
    def cited(self) -> bool:
        return bool(self.citations)


def split_claims(answer: str, keep_markers: bool = False) -> list[Claim]:
    """Every sentence and list item of `answer`, factual or not, in order.

    `keep_markers` is for document text, where a `[1]` is content (docs about citations), not a citation.
    """
    masked = mask_code(answer)
    claims: list[Claim] = []
    for start, end, kind in _segments(answer):
        spans = [(start, end)] if kind == "heading" else _sentences(masked, start, end)
        claims.extend(_claim(answer, masked, s, e, kind, keep_markers) for s, e in spans)
    return [c for c in claims if c.text or c.citations]


def factual_claims(answer: str) -> list[Claim]:
    """The claims a checker must judge: those with a marker, and factual sentences without one."""
    return [c for c in split_claims(answer) if c.factual]


def _claim(answer: str, masked: str, start: int, end: int, kind: str, keep_markers: bool = False) -> Claim:
    raw = _QUOTE_PREFIX.sub("", answer[start:end])
    numbers: list[int] = []
    for m in MARKER.finditer(masked[start:end]):
        for part in m.group(1).split(","):
            if int(part) not in numbers and not keep_markers:
                numbers.append(int(part))
    text = " ".join((raw if keep_markers else markers.strip(raw)).split())
    if kind == "heading":
        text = _HEADING.sub("", text).strip().strip("#").strip()
    factual = bool(numbers) or (kind != "heading" and is_factual(text))
    return Claim(text, tuple(numbers), start, end, kind, factual)


def is_factual(text: str) -> bool:
    """A sentence states something about the subject, not about the answer or the docs' coverage."""
    t = text.strip().strip("*_ ").strip()
    if not t or t.endswith("?") or t.endswith(":"):
        return False
    if _ABSTENTION.match(t):
        return False
    rest = _FILLER_OPENING.sub("", t, count=1)
    if _DIGIT.search(rest) or "`" in rest or any(_looks_like_identifier(w) for w in rest.split()):
        return True
    words = [w.lower() for w in prose_words(rest)]
    content = [w for w in words if w not in FACTUAL_STOPWORDS and w not in _META_WORDS and len(w) > 1]
    return len(content) >= MIN_CONTENT_WORDS


def _looks_like_identifier(word: str) -> bool:
    w = word.strip(".,;:!?()[]{}\"'")
    return bool(re.search(r"[a-z]_[a-z0-9]|[a-z][A-Z]|\w\.\w+\(|^--\w", w))


def _segments(answer: str) -> list[tuple[int, int, str]]:
    """Paragraph runs, list items and headings as (start, end, kind); fenced code is skipped."""
    segments: list[tuple[int, int, str]] = []
    current: list[int] | None = None  # [start, end] of the open segment
    current_kind = "sentence"
    pos = 0
    prev_quote = False

    def close() -> None:
        nonlocal current
        if current is not None:
            segments.append((current[0], current[1], current_kind))
            current = None

    for line, fenced in code_lines(answer):
        body = line.rstrip("\n").rstrip("\r")
        line_start, line_end = pos, pos + len(body)
        pos += len(line)
        if fenced:
            close()
            continue
        if not body.strip() or _TABLE_RULE.match(body) and "-" in body:
            close()
            continue
        quote = _QUOTE.match(body)
        if bool(quote) != prev_quote:
            close()  # a quote starts or ends a paragraph of its own
        prev_quote = bool(quote)
        if quote:
            line_start += quote.end()
            body = body[quote.end() :]
        if _HEADING.match(body):
            close()
            segments.append((line_start, line_end, "heading"))
            continue
        item = ITEM.match(body)
        if item or body.lstrip().startswith("|"):
            close()
            offset = item.end() if item else 0
            current, current_kind = [line_start + offset, line_end], "item"
            continue
        if current is None:
            current, current_kind = [line_start + len(body) - len(body.lstrip()), line_end], "sentence"
        else:
            current[1] = line_end
    close()
    return segments


def _sentences(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans within [start, end); a marker right after the final period stays with its sentence."""
    spans = []
    s = start
    for m in _END.finditer(masked, start, end):
        cut = m.end()
        nxt = masked[cut:end].lstrip()
        # A marker just before or after the punctuation ends the sentence whatever follows ("[1]. n_ctx is ...").
        marked = bool(m.group(1)) or bool(_MARKER_BEFORE.search(masked, max(start, m.start() - 16), m.start()))
        if nxt and not marked and (not _starts_sentence(nxt) or _inside_name(masked, cut)):
            continue
        if not marked and _is_abbreviation(masked, m.start()):
            continue
        if _is_decimal(masked, m.start(), end):
            continue
        spans.append((s, cut))
        s = cut
        while s < end and masked[s].isspace():
            s += 1
    if s < end and masked[s:end].strip():
        spans.append((s, end))
    return [(a, b) for a, b in spans if masked[a:b].strip()]


def _inside_name(masked: str, cut: int) -> bool:
    """A period with a lowercase letter, digit or name character right after it sits inside a name (~/.tmux.conf)."""
    after = masked[cut : cut + 1]
    return bool(after) and (after.islower() or after.isdigit() or after in "_.")


def _starts_sentence(text: str) -> bool:
    ch = text[0]
    # "llama-cpp-python does ..." starts a sentence too: a code-ish first word may be lowercase.
    return ch.isupper() or ch.isdigit() or ch in "\"'`*([_>" or bool(_CODEISH_START.match(text))


def _is_abbreviation(masked: str, dot: int) -> bool:
    word = re.search(r"([A-Za-z][A-Za-z.]*)$", masked[max(0, dot - 12) : dot])
    if not word:
        return False
    w = word.group(1).lower().rstrip(".")
    return w in _ABBREVIATIONS or (len(w) == 1 and masked[dot - 1].isupper())


def _is_decimal(masked: str, dot: int, end: int) -> bool:
    return dot + 1 < end and masked[dot] == "." and masked[dot - 1 : dot].isdigit() and masked[dot + 1].isdigit()
