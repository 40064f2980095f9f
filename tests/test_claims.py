"""Splitting answers into claims: sentences and items, the markers each carries, and which ones are factual."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag import markers
from rag.verification.claims import factual_claims, is_factual, split_claims


def texts(answer: str) -> list[str]:
    return [c.text for c in split_claims(answer)]


def test_sentences_split_on_terminal_punctuation():
    assert texts("The cache grows. It is freed at exit! Is it shared?") == [
        "The cache grows.",
        "It is freed at exit!",
        "Is it shared?",
    ]


def test_marker_before_the_period_belongs_to_its_sentence():
    claims = split_claims("The cache stores keys [1]. The index uses BM25 [2].")
    assert [(c.text, c.citations) for c in claims] == [
        ("The cache stores keys.", (1,)),
        ("The index uses BM25.", (2,)),
    ]


def test_marker_right_after_the_final_period_belongs_to_that_sentence():
    claims = split_claims("The cache stores keys. [1] The index uses BM25.[2][3] Done here now.")
    assert [(c.text, c.citations) for c in claims] == [
        ("The cache stores keys.", (1,)),
        ("The index uses BM25.", (2, 3)),
        ("Done here now.", ()),
    ]


def test_grouped_markers_and_repeats_are_listed_once_in_order():
    (claim,) = split_claims("Chunks keep their heading path [3, 1] and never split code [1].")
    assert claim.citations == (3, 1)


def test_a_lowercase_identifier_after_a_marked_period_starts_a_new_sentence():
    assert texts("The context is counted whole [1]. n_ctx defaults to 2048 [2].") == [
        "The context is counted whole.",
        "n_ctx defaults to 2048.",
    ]


def test_abbreviations_decimals_and_file_names_do_not_end_a_sentence():
    answer = "Use a small model, e.g. SmolLM2 at version 0.3.8 from config.json for this. Then run it."
    assert texts(answer) == [
        "Use a small model, e.g. SmolLM2 at version 0.3.8 from config.json for this.",
        "Then run it.",
    ]


def test_bullets_and_numbered_items_are_claims():
    answer = (
        "Steps:\n- Build the index [1].\n* Run the chat\n  with the default model [2].\n"
        "2. Ask a question about the docs."
    )
    claims = split_claims(answer)
    assert [(c.text, c.kind, c.citations) for c in claims] == [
        ("Steps:", "sentence", ()),
        ("Build the index.", "item", (1,)),
        ("Run the chat with the default model.", "item", (2,)),
        ("Ask a question about the docs.", "item", ()),
    ]


def test_code_spans_and_fenced_blocks_hold_no_markers():
    answer = "Index with `x[1]` then read `` a[2] `` carefully [3].\n```\nitems[4] = 5\n```\nAll done for the day [5]."
    assert [m.n for m in markers.find(answer)] == [3, 5]
    assert [c.citations for c in split_claims(answer)] == [(3,), (5,)]


def test_a_markdown_link_is_not_a_marker():
    assert markers.find("See [1](https://example.org) for the cache layout.") == []


def test_quoted_lines_are_claims_without_the_quote_sign():
    answer = "Quoted from the docs:\n> Chunks are heading-aware. [1]\n> The index is rebuilt when files change. [2]"
    claims = split_claims(answer)
    assert [(c.text, c.citations, c.factual) for c in claims] == [
        ("Quoted from the docs:", (), False),
        ("Chunks are heading-aware.", (1,), True),
        ("The index is rebuilt when files change.", (2,), True),
    ]


def test_headings_are_not_factual_claims():
    (heading, body) = split_claims("## KV cache\nThe KV cache stores keys and values.")
    assert (heading.kind, heading.text, heading.factual) == ("heading", "KV cache", False)
    assert body.factual


def test_filler_lead_ins_questions_and_abstentions_are_not_factual():
    for sentence in [
        "I hope this helps.",
        "Here is what the docs say:",
        "Let me know if you have more questions.",
        "Sure!",
        "Does that answer your question?",
        "The docs do not mention GPU offloading.",
        "I could not find that in the excerpts.",
        "Great question.",
    ]:
        assert not is_factual(sentence), sentence


def test_statements_about_the_subject_are_factual():
    for sentence in [
        "The KV cache grows with the context length.",
        "Sure, the index is rebuilt when a file changes.",
        "It defaults to 2048.",
        "Set n_ctx first.",
        "Use `--model` to pick a file.",
    ]:
        assert is_factual(sentence), sentence


def test_a_marked_sentence_is_always_judged():
    (claim,) = split_claims("Here is what the docs say [1]:")
    assert claim.factual and claim.citations == (1,)
    assert [c.text for c in factual_claims("I hope this helps. The cache grows with n_ctx.")] == [
        "The cache grows with n_ctx."
    ]


_piece = st.sampled_from(
    ["The cache grows", "n_ctx is 2048", "Use `a[1]`", "it works", "e.g. this", "version 0.3.8", "- item", "> quote"]
)
_end = st.sampled_from([".", ". ", "! ", "? ", " [1]. ", ". [2] ", "\n", "\n\n", " [3, 4]\n", ": "])


@given(st.lists(st.tuples(_piece, _end), min_size=1, max_size=8))
def test_every_marker_outside_code_belongs_to_exactly_one_claim(parts):
    answer = "".join(p + e for p, e in parts)
    claims = split_claims(answer)
    spans = [(c.start, c.end) for c in claims]
    assert spans == sorted(spans)
    assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))
    for m in markers.find(answer):
        owners = [c for c in claims if c.start <= m.start and m.end <= c.end]
        assert len(owners) == 1 and m.n in owners[0].citations
    assert sorted({n for c in claims for n in c.citations}) == sorted(markers.numbers(answer))
