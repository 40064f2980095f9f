"""Document structure: a text split into headings, paragraphs and atomic code blocks, with char offsets.

Markdown (ATX `#` and setext), reStructuredText (underlined and overlined titles) and plain text (read as
Markdown); AsciiDoc lives in rag.ingest.formats.asciidoc and HTML/PDF in rag.ingest.formats, all built of these Units.
Nothing here counts tokens; rag.ingest.chunking decides where chunks end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|\+{4,}|\*{4,}|_{4,}|={4,}|/{4,})[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_RST_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.<>!$%&,;?@\\|/])\1+[ \t]*$")
_RST_DIRECTIVE = re.compile(r"^\.\. [\w:-]+::")
_BLOCK_MARKER = re.compile(r"^\s*(?:[-*+>|]|\d+[.)])(?:\s|$)")


@dataclass(frozen=True)
class Unit:
    """A contiguous piece of a document: a heading, a paragraph, or a code block never cut casually."""

    kind: str  # "heading" | "para" | "fence" | "literal"
    start: int  # char offset of its first char
    end: int  # char offset just past its last char (excluding the final newline)
    level: int = 0  # headings: their level; other units: how deep in definition lists they sit (0: in none)
    title: str = ""  # headings only
    body_start: int = 0  # fences: offset of the first line after the opening line
    body_end: int = 0  # fences: offset of the closing line (== end if unclosed)
    opener: str = ""  # fences: the opening line, repeated when a fence must be cut
    closer: str = ""  # fences: the closing line (synthesized when missing)
    term: str = ""  # a paragraph that opens a definition-list item (HTML <dt>, a man page's .TP tag): its term


class Lines:
    """The lines of a text and the char offset where each starts."""

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.offsets = []
        pos = 0
        for line in self.lines:
            self.offsets.append(pos)
            pos += len(line) + 1

    def start(self, i: int) -> int:
        return self.offsets[i]

    def end(self, i: int) -> int:
        return self.offsets[i] + len(self.lines[i])


def fence_end(lines: list[str], i: int, syntax: str) -> tuple[int, str] | None:
    """(index of the closing line or len(lines) if unclosed, fence marker) when line i opens a fence."""
    line = lines[i]
    m = _MD_FENCE.match(line)
    if m:
        marker = m.group(1)
        if marker[0] == "`" and "`" in line[m.end() :]:
            return None  # an inline code span, not a fence
        if syntax == "rst" and not line[m.end() :].strip() and not line[:1].isspace():
            return None  # a title's underline or overline of backticks, or a transition, as reStructuredText has them
        close = re.compile(r"^ {0,3}" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}[ \t]*$")
    elif syntax == "adoc" and ADOC_DELIMITER.match(line):
        marker = line.strip()
        close = re.compile(r"^" + re.escape(marker) + r"[ \t]*$")
    else:
        return None
    for j in range(i + 1, len(lines)):
        if close.match(lines[j]):
            return j, marker
    return len(lines), marker


def fence_unit(ls: Lines, i: int, j: int, marker: str, start: int | None = None) -> Unit:
    """The fence opened at line i and closed at line j (j == len(lines): unclosed, closed by `marker`)."""
    lines, n = ls.lines, len(ls.lines)
    closed = j < n
    last = j if closed else n - 1
    body_start = ls.start(i + 1) if i + 1 < n else ls.end(i)
    body_end = ls.start(j) if closed else ls.end(last)
    return Unit(
        "fence", ls.start(i) if start is None else start, ls.end(last), body_start=body_start,
        body_end=max(body_start, body_end), opener=lines[i], closer=lines[j] if closed else marker,
    )


def parse_units(text: str, syntax: str = "md") -> list[Unit]:
    """Split Markdown or reStructuredText (`syntax` "md" or "rst") into units in document order; blank lines and
    thematic breaks fall between units."""
    ls = Lines(text)
    lines = ls.lines
    units: list[Unit] = []
    rst_styles: dict[tuple[str, bool], int] = {}
    para: list[int] = []  # line indexes of the open paragraph

    def close_para(upto: int | None = None) -> None:
        rows = para if upto is None else para[:upto]
        if rows:
            units.append(Unit("para", ls.start(rows[0]), ls.end(rows[-1])))
        para.clear()

    def heading(first: int, last: int, level: int, title: str) -> None:
        units.append(Unit("heading", ls.start(first), ls.end(last), level=level, title=title.strip()))

    def rst_level(char: str, overline: bool) -> int:
        return rst_styles.setdefault((char, overline), len(rst_styles) + 1)

    i, n = 0, len(lines)
    if syntax == "md" and lines and lines[0].strip() == "---":  # YAML front matter
        for j in range(1, n):
            if lines[j].strip() in ("---", "..."):
                units.append(Unit("para", 0, ls.end(j)))
                i = j + 1
                break
    while i < n:
        line = lines[i]
        if not line.strip():
            literal_next = syntax == "rst" and para and lines[para[-1]].rstrip().endswith("::")
            close_para()
            if literal_next:
                j = i + 1
                while j < n and not lines[j].strip():
                    j += 1
                if j < n and lines[j][:1] in (" ", "\t"):
                    i = _take_indented(ls, units, j)
                    continue
            i += 1
            continue
        fence = fence_end(lines, i, syntax)
        if fence is not None:
            close_para()
            units.append(fence_unit(ls, i, *fence))
            i = fence[0] + 1
            continue
        if syntax == "rst" and _RST_DIRECTIVE.match(line) and not para:
            i = _take_indented(ls, units, i, include_first=True)
            continue
        m = _ATX.match(line) if syntax == "md" else None
        if m:
            close_para()
            heading(i, i, len(m.group(1)), m.group(2) or "")
            i += 1
            continue
        if para and syntax == "md" and _SETEXT.match(line) and not any(_BLOCK_MARKER.match(lines[r]) for r in para):
            title = " ".join(lines[r].strip() for r in para)
            first = para[0]
            para.clear()
            heading(first, i, 1 if line.strip()[0] == "=" else 2, title)
            i += 1
            continue
        if syntax == "rst":
            adorn = _RST_ADORNMENT.match(line)
            if adorn and para and len(line.strip()) >= min(4, len(lines[para[-1]].strip())):
                title_row = para[-1]
                close_para(upto=len(para) - 1)
                heading(title_row, i, rst_level(adorn.group(1), False), lines[title_row])
                i += 1
                continue
            if adorn and not para and i + 2 < n and lines[i + 1].strip() and lines[i + 2].strip() == line.strip():
                heading(i, i + 2, rst_level(adorn.group(1), True), lines[i + 1])
                i += 3
                continue
        if not para and (_THEMATIC_BREAK.match(line) or (syntax == "rst" and _RST_ADORNMENT.match(line))):
            i += 1  # a transition: belongs to no unit
            continue
        para.append(i)
        i += 1
    close_para()
    return units


def _take_indented(ls: Lines, units: list[Unit], i: int, include_first: bool = False) -> int:
    """Consume an indented rst block (literal or directive body) as one literal unit; return the next line."""
    lines = ls.lines
    first = i
    last = i
    j = i + 1 if include_first else i
    while j < len(lines) and (not lines[j].strip() or lines[j][:1] in (" ", "\t")):
        if lines[j].strip():
            last = j
        j += 1
    units.append(Unit("literal", ls.start(first), ls.end(last)))
    return last + 1
