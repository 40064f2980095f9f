"""mdoc(7), the BSD man page macros (`.Dd`, `.Sh`, `.It Fl x`): telling such a page apart and its inline macros as text.

The block macros mdoc shares with man(7) in spirit (`.Sh`/`.Ss` headings, `.It` list items, `.Bd` displays) are read
by rag.ingest.formats.roff; here, a line of inline macros becomes words: `Fl x` is `-x`, `Xr ls 1` is `ls(1)`,
`Op`/`Dq`/`Pq` bracket and quote what follows, other macro names are dropped and their arguments kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_MDOC = re.compile(r"^\.(?:Dd|Dt|Sh|Nm|Os)\b", re.MULTILINE)
_MAN = re.compile(r"^\.(?:TH|SH)\b", re.MULTILINE)


def is_mdoc(text: str) -> bool:
    """True for a page written in the mdoc(7) macros (BSD pages: `.Dd`, `.Sh`) rather than man(7)."""
    head = text[:20000]
    return bool(_MDOC.search(head)) and not _MAN.search(head)


MDOC_INLINE = frozenset({"Nm", "Fl", "Ar", "Op", "Cm", "Pa", "Xr", "Ev", "Va", "Dv", "Er", "Ic", "Li", "Sy", "Em",
                         "Ql", "Dq", "Sq", "Pq", "Ns", "No", "Nd", "Fn", "Fa", "Ft", "Fd", "Ad", "An", "Lk", "Mt",
                         "Aq", "Bq", "Brq", "Qq", "Ux", "Bx", "At", "St", "Tn", "Ms", "Vt", "Cd", "In", "Ot", "Xo",
                         "Xc", "Sx", "Dl", "Pf", "%A", "%T", "%D", "%R", "%O", "%B", "%J", "%N", "%V", "%U", "%Q",
                         "%P", "%C", "Oo", "Oc", "Qo", "Qc", "Do", "Dc", "Po", "Pc"})
_MDOC_WORDS = {"Oo": "[", "Oc": "]", "Qo": '"', "Qc": '"', "Do": "\u201c", "Dc": "\u201d", "Po": "(", "Pc": ")",
               "Ux": "UNIX", "Bx": "BSD", "Nd": "\u2013"}
# mdoc's closing delimiters: an argument that is one of them is punctuation, written against the word before it.
CLOSING = frozenset(".,:;)]?!")


def is_punctuation(word: str) -> bool:
    return len(word) == 1 and word in CLOSING
_MDOC_FLAGS = {"Fl": "-", "Op": "[", "Dq": "\u201c", "Sq": "\u2018", "Pq": "(", "Aq": "\u27e8", "Bq": "[",
               "Brq": "{", "Qq": '"'}
_MDOC_CLOSE = {"Op": "]", "Dq": "\u201d", "Sq": "\u2019", "Pq": ")", "Aq": "\u27e9", "Bq": "]", "Brq": "}", "Qq": '"'}


def mdoc_words(args: list[str], un: Callable[[str], str]) -> str:
    """An mdoc line's text: macro names dropped, `Fl x` as `-x`, `Xr ls 1` as `ls(1)`, quotes and brackets kept."""
    out: list[str] = []
    closers: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word == "Xr" and i + 2 < len(args) + 1 and i + 1 < len(args):
            section = args[i + 2] if i + 2 < len(args) else ""
            out.append(f"{un(args[i + 1])}({section})" if section else un(args[i + 1]))
            i += 3
            continue
        if word in _MDOC_FLAGS:
            nxt = args[i + 1] if i + 1 < len(args) else ""
            if word == "Fl":
                out.append("-" + (un(nxt) if nxt and nxt not in MDOC_INLINE else ""))
                i += 2 if nxt and nxt not in MDOC_INLINE else 1
                continue
            out.append(_MDOC_FLAGS[word])
            closers.append(_MDOC_CLOSE[word])
        elif word in _MDOC_WORDS:
            out.append(_MDOC_WORDS[word])
        elif word in MDOC_INLINE or word in ("It", "Ta"):
            pass
        else:
            out.append(un(word))
        i += 1
    text = ""
    for w in out:
        if w:
            text += w if not text or is_punctuation(w) else " " + w
    for closer in reversed(closers):
        text += closer
    return re.sub(r"([\[(\u201c\u2018\u27e8{-]) ", r"\1", text)
