"""Quote decoding's copy guard with a small vocabulary: references are verbatim, cited, bounded; bad input."""

from __future__ import annotations

import numpy as np
import pytest

from agent.turn.quoting import REF_OPEN, QuoteGuard, Span, QuoteUnit, normalized, parse_quote_units, quote_spans
from models.llama_cpp.guards import GuardProcessor, Vocabulary
from rag.answering.extractive import Quote

def words(text: str) -> int:
    return len(text.split())


EXCERPTS = {
    1: "The kv cache stores the keys and values of earlier tokens. It grows with the context.",
    2: "BM25 has two parameters: k1 saturates term frequency, and b controls length normalization.",
}
SPANS = [
    Span(1, "The kv cache stores the keys and values of earlier tokens."),
    Span(2, "k1 saturates term frequency, and b controls length normalization."),
]


def _vocab(extra=()) -> Vocabulary:
    """Control token, single characters, and some multi-character pieces that cross span ends."""
    chars = sorted({ch for s in SPANS for ch in s.text} | set(" []\n>0123456789.,:") | set("abcdefghijklmnopqrstuvwxyz"))
    multi = [" kv", " cache", " stores", "The", " keys", " values", " [1", "]\n", " [2]\n", "> The", ".\n", "It", " is",
             " big", "\n>", "\n\n", "[", "[3]"]
    return Vocabulary(["", *chars, *multi, *extra])


def _decode(guard, vocab, seed: int, steps: int = 400) -> str:
    """Sample with random preferences through the GuardProcessor, like llama.cpp would; id 0 ends the text."""
    rng = np.random.default_rng(seed)
    processor = GuardProcessor(guard, vocab, n_prompt=2)
    ids = [0, 0]
    out = []
    for _ in range(steps):
        logits = rng.normal(size=len(vocab)).astype(np.float32)
        logits[0] -= 1.5  # the end is possible, not likely
        masked = processor(np.array(ids), logits)
        token = int(np.argmax(masked))
        if token == 0:
            break
        ids.append(token)
        out.append(vocab.pieces[token])
    return "".join(out)


@pytest.mark.parametrize("seed", range(25))
def test_every_reference_is_a_whole_span_cited_with_its_number(seed):
    guard = QuoteGuard(SPANS, [1, 2])
    text = _decode(guard, _vocab(), seed)
    units, _partial = parse_quote_units(text)
    assert units, text  # the first unit is a reference: the prefix opened it
    for unit in units:
        assert any(s.text == unit.reference and s.n == unit.n for s in SPANS), text
        assert len(unit.claim) <= guard.claim_chars + 10  # the last piece may cross the bound
    assert len(units) <= 2  # each span at most once
    assert "[3]" not in text  # a claim cannot cite an excerpt that was not shown


def test_references_stop_after_the_unit_limit():
    spans = [Span(1, f"Sentence number {w} is here.") for w in ("one", "two", "three", "four")]
    guard = QuoteGuard(spans, [1], max_units=3)
    text = "".join(f"{s.text} [1]\n> " for s in spans[:2]) + spans[2].text + " [1]\n"
    state = guard.state(text)
    assert state[0] == "open"
    vocab = Vocabulary(["", ">", "> ", "S", "The"])
    assert set(guard.only(guard.state(spans[0].text + " [1]\nA claim.\n"), vocab)) == {0, 1, 2}  # > or end
    assert not guard.allows(state, ">") and not guard.allows(state, "> S")  # the fourth reference is refused
    assert guard.allows(state, "The")  # a claim after the last reference is still fine


def test_a_clause_of_a_sentence_already_quoted_is_not_offered_again():
    spans = [Span(1, "A small k makes one rank decisive; a large k treats all ranks alike."),
             Span(1, "a large k treats all ranks alike."), Span(2, "The constant is k = 60 in the paper.")]
    guard = QuoteGuard(spans, [1, 2])
    state = guard.state(spans[0].text + " [1]\n")
    assert not guard.allows(state, "> a") and guard.allows(state, "> The")


def test_a_claim_is_one_bounded_line_with_guarded_markers():
    guard = QuoteGuard(SPANS, [1, 2], claim_chars=20)
    after_ref = SPANS[0].text + " [1]\n"
    open_state = guard.state(after_ref)
    assert guard.allows(open_state, "It") and guard.allows(open_state, " It") and guard.settled(open_state)
    assert not guard.allows(open_state, "\n") and not guard.allows(open_state, "\n\n")
    claim = guard.state(after_ref + "It")
    assert guard.allows(claim, " grows [1]") and not guard.allows(claim, " grows [7]")
    assert guard.allows(claim, ".\n") and not guard.allows(claim, ".\n\n")
    long = guard.state(after_ref + "It grows and grows and grows")
    assert guard.allows(long, "\n") and not guard.allows(long, " more")
    after_claim = guard.state(after_ref + "It grows.\n")
    assert after_claim == ("open", "claim", (REF_OPEN + SPANS[0].text + " [1]\n",))
    assert not guard.allows(after_claim, "Another claim")  # after a claim: another reference, or the end


def test_a_span_the_vocabulary_cannot_spell_ends_there_and_is_still_cited():
    spans = [Span(1, "Set the café option to on.")]
    pieces = ["", *sorted(set("Set the caf option to n.[]1\n ")), " [1]\n"]  # no "é"
    vocab = Vocabulary(pieces)
    text = _decode(QuoteGuard(spans, [1]), vocab, seed=0)
    units, partial = parse_quote_units(text)
    assert [u.reference for u in units] == ["Set the caf"] and units[0].n == 1 and not partial
    assert units[0].reference in spans[0].text  # still verbatim, only shorter


def test_pieces_are_matched_on_text_not_on_the_excerpts_token_ids():
    guard = QuoteGuard(SPANS, [1, 2])
    start = guard.state("")
    vocab = _vocab(extra=["The kv", "The kv cache stores the", " kv cache"])
    allowed = {vocab.pieces[i] for i in guard.only(start, vocab)}
    assert {"T", "The", "The kv", "The kv cache stores the", "k"} <= allowed
    assert " kv" not in allowed and "It" not in allowed and "" not in allowed  # no end inside a reference
    mid = guard.state("The kv cache stores the keys and values of earlier tokens")
    assert {vocab.pieces[i] for i in guard.only(mid, vocab)} == {"."}
    end = guard.state("The kv cache stores the keys and values of earlier tokens.")
    assert {vocab.pieces[i] for i in guard.only(end, vocab)} == {" [1", " "}


def test_spans_are_verbatim_bounded_and_never_half_a_row_or_code_span():
    excerpts = {
        1: "Run `llama-server --port 8080, --host 0.0.0.0` first, then open the page, and wait for the model, "
           "which loads, quickly.",
        2: "| option | default |\n|---|---|\n| n_ctx | 2048 tokens in the default model of smoldocs |",
        3: "Note: the café opens at nine; the bar opens later.",
        4: "One sentence only.",
    }
    quotes = [
        Quote(1, normalized(excerpts[1]), 0.9),
        Quote(2, "| n_ctx | 2048 tokens in the default model of smoldocs |", 0.8),
        Quote(3, excerpts[3], 0.7),
        Quote(4, excerpts[4], 0.6),
        Quote(4, "A sentence that is not in the excerpt.", 0.5),
    ]
    spans = quote_spans(quotes, excerpts, words, max_tokens=10)
    texts = {s.text: s.n for s in spans}
    for s in spans:
        assert s.text in normalized(excerpts[s.n]) and words(s.text) <= 10
        assert s.text.count("`") % 2 == 0  # never half a code span
    assert texts.get("Run `llama-server --port 8080, --host 0.0.0.0` first") == 1  # cut at a clause, outside code
    assert not any(n == 2 for n in texts.values())  # the row is over 10 words: whole or nothing
    assert texts.get("the café opens at nine; the bar opens later.") == 3  # a span may start after a colon
    assert texts.get("the bar opens later.") == 3
    assert texts.get("One sentence only.") == 4
    assert "A sentence that is not in the excerpt." not in texts
    assert quote_spans([Quote(2, "| n_ctx | 2048 tokens in the default model of smoldocs |", 0.8)], excerpts, words, 60)


def test_parse_units_drops_a_reference_cut_off_midway():
    text = "First span here [1]\nA claim.\n> Second span is cut"
    units, partial = parse_quote_units(text)
    assert units == [QuoteUnit("First span here", 1, "A claim.")]
    assert partial == "Second span is cut"
    assert parse_quote_units("") == ([], "")  # a model that ends at once: nothing, and no partial reference


def test_a_guard_needs_something_to_copy():
    with pytest.raises(ValueError, match="at least one span"):
        QuoteGuard([], [1])


def test_a_list_item_is_copied_without_its_bullet():
    from rag.verification.claims import split_claims

    excerpt = "Steps:\n\n- Build the index with `smoldocs index`.\n- Ask a question with `smoldocs ask`."
    items = [c.text for c in split_claims(excerpt, keep_markers=True) if c.kind == "item"]
    spans = quote_spans([Quote(1, t, 0.9) for t in items], {1: excerpt}, words)
    assert [s.text for s in spans] == ["Build the index with `smoldocs index`.", "Ask a question with `smoldocs ask`."]
