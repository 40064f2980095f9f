"""Documentation markup a claim check must see through: HTML tags, AsciiDoc, Markdown and reStructuredText inline syntax.

Both sides of a check get the same treatment, so `linkgit:git-tag[1]` in a claim matches `git-tag(1)` in a man page,
`<kbd>Ctrl</kbd>+<kbd>C</kbd>` matches `Ctrl+C`, and reStructuredText's ``:variable:`CMAKE_SKIP_RPATH``` and
````RPATH```` become the code spans `` `CMAKE_SKIP_RPATH` `` and `` `RPATH` ``. Code spans (backticks) are kept:
they mark exact names.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from rag.markers import FENCE_OPEN
from rag.verification.claims import ITEM

_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.DOTALL)
_LINKGIT = re.compile(r"\blinkgit:([\w.-]+)\[(\d\w*)\]")  # AsciiDoc `linkgit:git-tag[1]`: the page git-tag(1)
# AsciiDoc `link:page.html[Title]` and `https://host/x[Title]`: the title is what a reader sees (an empty one:
# the target).
_ADOC_LINK = re.compile(r"\b(?:link:|(?=(?:https?|ftp)://))([^\s\[\]]+)\[([^\[\]\n]*)\]")
_NO_OPTION = re.compile(r"--\[no-\]([\w-]+)")  # AsciiDoc `--[no-]force`: both spellings
_MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\(([^()\s]*)\)")  # [text](url): the target is named too
_MD_REF = re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")  # [text][ref]
_DEFINITION = re.compile(r"(?m)^(\s*\S[^\n]*?)::\s*$")  # AsciiDoc `--prune=<date>::` term line
_CONTINUATION = re.compile(r"(?m)^\+\s*$")  # AsciiDoc list continuation
_EMPHASIS = re.compile(r"(?<![\w`])([*_]{1,2})(?=\S)([^*_`\n]+?)(?<=\S)\1(?![\w`])")
# reStructuredText: a link `text <url>`_ or `text`__ is its text; ``literal`` and :role:`text` are code spans.
_RST_LINK = re.compile(r"(?<![`:])`([^`<\n]+?)(?:\s*<[^<>`\n]*>)?`__?(?![\w`])")
_RST_LITERAL = re.compile(r"``([^`\n]+)``")
_RST_ROLE = re.compile(r":([a-z][\w.+-]*(?::[a-z][\w.+-]*)?):`([^`<\n]+?)(?:\s*<[^<>`\n]*>)?`", re.I)
_SMART = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " "})


@lru_cache(maxsize=4096)
def plain(text: str) -> str:
    """`text` with markup removed and the words, names and code spans kept, for matching: typographic quotes
    read as straight ones."""
    return _unmarked(text.translate(_SMART), rst_words=True).translate(_SMART)


def _unmarked(text: str, rst_words: bool) -> str:
    """`text` with markup removed, its characters as they are; `rst_words`: `name_` references read as the word
    (always for matching, where both sides get it; for display only in RST, where `class_` is never a name)."""
    out = text
    if "<" in out:
        out = _TAG.sub("", out)
    if "&" in out:
        out = html.unescape(out)
    out = _LINKGIT.sub(r"\1(\2)", out)
    if "[" in out:
        out = _ADOC_LINK.sub(lambda m: m[2].strip() or m[1], out)
    out = _NO_OPTION.sub(r"--\1 --no-\1", out)
    out = _MD_REF.sub(r"\1", _MD_LINK.sub(r"\1 (\2)", out))
    out = _DEFINITION.sub(r"\1:", out)
    out = _CONTINUATION.sub("", out)
    if "`" in out or "]_" in out:  # reStructuredText inline markup: references, literals, roles, footnotes
        out = _RST_ROLE.sub(_role, _RST_LITERAL.sub(r"`\1`", _RST_LINK.sub(r"\1", out)))
        out = _RST_FOOTNOTE.sub("", out)
    out = _EMPHASIS.sub(_unemphasized, out)
    return _RST_WORD_REF.sub(r"\1", out) if rst_words and "_" in out else out  # after emphasis (`__a b__`)


def _role(m: re.Match) -> str:
    # :rfc:`2396` reads "RFC 2396"; any other role's text is an exact name: a code span
    named = _ROLE_NAMES.get(m.group(1).lower())
    return named + m.group(2) if named else f"`{m.group(2)}`"


def _unemphasized(m: re.Match) -> str:
    # `__init__` is a name, not strong emphasis: a double underscore around one word stays
    return m.group(0) if m.group(1) == "__" and " " not in m.group(2) else m.group(2)


# What a reader should not see in a quote, beyond what `plain` removes (rag.answering.quote_features renders every
# quoted chunk with `readable`, and the verifier's `plain` of both sides still matches it word for word).
_ADORNMENT = re.compile(r"^([=\-~^\"'`#*+_:.<>!$%&,;?@\\|/])\1{3,}[ \t]*$")  # RST/AsciiDoc title underline
_ADOC_TITLE = re.compile(r"^(={1,6})[ \t]+(\S.*?)(?:[ \t]+=+)?[ \t]*$")  # `== Title`
_ADOC_ATTRIBUTES = re.compile(r"^\[(?:\[[^\[\]]+\]|[a-z][\w,=\" -]*)\][ \t]*$")  # [[anchor]], [source,sh]
_RST_TARGET = re.compile(r"^\.\. (?:_[^:]*|\|[^|]+\|[^:]*|\[[^\]]+\])(?::|$).*$")  # link target, substitution, footnote
_RST_DIRECTIVE_LINE = re.compile(r"^\.\. ([\w-]+)::[ \t]*(.*)$")
_RST_COMMENT = re.compile(r"^\.\.(?:[ \t].*)?$")
_RST_OPTION = re.compile(r"^[ \t]+:[\w -]+:(?:[ \t].*)?$")  # a directive's `   :alt: text` option line
_ADMONITIONS = frozenset("note tip hint important warning caution attention danger error admonition seealso".split())
# rst2html.py_, reStructuredText_: a word with no other underscore (snake_case_ and __init__ stay as they are)
_RST_WORD_REF = re.compile(r"(?<![\w`])([A-Za-z][A-Za-z0-9.-]*[A-Za-z0-9])__?(?=[\s,;:!?)]|\.(?:\s|$)|$)", re.M)
_RST_FOOTNOTE = re.compile(r"\s?\[(?:#[\w-]*|\*|\d+)\]_")  # [#]_, [1]_
_RST_SUBSTITUTION = re.compile(r"\|([\w][\w .-]*)\|(?=[\s.,;:)]|$)")
_ROLE_NAMES = {"rfc": "RFC ", "pep": "PEP "}


def readable(text: str, syntax: str = "") -> str:
    """`text` (a chunk, lines kept) as a reader should see it quoted: titles as `# Title` lines, which are never
    quoted; RST directives, targets, comments, roles and references, AsciiDoc labels, attributes and `+`
    continuations, and HTML leftovers gone. `syntax` "rst" also reads literal blocks as code and `name_`
    references as words."""
    rst = syntax in ("rst", "txt")
    lines: list[str] = []
    fenced = False
    for line in _literal_blocks_fenced(text.split("\n")) if rst else text.split("\n"):
        # A line of backticks or tildes is a fence, even under an RST title: read as a title underline, the text it
        # had hidden was quoted instead of better sentences (docutils-doc: evidence sentence 12 -> 10 of 41,
        # unanswerable declined 5 -> 3 of 9).
        if FENCE_OPEN.match(line):
            fenced = not fenced
            lines.append(line)
            continue
        if fenced:
            lines.append(line)  # code is shown as it is
            continue
        if _LABEL_END.search(line) and not line.startswith(".. "):  # `term::`, `For example::`: a colon
            line = _LABEL_END.sub(":", line)
            if not line.strip(" \t:"):
                continue
        if _ADORNMENT.match(line):
            title = lines[-1].strip() if lines else ""
            if title and not title.startswith("#") and len(line.strip()) >= len(title) - 2 and not title.endswith((":", ".")):
                lines[-1] = f"# {title}"
            continue  # an overline, underline or transition: no text
        if (m := _ADOC_TITLE.match(line)) and not rst:
            lines.append(f"# {m.group(2)}")
            continue
        if _ADOC_ATTRIBUTES.match(line) or _RST_TARGET.match(line) or _RST_OPTION.match(line) and rst:
            continue
        if m := _RST_DIRECTIVE_LINE.match(line):
            name, rest = m.group(1).lower(), m.group(2).strip()
            if name in _ADMONITIONS and rest:
                lines.append(f"{name.capitalize()}: {rest}")
            continue  # other directives (image, contents, code-block...) have no prose on their line
        if _RST_COMMENT.match(line):
            continue
        lines.append(line)
    out = _unmarked("\n".join(lines), rst_words=rst)
    if rst:
        out = _RST_SUBSTITUTION.sub(r"\1", out)
    return out.replace("\u00b6", "")


_LABEL_END = re.compile(r"\s*(?::{2,4}|;;)[ \t]*$")


def _literal_blocks_fenced(lines: list[str]) -> list[str]:
    """RST literal blocks (the lines after a paragraph ending in `::`, indented deeper than it) between ```
    fences, so they are read as code, never as sentences."""
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        out.append(line)
        i += 1
        if not line.rstrip().endswith("::") or line.lstrip().startswith(".. "):
            continue
        base = _indent(line) if line[:1].isspace() or ITEM.match(line) else 0
        j = i
        while j < n and not lines[j].strip():
            j += 1
        if j >= n or _indent(lines[j]) <= base:
            continue
        last = k = j
        while k < n and (not lines[k].strip() or _indent(lines[k]) > base):  # the block is indented deeper
            last = k if lines[k].strip() else last
            k += 1
        out.extend(["", "```", *lines[j : last + 1], "```"])
        i = last + 1
    return out


def _indent(line: str) -> int:
    """Where the line's text starts; a list item's text starts after its bullet."""
    line = line.expandtabs(8)
    bullet = ITEM.match(line)
    return bullet.end() if bullet else len(line) - len(line.lstrip())


