"""Context packing and the citation ledger: budgets counted on the whole text, whole chunks, stable numbers."""

from __future__ import annotations

import datetime as dt
import math
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import WordTokenizer
from rag.citations import Citation
from rag.errors import BudgetError
from rag.excerpts.near_duplicates import jaccard, shingles
from rag.excerpts.packing import Ledger, PackedContext, Packer, block, lost_in_middle
from rag.types import Chunk, Hit

DOCS = Path(__file__).resolve().parent.parent / "docs_corpus"
BLOCK_HEAD = re.compile(r"^\[(\d+)\] (\S+)$", re.MULTILINE)


def hit(chunk_id: str, text: str, score: float = 1.0, uri: str | None = None) -> Hit:
    doc_id = chunk_id.split("#")[0]
    return Hit(Chunk(chunk_id=chunk_id, doc_id=doc_id, uri=uri or doc_id, text=text), score=score)


class JoinCostCounter:
    """Not additive: ceil(chars / 4) of the whole text, plus 3 per blank line, so pieces never sum to the whole."""

    name = "chars/4+joins"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / 4) + 3 * text.count("\n\n")


class SlowWordCounter(WordTokenizer):
    """Word counts that take a moment, so parallel packers interleave."""

    def count(self, text: str) -> int:
        time.sleep(0.0005)
        return super().count(text)


def expected_text(packed: PackedContext, citations: list[Citation]) -> str:
    number = {c.chunk_id: c.n for c in citations}
    return "\n".join(f"[{number[h.chunk_id]}] {h.uri}\n{h.text}\n" for h in packed.used)


WORKED_HITS = [
    hit("docs/a.md#0", "alpha beta gamma delta", 0.9),
    hit("docs/b.md#0", "one two three four five six seven eight", 0.8),
    hit("docs/c.md#0", "short chunk", 0.7),
]


def test_worked_example_exactly():
    packed, citations = Packer(WordTokenizer(), Ledger()).assemble("q", WORKED_HITS, 12)
    assert packed.text == "[1] docs/a.md\nalpha beta gamma delta\n\n[2] docs/c.md\nshort chunk\n"
    assert packed.tokens == 10
    assert packed.dropped == 1
    assert [o.reason for o in packed.omissions] == ["over_budget"]
    assert packed.omissions[0].chunk_id == "docs/b.md#0"
    assert packed.omissions[0].tokens == 16  # what the context would have counted with it
    assert [(c.n, c.chunk_id) for c in citations] == [(1, "docs/a.md#0"), (2, "docs/c.md#0")]
    assert [h.chunk_id for h in packed.used] == ["docs/a.md#0", "docs/c.md#0"]


def test_block_format():
    assert block(3, hit("docs/x.md#2", "body text")) == "[3] docs/x.md\nbody text\n"


def test_any_object_with_hit_attributes_is_a_hit():
    plain = SimpleNamespace(chunk_id="d.md#0", doc_id="d.md", uri="d.md", text="hello there", score=0.5)
    packed, citations = Packer(WordTokenizer(), Ledger()).assemble("q", [plain], 100)
    assert packed.text == "[1] d.md\nhello there\n"
    assert citations == [Citation(1, "d.md#0", "d.md", "d.md")]


def test_exactly_the_budget_fits():
    hits = WORKED_HITS
    whole = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 1000)[0]
    assert whole.tokens == 20
    exact = Packer(WordTokenizer(), Ledger()).assemble("q", hits, whole.tokens)[0]
    assert exact.text == whole.text and exact.dropped == 0
    short = Packer(WordTokenizer(), Ledger()).assemble("q", hits, whole.tokens - 1)[0]
    assert [o.chunk_id for o in short.omissions] == ["docs/c.md#0"]


def test_budget_counts_the_whole_text_not_the_pieces():
    counter = JoinCostCounter()
    hits = [hit(f"docs/{i}.md#0", f"word{i} " * 5) for i in range(3)]
    pieces = sum(counter.count(block(i + 1, h)) for i, h in enumerate(hits))
    whole = counter.count("\n".join(block(i + 1, h) for i, h in enumerate(hits)))
    assert whole > pieces  # the counter really is not additive
    packed, _ = Packer(counter, Ledger()).assemble("q", hits, pieces)
    assert packed.tokens <= pieces
    assert packed.tokens == counter.count(packed.text)
    assert len(packed.used) == 2


def test_a_later_short_chunk_fills_the_room_left():
    hits = [hit("docs/a.md#0", "a " * 5), hit("docs/big.md#0", "b " * 50), hit("docs/c.md#0", "c")]
    packed, citations = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 12)
    assert [c.chunk_id for c in citations] == ["docs/a.md#0", "docs/c.md#0"]


def test_budget_zero_gives_an_empty_context():
    ledger = Ledger()
    packed, citations = Packer(WordTokenizer(), ledger).assemble("q", WORKED_HITS, 0)
    assert (packed.text, packed.tokens, citations) == ("", 0, [])
    assert packed.dropped_by_reason() == {
        "duplicate_id": 0, "duplicate_text": 0, "near_duplicate": 0, "expired": 0, "over_budget": 3
    }
    assert ledger.citations() == []


def test_negative_budget_is_an_error():
    with pytest.raises(BudgetError, match="negative"):
        Packer(WordTokenizer(), Ledger()).assemble("q", WORKED_HITS, -1)


def test_unknown_order_is_an_error():
    with pytest.raises(ValueError, match="lost_in_middle"):
        Packer(WordTokenizer(), Ledger()).assemble("q", WORKED_HITS, 10, order="best")


def test_duplicate_chunk_id_is_left_out():
    hits = [hit("docs/a.md#0", "first text"), hit("docs/a.md#0", "first text again"), hit("docs/b.md#0", "b")]
    ledger = Ledger()
    packed, citations = Packer(WordTokenizer(), ledger).assemble("q", hits, 100)
    assert [(o.rank, o.reason) for o in packed.omissions] == [(2, "duplicate_id")]
    assert [(c.n, c.chunk_id) for c in citations] == [(1, "docs/a.md#0"), (2, "docs/b.md#0")]
    assert packed.text.count("docs/a.md") == 1


def test_duplicate_text_is_left_out_ignoring_case_and_whitespace():
    hits = [hit("docs/a.md#0", "Same  words\nhere"), hit("docs/b.md#3", "same words here "), hit("docs/c.md#0", "c")]
    packed, citations = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 100)
    assert [(o.chunk_id, o.reason) for o in packed.omissions] == [("docs/b.md#3", "duplicate_text")]
    assert [c.n for c in citations] == [1, 2]


class BrokenCounter:
    def __init__(self, fail_on_call: int) -> None:
        self.calls = 0
        self.fail_on_call = fail_on_call

    def count(self, text: str) -> int:
        self.calls += 1
        if self.calls >= self.fail_on_call:
            raise RuntimeError("tokenizer crashed")
        return len(text.split())


def test_counter_error_fails_the_assembly_and_records_nothing():
    ledger = Ledger()
    with pytest.raises(RuntimeError, match="tokenizer crashed"):
        Packer(BrokenCounter(fail_on_call=2), ledger).assemble("q", WORKED_HITS, 100)
    assert ledger.citations() == []


def test_counter_error_on_the_first_count_is_not_read_as_zero():
    with pytest.raises(RuntimeError):
        Packer(BrokenCounter(fail_on_call=1), Ledger()).assemble("q", WORKED_HITS, 100)


def test_counter_returning_no_number_fails():
    class NoneCounter:
        def count(self, text):
            return None

    with pytest.raises(TypeError, match="whole number"):
        Packer(NoneCounter(), Ledger()).assemble("q", WORKED_HITS, 100)


def test_lost_in_middle_puts_the_best_at_both_ends():
    assert lost_in_middle([1, 2, 3, 4, 5]) == [1, 3, 5, 4, 2]
    assert lost_in_middle([1, 2, 3, 4]) == [1, 3, 4, 2]


def test_lost_in_middle_reorders_blocks_without_renumbering():
    hits = [hit(f"docs/{i}.md#0", f"text {i}") for i in range(1, 6)]
    ledger = Ledger()
    packed, citations = Packer(WordTokenizer(), ledger).assemble("q", hits, 1000, order="lost_in_middle")
    assert [int(m.group(1)) for m in BLOCK_HEAD.finditer(packed.text)] == [1, 3, 5, 4, 2]
    assert [m.group(2) for m in BLOCK_HEAD.finditer(packed.text)] == [f"docs/{i}.md" for i in (1, 3, 5, 4, 2)]
    assert [(c.n, c.chunk_id) for c in ledger.citations()] == [(i, f"docs/{i}.md#0") for i in range(1, 6)]
    assert packed.tokens == WordTokenizer().count(packed.text)


def test_ledger_numbers_from_one_and_keeps_a_chunks_number_across_searches():
    ledger = Ledger()
    packer = Packer(WordTokenizer(), ledger)
    _, first = packer.assemble("q1", [hit("docs/a.md#0", "a"), hit("docs/b.md#0", "b")], 100)
    packed, second = packer.assemble("q2", [hit("docs/c.md#0", "c"), hit("docs/b.md#0", "b")], 100)
    assert [(c.n, c.chunk_id) for c in first] == [(1, "docs/a.md#0"), (2, "docs/b.md#0")]
    assert [(c.n, c.chunk_id) for c in second] == [(3, "docs/c.md#0"), (2, "docs/b.md#0")]
    assert packed.text == "[3] docs/c.md\nc\n\n[2] docs/b.md\nb\n"
    assert [c.n for c in ledger.citations()] == [1, 2, 3]


def test_ledger_peek_records_nothing_and_cite_is_idempotent():
    ledger = Ledger()
    a, b = hit("docs/a.md#0", "a"), hit("docs/b.md#0", "b")
    assert ledger.peek(a) == 1 and ledger.peek(b) == 1
    assert ledger.citations() == []
    assert ledger.cite(a) == Citation(1, "docs/a.md#0", "docs/a.md", "docs/a.md")
    assert ledger.cite(a).n == 1
    assert ledger.peek(a) == 1 and ledger.peek(b) == 2
    assert ledger.cite(b).n == 2


def test_over_budget_hits_take_no_number():
    ledger = Ledger()
    packer = Packer(WordTokenizer(), ledger)
    packer.assemble("q", [hit("docs/big.md#0", "w " * 100)], 10)
    _, citations = packer.assemble("q", [hit("docs/a.md#0", "a")], 10)
    assert [c.n for c in citations] == [1]


def test_parallel_searches_on_one_ledger_agree_with_what_they_print():
    pool = [hit(f"docs/d{i}.md#0", f"chunk {i} " + "w " * (i % 4)) for i in range(14)]
    ledger = Ledger()
    packer = Packer(SlowWordCounter(), ledger)
    start = threading.Barrier(8)
    results: list = [None] * 8

    def search(i: int) -> None:
        hits = [pool[(i * 3 + j) % len(pool)] for j in range(6)]
        start.wait()
        results[i] = packer.assemble(f"q{i}", hits, 40)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    recorded = ledger.citations()
    assert [c.n for c in recorded] == list(range(1, len(recorded) + 1))
    assert len({c.chunk_id for c in recorded}) == len(recorded)
    number_of = {c.uri: c.n for c in recorded}
    for packed, citations in results:
        shown = [(m.group(2), int(m.group(1))) for m in BLOCK_HEAD.finditer(packed.text)]
        assert shown, "every search packs something"
        assert all(number_of[uri] == n for uri, n in shown)
        assert [(c.uri, c.n) for c in citations] == shown


WORDS = st.sampled_from(["kv", "cache", "token", "Budget", "chunk", "the", "a", "x" * 9, "llama.cpp"])
TEXTS = st.lists(WORDS, min_size=1, max_size=12).map(" ".join)


@st.composite
def hit_lists(draw):
    texts = draw(st.lists(TEXTS, max_size=8))
    # Few doc and chunk numbers, so the same id sometimes comes back with another text.
    ids = draw(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), min_size=len(texts), max_size=len(texts)))
    return [hit(f"docs/d{d}.md#{n}", text) for (d, n), text in zip(ids, texts)]


@settings(max_examples=150, deadline=None)
@given(hits=hit_lists(), budget=st.integers(0, 60), order=st.sampled_from(["rank", "lost_in_middle"]))
def test_budget_never_exceeded_and_chunks_never_cut(hits, budget, order):
    counter = JoinCostCounter()
    packed, citations = Packer(counter, Ledger()).assemble("q", hits, budget, order=order)
    assert packed.tokens <= budget
    assert packed.tokens == counter.count(packed.text)
    assert all(any(u is h for h in hits) for u in packed.used)
    if order == "rank":
        assert packed.text == expected_text(packed, citations)
    else:
        number = {c.chunk_id: c.n for c in citations}
        blocks = [f"[{number[h.chunk_id]}] {h.uri}\n{h.text}\n" for h in packed.used]
        assert packed.text == "\n".join(lost_in_middle(blocks))
    assert len(packed.used) + packed.dropped == len(hits)
    assert [c.n for c in citations] == list(range(1, len(citations) + 1))


@settings(max_examples=150, deadline=None)
@given(hits=hit_lists(), budget=st.integers(0, 60))
def test_every_over_budget_hit_truly_did_not_fit(hits, budget):
    counter = JoinCostCounter()
    packed, citations = Packer(counter, Ledger()).assemble("q", hits, budget)
    kept_rank = {id(h): r for r, h in enumerate(hits, start=1) if any(u is h for u in packed.used)}
    for omission in packed.omissions:
        if omission.reason != "over_budget":
            continue
        before = [c for c, h in zip(citations, packed.used) if kept_rank[id(h)] < omission.rank]
        blocks = [block(c.n, h) for c, h in zip(before, packed.used)]
        candidate = "\n".join([*blocks, block(len(before) + 1, hits[omission.rank - 1])])
        assert counter.count(candidate) > budget


def corpus_paragraphs(limit: int = 40) -> list[Hit]:
    hits = []
    for path in sorted(DOCS.rglob("*.md")):
        doc_id = path.relative_to(DOCS).as_posix()
        for n, para in enumerate(p for p in path.read_text().split("\n\n") if p.strip()):
            hits.append(hit(f"{doc_id}#{n}", para.strip()))
    return hits[:limit]


@pytest.mark.real
def test_real_tokenizer_budget_is_never_exceeded(real_tokenizer):
    hits = corpus_paragraphs()
    assert len(hits) >= 10
    for budget in (0, 1, 17, 64, 128, 255, 512):
        packed, citations = Packer(real_tokenizer, Ledger()).assemble("q", hits, budget)
        assert packed.tokens <= budget
        assert packed.tokens == real_tokenizer.count(packed.text)
        assert packed.text == expected_text(packed, citations)
    exact = Packer(real_tokenizer, Ledger()).assemble("q", hits[:5], 10_000)[0]
    again = Packer(real_tokenizer, Ledger()).assemble("q", hits[:5], exact.tokens)[0]
    assert again.text == exact.text


# -- issue 19: outdated headers, expiry, near-duplicates ------------------------------------------------------

PARAGRAPH = (
    "The prompt builder removes history one question and answer pair at a time and stops as soon as the "
    "rendered prompt fits the window, so nothing is discarded that could have been kept in the context."
)


def test_an_outdated_hit_says_so_in_its_header():
    old = replace(hit("archive/a.md#0", "old words"), outdated=True)
    packed, _ = Packer(WordTokenizer(), Ledger()).assemble("q", [hit("docs/b.md#0", "new words"), old], 100)
    assert packed.text == "[1] docs/b.md\nnew words\n\n[2] archive/a.md [outdated]\nold words\n"


def test_an_expired_hit_is_left_out_with_reason_expired():
    gone = replace(hit("docs/a.md#0", "stale words"), expires="2024-05-01")
    fresh = hit("docs/b.md#0", "fresh words")
    packer = Packer(WordTokenizer(), Ledger())
    packed, citations = packer.assemble("q", [gone, fresh], 100, today=dt.date(2024, 5, 2))
    assert [c.chunk_id for c in citations] == ["docs/b.md#0"]
    assert [(o.chunk_id, o.reason, o.why) for o in packed.omissions] == [("docs/a.md#0", "expired", "expired")]
    still, _ = Packer(WordTokenizer(), Ledger()).assemble("q", [gone], 100, today=dt.date(2024, 5, 1))
    assert [h.chunk_id for h in still.used] == ["docs/a.md#0"]  # valid through the day it names


def test_a_near_duplicate_collapses_into_the_higher_ranked_hit():
    twin = PARAGRAPH.replace("context.", "context window.")  # one word more: 33 of 34 shingles shared
    assert twin != PARAGRAPH
    hits = [hit("docs/a.md#0", PARAGRAPH), hit("docs/c.md#0", "something else entirely"), hit("docs/b.md#4", twin)]
    packed, citations = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 1000, jaccard_threshold=0.85)
    assert [c.chunk_id for c in citations] == ["docs/a.md#0", "docs/c.md#0"]
    (o,) = packed.omissions
    assert (o.rank, o.reason, o.duplicate_of, o.why) == (3, "near_duplicate", 1, "near-duplicate of [1]")
    assert packed.dropped_as_duplicate == 1 and packed.dropped_for_budget == 0
    kept, _ = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 1000)  # off unless asked for
    assert len(kept.used) == 3


def test_near_duplicates_that_differ_in_numbers_or_standing_are_both_kept():
    numbers = PARAGRAPH + " The window is 2048 tokens."
    other = PARAGRAPH + " The window is 512 tokens."
    outdated = replace(hit("archive/a.md#0", PARAGRAPH + " Old.", 0.5), outdated=True)
    hits = [hit("docs/a.md#0", numbers), hit("docs/b.md#0", other), hit("docs/c.md#0", PARAGRAPH), outdated]
    packed, _ = Packer(WordTokenizer(), Ledger()).assemble("q", hits, 1000, jaccard_threshold=0.5)
    assert [h.chunk_id for h in packed.used] == ["docs/a.md#0", "docs/b.md#0", "docs/c.md#0", "archive/a.md#0"]


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.01, True, "0.9"])
def test_a_jaccard_threshold_out_of_range_is_refused(bad):
    with pytest.raises(ValueError, match="Jaccard threshold"):
        Packer(WordTokenizer(), Ledger()).assemble("q", [hit("docs/a.md#0", "x")], 10, jaccard_threshold=bad)


def test_shingles_and_jaccard():
    assert shingles("a b c") == frozenset({("a", "b", "c")})
    assert len(shingles("one two three four five six")) == 2
    assert jaccard(shingles("A b, c d e."), shingles("a B c d e")) == 1.0
    assert jaccard(frozenset(), frozenset()) == 1.0
    assert jaccard(shingles("a b c d e f"), shingles("x y z w v u")) == 0.0


@settings(max_examples=150, deadline=None)
@given(hits=hit_lists(), budget=st.integers(0, 60), threshold=st.sampled_from([None, 0.3, 0.85, 1.0]),
       flags=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=8, max_size=8))
def test_budget_never_exceeded_with_duplicates_outdated_and_expired(hits, budget, threshold, flags):
    hits = [replace(h, outdated=o, expires="2000-01-01" if e else None) for h, (o, e) in zip(hits, flags)]
    counter = JoinCostCounter()
    packed, citations = Packer(counter, Ledger()).assemble("q", hits, budget, jaccard_threshold=threshold)
    assert packed.tokens <= budget and packed.tokens == counter.count(packed.text)
    assert len(packed.used) + packed.dropped == len(hits)
    assert not any(h.expires for h in packed.used)
    assert packed.text == "\n".join(block(c.n, h) for c, h in zip(citations, packed.used))
    for o in packed.omissions:
        if o.reason == "near_duplicate":
            assert o.duplicate_of in {c.n for c in citations}


@pytest.mark.real
def test_real_tokenizer_near_duplicates_collapse_and_the_budget_holds(real_tokenizer):
    hits = [h for h in corpus_paragraphs() if len(h.text.split()) >= 40][:6]
    assert len(hits) >= 3
    twins = [replace(h, chunk=replace(h.chunk, chunk_id=h.chunk_id + "0", text=h.text + " (copy)")) for h in hits[:2]]
    packed, citations = Packer(real_tokenizer, Ledger()).assemble("q", [*hits, *twins], 2000, jaccard_threshold=0.85)
    assert [(o.chunk_id, o.why) for o in packed.omissions if o.reason == "near_duplicate"] == [
        (twins[0].chunk_id, "near-duplicate of [1]"), (twins[1].chunk_id, "near-duplicate of [2]")
    ]
    assert packed.tokens <= 2000 and packed.tokens == real_tokenizer.count(packed.text)
