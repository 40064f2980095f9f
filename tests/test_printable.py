"""Untrusted text made safe to print: no control character reaches a terminal, no line break splits a header."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.printable import one_line, visible


def acts_on_a_terminal(c: str) -> bool:
    return (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F or reorders(c)


def reorders(c: str) -> bool:
    """Bidi embeddings, overrides and isolates: they make a terminal show text in another order than it is."""
    return 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069


@given(st.text())
def test_visible_text_holds_no_control_but_tab_and_newline(text):
    shown = visible(text)
    assert not any(acts_on_a_terminal(c) for c in shown)
    assert shown.count("\n") == text.count("\n")  # a CRLF is one line break, as it was


@given(st.text())
def test_a_one_line_name_never_breaks(text):
    assert len(one_line(text).splitlines()) <= 1 and "\t" not in one_line(text)


def test_escape_sequences_are_shown_not_run():
    assert visible("a\x1b]52;c;aGk=\x07b\x1b[2J\x9b31m\r\nend\tok") == "a\\x1b]52;c;aGk=\\x07b\\x1b[2J\\x9b31m\nend\tok"
    assert one_line("docs/a\nb\u2028c\td.md") == "docs/a\\nb\\u2028c\\td.md"
    assert visible("plain text, café ✓") == "plain text, café ✓"


def test_bidi_overrides_are_shown_not_run():
    """'invoice\u202egpj.exe' shows as 'invoiceexe.jpg' on a terminal that runs the override."""
    assert visible("invoice\u202egpj.exe \u2066x\u2069") == "invoice\\u202egpj.exe \\u2066x\\u2069"
    assert one_line("docs/\u202aa\u202d.md") == "docs/\\u202aa\\u202d.md"
    assert visible("\u200f\u2067") == "\u200f\\u2067"  # a lone right-to-left mark reorders nothing: kept
