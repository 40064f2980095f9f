"""Chunk boundaries: headings of each markup, code fences, long paragraphs, the token bound, ids and lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes import WordTokenizer
from rag.ingest.blocks import parse_units
from rag.ingest.chunking import ChunkSettings, chunk_document, split_chunk_id
from rag.errors import BudgetError

WORDS = WordTokenizer()


def chunks_of(text: str, doc_id: str = "doc.md", budget: int = 200):
    return chunk_document(doc_id, text, WORDS, budget)


def test_markdown_atx_headings_start_chunks_and_build_the_heading_path():
    text = "# Guide\n\nIntro text.\n\n## Install\n\nRun pip.\n\n### Linux\n\nUse apt.\n\n## Use\n\nRun it.\n"
    chunks = chunks_of(text)
    assert [c.heading_path for c in chunks] == [
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "Linux"),
        ("Guide", "Use"),
    ]
    assert [c.text.splitlines()[0] for c in chunks] == ["# Guide", "## Install", "### Linux", "## Use"]


def test_setext_headings_are_headings_but_a_dash_line_after_a_list_is_not():
    text = "Title\n=====\n\nIntro.\n\nPart two\n--------\n\nBody.\n\n- item one\n- item two\n---\n\nAfter.\n"
    chunks = chunks_of(text)
    assert [c.heading_path for c in chunks] == [("Title",), ("Title", "Part two")]
    assert "- item one" in chunks[1].text and "After." in chunks[1].text


def test_asciidoc_and_rst_headings():
    adoc = "= Manual\n\n== Setup\n\nInstall it.\n\n=== Linux\n\nUse apt.\n"
    assert [c.heading_path for c in chunks_of(adoc, "m.adoc")] == [("Manual", "Setup"), ("Manual", "Setup", "Linux")]
    rst = "=====\nNotes\n=====\n\nIntro.\n\nSetup\n=====\n\nInstall it.\n\nLinux\n-----\n\nUse apt.\n"
    assert [c.heading_path for c in chunks_of(rst, "n.rst")] == [
        ("Notes",),
        ("Notes", "Setup"),
        ("Notes", "Setup", "Linux"),
    ]


def test_rst_titles_underlined_with_backticks_and_backtick_transitions_open_no_code_fence():
    # docutils' own docs underline their fourth level with backticks; rsyslog's put a "````" transition between
    # paragraphs. Read as Markdown fences, they made the rest of a page code (CHUNKER_VERSION 8 reads them as rst).
    rst = ("Body Elements\n=============\n\nIntro.\n\nQuoted Literal Blocks\n`````````````````````\n\n"
           "Quoted literal blocks are unindented.\n\n````\n\nTables\n``````\n\nTwo syntax variants delineate cells.\n")
    chunks = chunks_of(rst, "spec.rst")
    assert [c.heading_path for c in chunks] == [
        ("Body Elements",), ("Body Elements", "Quoted Literal Blocks"), ("Body Elements", "Tables")]
    assert [u.kind for u in parse_units(rst, "rst")] == ["heading", "para", "heading", "para", "heading", "para"]
    assert "```" not in chunks[2].text.replace("``````", "") and chunks[2].text.endswith("delineate cells.")
    fenced = "Intro.\n\n```python\nprint(1)\n```\n"  # a fence with a language still fences, as a Markdown habit
    assert [u.kind for u in parse_units(fenced, "rst")] == ["para", "fence"]


def test_a_heading_with_no_text_rides_with_the_next_section():
    chunks = chunks_of("# Title\n\n## First\n\nSome text.\n")
    assert len(chunks) == 1
    assert chunks[0].text.startswith("# Title\n\n## First")
    assert chunks[0].heading_path == ("Title", "First")
    assert (chunks[0].line_start, chunks[0].line_end) == (1, 5)


def test_hash_lines_inside_a_fence_are_not_headings():
    text = "# Real\n\n```bash\n# a shell comment\necho hi\n```\n"
    units = parse_units(text)
    assert [u.kind for u in units] == ["heading", "fence"]
    assert chunks_of(text)[0].heading_path == ("Real",)


def test_a_fence_that_fits_is_never_split_even_with_a_blank_line_inside():
    fence = "```python\ndef f():\n\n    return 1\n```"
    text = "# Code\n\nBefore the fence. " + "word " * 20 + "\n\n" + fence + "\n\nAfter.\n"
    for budget in (20, 30, 40, 60):
        holding = [c for c in chunks_of(text, budget=budget) if "def f():" in c.text]
        assert len(holding) == 1 and fence in holding[0].text, budget


def test_a_fence_over_budget_is_cut_at_lines_and_each_piece_is_refenced():
    body = "\n".join(f"line {i} of code" for i in range(30))
    chunks = chunks_of(f"# Big\n\n```text\n{body}\n```\n", budget=24)
    assert len(chunks) > 1
    for c in chunks:
        lines = c.text.splitlines()
        assert "```text" in lines and lines[-1] == "```"
        assert WORDS.count(c.text) <= 24
    kept = [line for c in chunks for line in c.text.splitlines() if line.startswith("line ")]
    assert kept == body.splitlines()


def test_a_long_paragraph_is_split_at_sentence_boundaries():
    sentences = [f"Sentence {i} has exactly six words." for i in range(40)]
    chunks = chunks_of("# Long\n\n" + " ".join(sentences) + "\n", budget=30)
    assert len(chunks) > 1
    for c in chunks:
        body = c.text.removeprefix("# Long\n\n")
        assert body.endswith("words."), body  # every cut fell after a full stop
        assert all(s in sentences for s in re.findall(r"Sentence \d+ has exactly six words\.", body))
    assert sum(len(re.findall("Sentence", c.text)) for c in chunks) == 40


def test_a_sentence_longer_than_the_budget_is_cut_at_words():
    chunks = chunks_of("# W\n\n" + " ".join(f"w{i}" for i in range(100)) + "\n", budget=20)
    assert all(WORDS.count(c.text) <= 20 for c in chunks)
    words = [w for c in chunks for w in c.text.split() if w.startswith("w")]
    assert words == [f"w{i}" for i in range(100)]


def test_line_ranges_point_at_the_chunk_text_in_the_file():
    text = "# A\n\nalpha one.\n\n## B\n\nbeta two.\ngamma three.\n\n## C\n\ndelta.\n"
    lines = text.split("\n")
    for c in chunks_of(text):
        assert "\n".join(lines[c.line_start - 1 : c.line_end]) == c.text


def test_chunk_ids_number_each_file_from_zero():
    chunks = chunks_of("# A\n\none\n\n# B\n\ntwo\n\n# C\n\nthree\n", doc_id="dir/page.md")
    assert [c.chunk_id for c in chunks] == ["dir/page.md#0", "dir/page.md#1", "dir/page.md#2"]
    assert all(c.uri == c.doc_id == "dir/page.md" for c in chunks)
    assert split_chunk_id("dir/page.md#2") == ("dir/page.md", 2)
    assert split_chunk_id("no-number#x") is None


def test_a_budget_below_the_minimum_is_refused():
    with pytest.raises(BudgetError):
        ChunkSettings(max_tokens=3)


def test_whitespace_only_text_has_no_chunks():
    assert chunks_of("\n\n   \n") == []


_word = st.text(alphabet="abcdefgh", min_size=1, max_size=8)
_sentence = st.lists(_word, min_size=1, max_size=30).map(lambda ws: " ".join(ws) + ".")
_paragraph = st.lists(_sentence, min_size=1, max_size=12).map(" ".join)
_heading = st.tuples(st.integers(1, 4), _word).map(lambda t: "#" * t[0] + " " + t[1])
_fence = st.lists(st.lists(_word, max_size=12).map(" ".join), min_size=0, max_size=25).map(
    lambda rows: "```\n" + "\n".join(rows) + "\n```"
)
_document = st.lists(st.one_of(_paragraph, _heading, _fence), min_size=1, max_size=15).map("\n\n".join)


@settings(max_examples=150, deadline=None)
@given(text=_document, budget=st.integers(16, 80))
def test_every_chunk_fits_the_budget_and_every_line_is_covered(text, budget):
    chunks = chunks_of(text, budget=budget)
    assert all(WORDS.count(c.text) <= budget for c in chunks)
    assert [c.chunk_id for c in chunks] == [f"doc.md#{i}" for i in range(len(chunks))]
    covered = set()
    for c in chunks:
        assert 1 <= c.line_start <= c.line_end
        covered.update(range(c.line_start, c.line_end + 1))
    content = {n for n, line in enumerate(text.split("\n"), start=1) if line.strip()}
    assert content <= covered
    words_in = [w for w in text.split() if not w.startswith("```")]
    words_out = [w for c in chunks for w in c.text.split() if not w.startswith("```")]
    assert words_out == words_in  # nothing lost, nothing repeated, order kept


@pytest.mark.real
def test_every_docs_corpus_chunk_fits_the_real_tokenizer_budget(real_tokenizer):
    from rag.ingest.corpus import default_docs_dir, load_corpus

    budget = ChunkSettings().max_tokens
    corpus = load_corpus(default_docs_dir())
    chunks = [c for d in corpus.documents for c in chunk_document(d.doc_id, d.text, real_tokenizer, budget)]
    assert len(chunks) > len(corpus.documents)
    over = [(c.chunk_id, real_tokenizer.count(c.text)) for c in chunks if real_tokenizer.count(c.text) > budget]
    assert not over
    fences = [c for c in chunks if c.text.count("```") % 2]
    assert not fences, [c.chunk_id for c in fences]  # no chunk holds half a fence
