"""HTML to a Layout: h1-h6 headings, paragraphs, list items, preformatted blocks; scripts, styles and navigation dropped.

Parsed by BeautifulSoup with Python's html.parser, which never fails on malformed markup (it only guesses where
unclosed tags end) and records the source line of every tag, so chunks cite lines of the .html file.
The text chunks are cut from is Markdown-like: `## Title` for an h2, `- ` for a list item, ``` around a <pre>.
"""

from __future__ import annotations

import re
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
                text = child.get_text().strip("\n").rstrip()
                if text.strip():
                    self.blocks.append(Block("pre", text, line, self.depth))
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
