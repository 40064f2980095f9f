"""Citation markers in answers: parsing, resolving against the ledger, checking against the store."""

from __future__ import annotations

import pytest

from rag.citations import Citation, parse_citations, problem, resolve, unresolved
from rag.types import Chunk


@pytest.mark.parametrize(
    "answer, numbers",
    [
        ("KV caching stores keys [2].", [2]),
        ("Both [1][3] say so.", [1, 3]),
        ("See [1, 3] and [3,1].", [1, 3]),
        ("A two-digit one [12].", [12]),
        ("First [3], then [1], again [3] and [2].", [3, 1, 2]),
        ("Lists [1, 2,3] are fine.", [1, 2, 3]),
        ("Nested [[4]] still counts.", [4]),
        ("Across\nlines [5]\nand [6]", [5, 6]),
    ],
)
def test_parse_citations_finds_markers_in_order(answer, numbers):
    assert parse_citations(answer) == numbers


@pytest.mark.parametrize(
    "answer",
    [
        "letters [a] are not markers",
        "ranges [1-3] are not markers",
        "zero [0] is never a citation",
        "leading zero [01] is junk",
        "empty [] is nothing",
        "junk [ 1 ,] is nothing",
        "junk [1,] and [,2] are nothing",
        "signed [-1] and [+2] are nothing",
        "decimals [1.5] are nothing",
        "a Markdown link [1](https://example.com) is not a citation",
        "no brackets at all 1 2 3",
        "",
    ],
)
def test_parse_citations_ignores_what_is_not_a_marker(answer):
    assert parse_citations(answer) == []


def test_numbers_inside_code_are_not_citations():
    answer = (
        "Use `x[1]` or ``y[2]`` inline [3].\n"
        "```python\nitems[4]\n```\n"
        "~~~\nmore[5]\n~~~\n"
        "After the fences [6]."
    )
    assert parse_citations(answer) == [3, 6]


def test_an_unclosed_fence_hides_the_rest():
    assert parse_citations("Before [1].\n```\ncode[2]\nstill code [3]") == [1]


def test_a_lone_backtick_hides_nothing():
    assert parse_citations("it's a ` quote [1]") == [1]


CITATIONS = [
    Citation(1, "docs/a.md#0", "docs/a.md", "docs/a.md"),
    Citation(2, "docs/b.md#1", "docs/b.md", "docs/b.md"),
    Citation(3, "docs/c.md#0", "docs/c.md", "docs/c.md"),
]


def test_resolve_returns_used_citations_in_order_of_appearance():
    used, unknown = resolve("Per [3] and [1], also [3].", CITATIONS)
    assert [c.n for c in used] == [3, 1]
    assert unknown == []


def test_resolve_lists_made_up_numbers_sorted():
    used, unknown = resolve("See [9], [2], [7] and [4].", CITATIONS)
    assert [c.n for c in used] == [2]
    assert unknown == [4, 7, 9]


def test_resolve_with_no_citations_at_all_keeps_every_number_unknown():
    assert resolve("Claims [1] and [2].", []) == ([], [1, 2])


STORE = {
    "docs/a.md#0": Chunk("docs/a.md#0", "docs/a.md", "docs/a.md", "alpha"),
    "docs/b.md#1": Chunk("docs/b.md#1", "docs/b.md", "docs/b.md", "beta"),
    "docs/c.md#0": Chunk("docs/c.md#0", "docs/c.md", "docs/c.md", "gamma"),
}


def test_citations_of_stored_chunks_resolve():
    assert unresolved(CITATIONS, STORE.get) == []


def test_missing_chunk_wrong_doc_id_and_wrong_uri_are_reported():
    bad = [
        Citation(4, "docs/gone.md#0", "docs/gone.md", "docs/gone.md"),
        Citation(5, "docs/a.md#0", "docs/other.md", "docs/a.md"),
        Citation(6, "docs/b.md#1", "docs/b.md", "elsewhere/b.md"),
    ]
    assert unresolved([*CITATIONS, *bad], STORE.get) == bad
    assert "not in the index" in problem(bad[0], STORE.get)
    assert "docs/other.md" in problem(bad[1], STORE.get)
    assert "elsewhere/b.md" in problem(bad[2], STORE.get)


def test_unresolved_accepts_a_retriever():
    class Store:
        def chunk(self, chunk_id):
            return STORE.get(chunk_id)

    gone = Citation(7, "docs/gone.md#0", "docs/gone.md", "docs/gone.md")
    assert unresolved([*CITATIONS, gone], Store()) == [gone]
