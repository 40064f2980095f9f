"""Untrusted text made safe to print: document text, file names and model output never drive a terminal.

A document can hold `ESC ] 52 ; c ; <base64> BEL` (write the user's clipboard) or `ESC [ 2 J` (clear the screen);
a file name can hold a line break that splits a `[n] <uri>` header in two. Control characters and bidi
overrides are escaped visibly, as Python writes them (`\\x1b`, `\\x9b`, `\\u2028`, `\\u202e`), like git's quoted
paths and `less`'s `^[`: an escape sequence loses its ESC (or C1 introducer) and what is left is plain text.
Stateless per character, so a stream may be escaped piece by piece.
"""

from __future__ import annotations

import re

# Bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): "invoice\u202egpj.exe" shows as
# "invoiceexe.jpg", so they are escaped like controls.
_REORDERING = "\u202a-\u202e\u2066-\u2069"
# C0 except tab and newline, DEL, C1 (0x9b alone is CSI on terminals that take 8-bit controls), bidi overrides.
_TERMINAL_CONTROLS = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_REORDERING}]")
# Everything that ends a line for str.splitlines(), and every other control character, tab included.
_LINE_BREAKING = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_REORDERING}]")


def _escaped(found: re.Match) -> str:
    return found.group().encode("unicode_escape").decode("ascii")


def visible(text: str) -> str:
    """`text` for a terminal: tabs and line breaks kept (CRLF read as one), every other control escaped."""
    return _TERMINAL_CONTROLS.sub(_escaped, text.replace("\r\n", "\n"))


def one_line(name: str) -> str:
    """A file name or id for a one-line header: every control and line break escaped (tab too)."""
    return _LINE_BREAKING.sub(_escaped, name)
