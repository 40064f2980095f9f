"""AsciiDoc structure: one-line and underlined titles of every level, anchors, delimited and open blocks, lists.

What matters for chunking, on the shape of real manual pages (git's Documentation/*.txt):
- `= T`, `== T` ... and two-line titles underlined with = - ~ ^ + (levels 1-5, the same levels as `=` counts);
  a `----` line under a paragraph of several lines is a listing block, not an underline;
- `[[anchor]]`, `[attributes]` and `.Block title` lines belong to the block that follows them;
- delimited blocks (`----`, `....`, `++++`, `****`, `====`, `____`) are atomic; `////` comment blocks and `//`
  comment lines are dropped; `--` open blocks and `+` list continuations only group, they hold no text;
- each labelled list item (`term::`, `term:::`, `term;;`) and each list item starts a new paragraph.
"""

from __future__ import annotations

import re

from rag.ingest.blocks import Lines, Unit, fence_end, fence_unit

_ONE_LINE_TITLE = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?[ \t]*$")
UNDERLINE_LEVELS = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_UNDERLINE = re.compile(r"^([=\-~^+])\1+[ \t]*$")
_ANCHOR_OR_ATTRIBUTES = re.compile(r"^\[(?:\[[^\[\]]+\]|[^\[\]]*)\][ \t]*$")  # [[id]], [[id,text]], [verse], [source,sh]
_BLOCK_TITLE = re.compile(r"^\.[^\s.]")
_COMMENT = re.compile(r"^//(?:[^/]|$)")
_DIRECTIVE = re.compile(r"^(?:ifdef|ifndef|ifeval|endif|include)::\S*\[.*\][ \t]*$")
_LABELLED_ITEM = re.compile(r"^[ \t]*\S.*?(?::{2,4}|;;)(?:[ \t]+\S.*)?$")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[*\-]+|\.+|\d+\.)[ \t]+\S")
_ADOC_ONLY = re.compile(r"^(?:\S.*?::|\[\[[^\]]+\]\]|\[[a-z]+[^\]]*\]|(?:include|ifdef|ifndef|endif)::.*|//.*)[ \t]*$",
                        re.MULTILINE)
_INLINE_ANCHOR = re.compile(r"\[\[[^\[\]]*\]\]")


def looks_like_asciidoc(text: str) -> bool:
    """True for a .txt file that is AsciiDoc (git's manual pages and the fragments they include).

    A `= Title` first line; or an underlined title (read as Markdown setext it would be the same, but a later
    `~~~~` underline would open a Markdown fence and swallow the rest); or, for a fragment with no title, markup
    Markdown never has (`term::` lists, `[[anchors]]`, `ifdef::`, `//` comments).
    """
    head = text.lstrip("\n")[:20000]
    lines = head.split("\n", 2)
    if lines[0].startswith("= ") and lines[0][2:].strip():
        return True
    markers = len(_ADOC_ONLY.findall(head))
    if len(lines) >= 2:
        title, underline = lines[0].rstrip(), lines[1].rstrip()
        if _UNDERLINE.match(underline) and underline[0] in "=-" and abs(len(underline) - len(title)) <= 1:
            return True
    return markers >= 2


def _is_underline(line: str, title: str) -> bool:
    s = line.rstrip()
    if s == "--" or not _UNDERLINE.match(s):  # `--` opens an open block
        return False
    t = title.strip()
    return abs(len(s) - len(t)) <= 1 and not (_LIST_ITEM.match(title) or _LABELLED_ITEM.match(title) or
                                            _ANCHOR_OR_ATTRIBUTES.match(t) or _BLOCK_TITLE.match(t))


def parse_adoc(text: str) -> list[Unit]:
    """Split AsciiDoc `text` into units in document order (see the module docstring for the rules)."""
    ls = Lines(text)
    lines = ls.lines
    n = len(lines)
    units: list[Unit] = []
    para: list[int] = []
    pending: int | None = None  # first anchor/attribute/block-title line waiting for its block

    def take_start(i: int) -> int:
        nonlocal pending
        first = i if pending is None else pending
        pending = None
        return ls.start(first)

    def close_para() -> None:
        if para:
            units.append(Unit("para", take_start(para[0]), ls.end(para[-1])))
        para.clear()

    def heading(first: int, last: int, level: int, title: str) -> None:
        title = _INLINE_ANCHOR.sub("", title).strip()  # "GIT URLS[[URLS]]"
        units.append(Unit("heading", take_start(first), ls.end(last), level=level, title=title))

    i = 0
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            close_para()
            i += 1
            continue
        if para and len(para) == 1 and _is_underline(line, lines[para[0]]):
            title_row = para.pop()
            heading(title_row, i, UNDERLINE_LEVELS[stripped[0]], lines[title_row])
            i += 1
            continue
        comment = fence_end(lines, i, "adoc") if stripped.startswith("////") else None
        if comment is not None:  # a comment block: dropped
            close_para()
            i = comment[0] + 1
            continue
        if stripped in ("--", "+") or _DIRECTIVE.match(stripped) or (_COMMENT.match(stripped) and not para):
            close_para()  # open-block delimiters, list continuations, preprocessor lines: structure only
            i += 1
            continue
        fence = fence_end(lines, i, "adoc")
        if fence is not None:
            close_para()
            units.append(fence_unit(ls, i, *fence, start=take_start(i)))
            i = fence[0] + 1
            continue
        if not para and (_ANCHOR_OR_ATTRIBUTES.match(stripped) or _BLOCK_TITLE.match(stripped)):
            pending = i if pending is None else pending
            i += 1
            continue
        m = _ONE_LINE_TITLE.match(line)
        if m:
            close_para()
            heading(i, i, len(m.group(1)), m.group(2))
            i += 1
            continue
        if para and (_LABELLED_ITEM.match(line) or _LIST_ITEM.match(line)) and not _LABELLED_ITEM.match(lines[para[-1]]):
            close_para()  # each item starts a paragraph (terms listed together stay together): chunks may end there
        para.append(i)
        i += 1
    close_para()
    return units
