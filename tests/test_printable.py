"""Untrusted text made safe to print: no control character reaches a terminal, no line break splits a header."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.printable import one_line, visible


def acts_on_a_terminal(c: str) -> bool:
    return (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F


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
