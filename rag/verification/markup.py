"""Documentation markup a claim check must see through: HTML tags, AsciiDoc, reStructuredText and Markdown links.

Both sides of a check get the same treatment, so `linkgit:git-tag[1]` in a claim matches `git-tag(1)` in a man page,
`<kbd>Ctrl</kbd>+<kbd>C</kbd>` matches `Ctrl+C`, and reStructuredText's ``:variable:`CMAKE_SKIP_RPATH``` and
````RPATH```` become the code spans `` `CMAKE_SKIP_RPATH` `` and `` `RPATH` ``. Code spans (backticks) are kept:
they mark exact names.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>|<!--.*?-->", re.DOTALL)
_LINKGIT = re.compile(r"\blinkgit:([\w.-]+)\[(\d\w*)\]")  # AsciiDoc `linkgit:git-tag[1]`: the page git-tag(1)
_NO_OPTION = re.compile(r"--\[no-\]([\w-]+)")  # AsciiDoc `--[no-]force`: both spellings
_MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\(([^()\s]*)\)")  # [text](url): the target is named too
_MD_REF = re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]")  # [text][ref]
_DEFINITION = re.compile(r"(?m)^(\s*\S[^\n]*?)::\s*$")  # AsciiDoc `--prune=<date>::` term line
_CONTINUATION = re.compile(r"(?m)^\+\s*$")  # AsciiDoc list continuation
_EMPHASIS = re.compile(r"(?<![\w`])([*_]{1,2})(?=\S)([^*_`\n]+?)(?<=\S)\1(?![\w`])")
# reStructuredText: a link `text <url>`_ or `text`__ is its text; ``literal`` and :role:`text` are code spans.
_RST_LINK = re.compile(r"(?<![`:])`([^`<\n]+?)(?:\s*<[^<>`\n]*>)?`__?(?![\w`])")
_RST_LITERAL = re.compile(r"``([^`\n]+)``")
_RST_ROLE = re.compile(r":[a-z][\w.+-]*(?::[a-z][\w.+-]*)?:`([^`<\n]+?)(?:\s*<[^<>`\n]*>)?`")
_SMART = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "\u00a0": " "})


@lru_cache(maxsize=4096)
def plain(text: str) -> str:
    """`text` with markup removed and the words, names and code spans kept, for matching."""
    out = text.translate(_SMART)
    if "<" in out:
        out = _TAG.sub("", out)
    if "&" in out:
        out = html.unescape(out).translate(_SMART)
    out = _LINKGIT.sub(r"\1(\2)", out)
    if "`" in out:
        out = _RST_ROLE.sub(r"`\1`", _RST_LITERAL.sub(r"`\1`", _RST_LINK.sub(r"\1", out)))
    out = _NO_OPTION.sub(r"--\1 --no-\1", out)
    out = _MD_REF.sub(r"\1", _MD_LINK.sub(r"\1 (\2)", out))
    out = _DEFINITION.sub(r"\1:", out)
    out = _CONTINUATION.sub("", out)
    return _EMPHASIS.sub(r"\2", out)
