"""Citation markers: the one grammar (rag.markers), the code mask, and checking a citation against the store."""

from __future__ import annotations

import pytest

from rag import markers
from rag.citations import Citation, problem
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
def test_numbers_finds_markers_in_order(answer, numbers):
    assert markers.numbers(answer) == numbers


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
def test_numbers_ignores_what_is_not_a_marker(answer):
    assert markers.numbers(answer) == []


def test_numbers_inside_code_are_not_citations():
    answer = (
        "Use `x[1]` or ``y[2]`` inline [3].\n"
        "```python\nitems[4]\n```\n"
        "~~~\nmore[5]\n~~~\n"
        "After the fences [6]."
    )
    assert markers.numbers(answer) == [3, 6]


def test_an_unclosed_fence_hides_the_rest():
    assert markers.numbers("Before [1].\n```\ncode[2]\nstill code [3]") == [1]


def test_a_lone_backtick_hides_nothing():
    assert markers.numbers("it's a ` quote [1]") == [1]


CITATIONS = [
    Citation(1, "docs/a.md#0", "docs/a.md", "docs/a.md"),
    Citation(2, "docs/b.md#1", "docs/b.md", "docs/b.md"),
    Citation(3, "docs/c.md#0", "docs/c.md", "docs/c.md"),
]


def test_find_gives_each_number_with_its_group_and_digit_spans():
    text = "See [1, 3] then `[2]` and [12]."
    found = markers.find(text)
    assert [(m.n, text[m.start:m.end], text[m.number_start:m.number_end]) for m in found] == [
        (1, "[1, 3]", "1"), (3, "[1, 3]", "3"), (12, "[12]", "12"),
    ]


def test_parse_reads_exactly_one_marker():
    assert markers.parse("[1, 3]") == (1, 3)
    assert markers.parse(" [2] ") == (2,)
    assert markers.parse("[0]") == () and markers.parse("[1](x)") == () and markers.parse("[1] [2]") == ()


def test_replace_renders_groups_outside_code_and_leaves_links_alone():
    text = "A [1][2, 3] b `c[4]` [5](http://x) d [6]."
    out = markers.replace(text, lambda ns: "<" + "+".join(map(str, ns)) + ">")
    assert out == "A <1><2+3> b `c[4]` [5](http://x) d <6>."


def test_strip_removes_markers_and_closes_the_space_before_punctuation():
    assert markers.strip("The cache grows [1] , fast [2][3].") == "The cache grows, fast."
    assert markers.strip("Keep `a[1]` code [2].\nNext line [3]") == "Keep `a[1]` code.\nNext line"
    assert markers.strip("[0] and [01] are not markers") == "[0] and [01] are not markers"


def test_mask_code_keeps_offsets_and_blanks_fences_and_spans():
    text = "a `b[1]` c\n```\nx[2]\n```\nd [3]"
    masked = markers.mask_code(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")
    assert "[1]" not in masked and "[2]" not in masked and masked.endswith("d [3]")


def test_a_longer_fence_is_not_closed_by_a_shorter_run():
    assert markers.numbers("````\n```\ncode [1]\n````\nafter [2]") == [2]


def test_text_already_rendered_can_be_searched_without_the_code_mask():
    assert [m.n for m in markers.find("x `[1]` y", skip_code=False)] == [1]


STORE = {
    "docs/a.md#0": Chunk("docs/a.md#0", "docs/a.md", "docs/a.md", "alpha"),
    "docs/b.md#1": Chunk("docs/b.md#1", "docs/b.md", "docs/b.md", "beta"),
    "docs/c.md#0": Chunk("docs/c.md#0", "docs/c.md", "docs/c.md", "gamma"),
}


def test_citations_of_stored_chunks_resolve():
    assert [problem(c, STORE.get) for c in CITATIONS] == [None, None, None]


def test_missing_chunk_wrong_doc_id_and_wrong_uri_are_reported():
    bad = [
        Citation(4, "docs/gone.md#0", "docs/gone.md", "docs/gone.md"),
        Citation(5, "docs/a.md#0", "docs/other.md", "docs/a.md"),
        Citation(6, "docs/b.md#1", "docs/b.md", "elsewhere/b.md"),
    ]
    assert "not in the index" in problem(bad[0], STORE.get)
    assert "docs/other.md" in problem(bad[1], STORE.get)
    assert "elsewhere/b.md" in problem(bad[2], STORE.get)
