"""HTML to a Layout: h1-h6 headings, paragraphs, list items, preformatted blocks; scripts, styles and navigation dropped.

Parsed by BeautifulSoup with Python's html.parser, which never fails on malformed markup (it only guesses where
unclosed tags end) and records the source line of every tag, so chunks cite lines of the .html file.
The text chunks are cut from is Markdown-like: `## Title` for an h2, `- ` for a list item, ``` around a <pre>.
A <pre> that is mostly running prose (Vim's help pages are one <pre> each; HAProxy's manuals keep their 80-column
text in <pre class="text">) gives its prose paragraphs as paragraphs, so they can be quoted, and Vim's section titles
as headings; the rest stays fenced.
"""

from __future__ import annotations

import re
import textwrap
import warnings
from typing import Iterator

from bs4 import BeautifulSoup, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from rag.ingest.formats import Layout
from rag.ingest.formats.rendered import Block, rendered_layout

DROPPED_TAGS = frozenset({"script", "style", "noscript", "template", "nav", "head", "footer", "svg", "iframe",
                          "button", "select", "input", "textarea"})
DROPPED_ROLES = frozenset({"navigation", "search", "contentinfo", "banner"})
HEADINGS = {f"h{n}": n for n in range(1, 7)}
PREFORMATTED = frozenset({"pre", "textarea", "listing", "xmp"})
BLOCKS = frozenset({
    "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details", "dialog", "dir", "div",
    "dl", "dt", "fieldset", "figcaption", "figure", "form", "header", "hgroup", "hr", "html", "li", "main", "menu",
    "ol", "p", "section", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
})
_SPACE = re.compile(r"[ \t\r\n\f\v\u00a0]+")
_END = object()  # the end of a node's children
_PERMALINK = "\u00b6"  # Sphinx's ¶ after every heading and signature
# A line that opens code, a prompt, a comment, a list or a table rather than a sentence.
_NOT_PROSE_LINE = re.compile(r"^(?:#|//|;|--|%|\$|>>>|\.\.\.|<|\{|\}|\[|\*|\d+\.|-|\+|@|\|)")
_CODE_CHARS = frozenset("(){}[]=;<>$_#/\\|*`@")
_SENTENCE_END = re.compile(r"[a-z]{2}[.?!:](?:\s|$)")
_FIELD = re.compile(r"^[A-Z][\w-]*:\s")  # "ERROR: ...", "Comment: ...": program output and control fields
_LABEL = re.compile(r"^(?:Note|Notes|Hint|Tip|Warning|Caution|Important):\s")  # a remark's label, not a field
PROSE_SHARE = 0.3  # of a <pre>'s words in prose paragraphs, for them to be read as paragraphs


class _Walker:
    """Collects blocks in document order; inline text gathers into the open paragraph."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.words: list[str] = []
        self.line = 0
        self.prefix = ""
        self.depth = 0  # how many <dl> are open around the walk
        self.in_term = False  # the open paragraph is a <dt>

    def flush(self) -> None:
        text = _SPACE.sub(" ", "".join(self.words)).replace(_PERMALINK, "").strip()
        if text:
            term = text if self.in_term else ""
            self.blocks.append(Block("para", self.prefix + text, self.line or 1, self.depth, term))
        self.words.clear()
        self.prefix = ""
        self.line = 0
        self.in_term = False

    def walk(self, root: Tag) -> None:
        """Every node under `root` in document order, with an explicit stack: real pages nest thousands deep."""
        stack: list[tuple[Iterator, Tag, bool]] = [(iter(root.children), root, False)]  # (children, node, flush after)
        while stack:
            children, node, flush_after = stack[-1]
            child = next(children, _END)
            if child is _END:
                stack.pop()
                if flush_after:
                    self.flush()
                if node.name.lower() == "dl":
                    self.depth -= 1
                continue
            if isinstance(child, (Comment, Declaration, Doctype, ProcessingInstruction)):
                continue
            if isinstance(child, NavigableString):
                if not self.line and str(child).strip():
                    self.line = node.sourceline or 1  # None: the parser kept no lines
                self.words.append(str(child))
                continue
            if not isinstance(child, Tag) or _dropped(child):
                continue
            name = child.name.lower()
            line = child.sourceline or 1
            if name in HEADINGS:
                self.flush()
                title = _SPACE.sub(" ", child.get_text(" ")).replace(_PERMALINK, "").strip()
                if title:
                    self.blocks.append(Block("heading", title, line, HEADINGS[name]))
            elif name in PREFORMATTED:
                self.flush()
                raw = child.get_text()
                text = raw.strip("\n").rstrip()
                if text.strip():
                    leading = len(raw) - len(raw.lstrip("\n"))  # blank lines before the text: its first line
                    self.blocks.extend(preformatted_blocks(text, line + leading, self.depth))
            elif name == "br":
                self.words.append("\n")
            elif name in ("li", "dt"):
                self.flush()
                self.prefix = "- " if name == "li" else ""
                self.in_term = name == "dt" and self.depth > 0
                stack.append((iter(child.children), child, True))
            elif name in ("td", "th"):  # a row is one line: "lru | least recently used goes first"
                if "".join(self.words).strip():
                    self.words.append(" | ")
                stack.append((iter(child.children), child, False))
            elif name in BLOCKS:
                self.flush()
                self.depth += name == "dl"
                stack.append((iter(child.children), child, True))
            else:
                stack.append((iter(child.children), child, False))


def is_prose_paragraph(text: str, item: bool = False) -> bool:
    """Running sentences, not code: at least 8 words opening with a capital (a list item's may be small; never a
    "Field:" of program output), most lines flush left and opening no code, comment, prompt or list, few code
    characters, ending as a sentence ends."""
    lines = [line for line in text.splitlines() if line.strip()]
    opening = text[1:2] if text[:1] == '"' else text[:1]  # a sentence may open on a quoted name
    if len(text.split()) < 8 or not (opening.isupper() or item and opening.islower()) or (
            _FIELD.match(text) and not _LABEL.match(text)):
        return False
    plain = [line for line in lines if not line[:1].isspace() and not _NOT_PROSE_LINE.match(line)]
    if len(plain) < 0.7 * len(lines) or sum(ch in _CODE_CHARS for ch in text) > max(2, 0.02 * len(text)):
        return False
    if sum(ch.isalpha() or ch.isspace() for ch in text) < 0.9 * len(text):
        return False
    return text.rstrip().endswith((".", "?", "!", ":")) and bool(_SENTENCE_END.search(text))


def preformatted_blocks(text: str, line: int, depth: int) -> list[Block]:
    """A <pre> starting at source `line`: one fenced block, or, when at least PROSE_SHARE of its words are prose
    (is_prose_paragraph over each paragraph's runs of flush-left lines and of indented ones, an indented run taken
    without its indent and item by item where it is a "- " or "* " list; a paragraph also opens at a first-line
    indent), the prose as paragraphs (lines joined; an item keeps its "- "), Vim's section titles (`*32.2*<Tab>Title`
    under a rule, the rule dropped) as headings, and each run of the rest fenced as it was."""
    pieces: list[tuple[int, int, str | None]] = []  # (first and end index into lines, the paragraph it reads as)
    headings: set[int] = set()  # the pieces (by first line) that are section titles
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        title = _HELP_SECTION.match(lines[i])
        if title and _after_rule(lines, i):
            pieces.append((i, i + 1, " ".join(filter(None, title.groups())).replace("\t", " ").strip()))
            headings.add(i)
            i += 1
            continue
        j, indented = i + 1, _indented(lines, i)
        while j < len(lines) and lines[j].strip() and _indented(lines, j) == indented and (
                indented or not lines[j][:1].isspace()):  # a first-line indent opens a paragraph of its own
            j += 1
        if not indented:
            part = "\n".join(line.lstrip(" ") for line in lines[i:j])
            pieces.append((i, j, _SPACE.sub(" ", part).strip() if is_prose_paragraph(part) else None))
        else:
            pieces.extend(_indented_pieces(lines, i, j))
        i = j
    words = len(text.split())
    prose = sum(len("\n".join(lines[a:b]).split()) for a, b, said in pieces if said is not None and a not in headings)
    if not prose or prose < PROSE_SHARE * words:
        return [Block("pre", text, line, depth)]
    blocks: list[Block] = []
    run: tuple[int, int] | None = None  # the code between prose paragraphs, as it was
    for a, b, said in pieces:
        if said is None:
            run = (run[0] if run else a, b)
            continue
        heading = a in headings
        if run and heading and _RULE.match(lines[run[1] - 1]):
            run = (run[0], run[1] - 1) if run[1] - 1 > run[0] else None  # the rule drawn over a heading goes
        if run:
            blocks.append(Block("pre", "\n".join(lines[run[0] : run[1]]).rstrip(), line + run[0], depth))
            run = None
        if heading:
            blocks.append(Block("heading", said, line + a, HELP_SECTION_LEVEL))
        else:
            blocks.append(Block("para", said, line + a, depth))
    if run:
        blocks.append(Block("pre", "\n".join(lines[run[0] : run[1]]).rstrip(), line + run[0], depth))
    return blocks


_ITEM = re.compile(r"^[-*] +(?=\S)")
# Vim's help: a section opens with a rule of "=" or "-", then "*03.10*<Tab>Using marks" (its tag, then its title).
_RULE = re.compile(r"^(?:={20,}|-{20,})\s*$")
_HELP_SECTION = re.compile(r"^\*(?:(\d+\.\d+)|[\w.-]+)\*\t+(\S.{0,78})$")  # a numbered one keeps its number
HELP_SECTION_LEVEL = 2  # under the page's own title


def _after_rule(lines: list[str], k: int) -> bool:
    """Whether the last non-blank line before line k is a rule."""
    for row in reversed(lines[max(0, k - 3) : k]):
        if row.strip():
            return bool(_RULE.match(row))
    return False


def _flush_left(line: str) -> bool:
    return bool(line.strip()) and not line[:1].isspace()


def _indented(lines: list[str], k: int) -> bool:
    """Whether line k of a <pre> is indented: a first-line indent of 1-3 spaces over a flush-left line (Vim's help
    opens a paragraph that way, with no blank line before it) is not."""
    line = lines[k]
    if not line[:1].isspace():
        return False
    spaces = len(line) - len(line.lstrip(" "))
    if not 0 < spaces <= 3 or line[spaces:spaces + 1].isspace():
        return True
    return not (k + 1 < len(lines) and _flush_left(lines[k + 1]))


def _indented_pieces(lines: list[str], i: int, j: int) -> list[tuple[int, int, str | None]]:
    """The indented run lines[i:j] of a <pre>, split at "- " or "* " items, each with the paragraph it reads as."""
    plain = textwrap.dedent("\n".join(lines[i:j])).split("\n")
    starts = [k for k, row in enumerate(plain) if _ITEM.match(row)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    out: list[tuple[int, int, str | None]] = []
    for a, b in zip(starts, starts[1:] + [len(plain)]):
        marker = _ITEM.match(plain[a])
        body = "\n".join([plain[a][marker.end():] if marker else plain[a], *(r.strip() for r in plain[a + 1 : b])])
        said = ("- " if marker else "") + _SPACE.sub(" ", body).strip() if is_prose_paragraph(body, bool(marker)) else None
        out.append((i + a, i + b, said))
    return out


def _dropped(tag: Tag) -> bool:
    if tag.name.lower() in DROPPED_TAGS:
        return True
    attrs = tag.attrs or {}
    if str(attrs.get("role", "")).lower() in DROPPED_ROLES or attrs.get("hidden") is not None:
        return True
    classes = attrs.get("class") or ()
    return "headerlink" in classes or "footer" in classes  # Sphinx permalinks; the page footer as a class


def html_blocks(html: str) -> list[Block]:
    """The blocks of an HTML page; the <title> becomes the first heading when the page has no h1-h6."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # bs4 warns about markup that looks like a file name or a URL
        soup = BeautifulSoup(html, "html.parser")
    walker = _Walker()
    walker.walk(soup.body if soup.body is not None else soup)
    walker.flush()
    blocks = walker.blocks
    tag = soup.title
    title = tag.get_text(" ").strip() if tag is not None else ""
    if tag is not None and title and not any(b.kind == "heading" for b in blocks):
        blocks.insert(0, Block("heading", _SPACE.sub(" ", title), tag.sourceline or 1, 1))
    return blocks


def html_layout(html: str) -> Layout:
    """The Layout of an HTML page: rendered text, its units, and the source line of every rendered line."""
    return rendered_layout(html_blocks(html))
