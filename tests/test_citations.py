"""The ag.08 citation contract: parse_citations, resolve and unresolved, each rule pinned for all inputs."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag.citations import Citation, parse_citations, resolve, unresolved
from rag.types import Chunk

numbers = st.integers(min_value=1, max_value=999)
words = st.text(alphabet="abcdefghij ", min_size=0, max_size=12)


def _marker(group: list[int], sep: str) -> str:
    return "[" + sep.join(str(n) for n in group) + "]"


@given(st.lists(st.tuples(words, st.lists(numbers, min_size=1, max_size=3), st.sampled_from([",", ", ", " , "])), max_size=8))
def test_parse_citations_gives_each_number_once_in_order_of_first_appearance(parts):
    answer = "".join(f"{text} {_marker(group, sep)}" for text, group, sep in parts)
    expected = list(dict.fromkeys(n for _text, group, _sep in parts for n in group))
    assert parse_citations(answer) == expected


@given(st.lists(numbers, min_size=1, max_size=4))
def test_adjacent_markers_count_like_one_group(group):
    assert parse_citations("".join(f"[{n}]" for n in group)) == parse_citations(_marker(group, ", "))


@given(st.sampled_from(["[a]", "[1-3]", "[0]", "[01]", "[1.5]", "[-2]", "[]", "[ 1 ]", "[1,]", "[,1]", "[1 2]"]), words)
def test_a_bracket_that_is_not_a_list_of_positive_integers_is_no_marker(bracket, text):
    assert parse_citations(f"{text} {bracket}") == []


@given(numbers, words)
def test_markers_in_code_and_markdown_links_are_not_citations(n, text):
    assert parse_citations(f"{text} `a[{n}]`") == []
    assert parse_citations(f"{text}\n```\nx = y[{n}]\n```\n") == []
    assert parse_citations(f"see [{n}](https://example.org/{n})") == []
    assert parse_citations(f"`a[{n}]` but also [{n}]") == [n]


shown_numbers = st.sets(numbers, max_size=6)


@given(shown_numbers, st.lists(numbers, max_size=8))
def test_resolve_splits_the_numbers_into_used_citations_and_sorted_unknown_ones(shown, cited):
    citations = [Citation(n, f"d{n}.md#0", f"d{n}.md", f"d{n}.md") for n in sorted(shown)]
    answer = " ".join(f"claim {i} [{n}]." for i, n in enumerate(cited))
    used, unknown = resolve(answer, citations)
    order = parse_citations(answer)
    assert [c.n for c in used] == [n for n in order if n in shown]
    assert unknown == sorted(n for n in order if n not in shown)
    assert resolve(answer, {c.n: c for c in citations}) == (used, unknown)  # a mapping number -> citation works too


@given(st.lists(st.sampled_from(["ok", "missing", "other_doc", "other_uri"]), max_size=8))
def test_unresolved_is_each_citation_whose_chunk_is_missing_or_differs(states):
    store: dict[str, Chunk] = {}
    citations = []
    for i, state in enumerate(states, start=1):
        chunk_id = f"docs/p{i}.md#0"
        citations.append(Citation(i, chunk_id, f"docs/p{i}.md", f"docs/p{i}.md"))
        if state != "missing":
            doc = f"docs/p{i}.md" if state != "other_doc" else "docs/elsewhere.md"
            uri = doc if state != "other_uri" else "docs/renamed.md"
            store[chunk_id] = Chunk(chunk_id, doc, uri, "text")
    bad = [c.n for c in unresolved(citations, store.get)]
    assert bad == [i for i, state in enumerate(states, start=1) if state != "ok"]


def test_unresolved_accepts_anything_that_looks_chunks_up():
    class Store:
        def chunk(self, chunk_id):
            return Chunk(chunk_id, "docs/a.md", "docs/a.md", "text") if chunk_id == "docs/a.md#0" else None

    kept, gone = Citation(1, "docs/a.md#0", "docs/a.md", "docs/a.md"), Citation(2, "docs/b.md#0", "docs/b.md", "docs/b.md")
    assert unresolved([kept, gone], Store()) == [gone]
