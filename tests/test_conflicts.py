"""Numeric disagreement among shown excerpts: same subject and unit, different numbers, in different documents."""

from __future__ import annotations

from pathlib import Path

from rag.excerpts.conflicts import detect_conflicts, find_conflicts, statements
from rag.types import Chunk, Hit

DOCS = Path(__file__).resolve().parent.parent / "docs_corpus"


def hit(doc_id: str, text: str, heading: tuple[str, ...] = (), outdated: bool = False, n: int = 0) -> Hit:
    return Hit(Chunk(f"{doc_id}#{n}", doc_id, doc_id, text, heading_path=heading), 1.0, outdated=outdated)


def section(doc_id: str, heading: str) -> Hit:
    """One `## heading` section of a bundled doc, as an excerpt."""
    text = (DOCS / doc_id).read_text()
    start = text.index(f"## {heading}")
    end = text.find("\n## ", start + 1)
    return hit(doc_id, text[start : end if end > 0 else None], (heading,), outdated=doc_id.startswith("archive/"))


def test_the_bundled_archive_page_and_the_current_page_disagree_on_both_defaults():
    old = section("archive/context-defaults-2023.md", "Defaults used in 2023")
    new = section("docs/context-windows.md", "The course defaults")
    conflicts = detect_conflicts([(1, new), (2, old)])
    values = [sorted((s.n, s.written) for s in c.statements) for c in conflicts]
    assert [(1, "2048 tokens"), (2, "512 tokens")] in values
    assert [(1, "256 tokens"), (2, "128 tokens")] in values
    assert len(conflicts) == 2
    for c in conflicts:
        assert c.numbers == (1, 2) and c.outdated == (2,) and c.unit == "token"
    window = next(c for c in conflicts if "2048 tokens" in c.note())
    assert "context window" in window.subject
    assert window.note().endswith("2048 tokens [1]; 512 tokens [2] (outdated).")
    row = window.to_json()
    assert row["numbers"] == [1, 2] and row["outdated"] == [2] and row["note"] == window.note()


def test_agreeing_sources_are_not_a_conflict():
    a = hit("docs/a.md", "The default context window is 2048 tokens.")
    b = hit("docs/b.md", "Its default context window is 2,048 tokens, as set by the course.")
    assert detect_conflicts([(1, a), (2, b)]) == ()


def test_different_units_are_not_a_conflict():
    a = hit("docs/a.md", "The default context window is 512 tokens.")
    b = hit("docs/b.md", "The default context window needs 512 MB of memory.")
    c = hit("docs/c.md", "The default context window needs 96 MB of memory.")
    assert detect_conflicts([(1, a), (2, b)]) == ()
    only = detect_conflicts([(1, a), (2, b), (3, c)])
    assert [(x.unit, x.numbers) for x in only] == [("mb", (2, 3))]


def test_numbers_inside_code_are_not_statements():
    fenced = hit("docs/a.md", "The default context window:\n\n```python\nllm = Llama(n_ctx=512)  # 512 tokens\n```\n")
    inline = hit("docs/b.md", "Set the default context window with `n_ctx = 512 tokens` when loading.")
    prose = hit("docs/c.md", "The default context window is 2048 tokens.")
    assert statements(1, fenced) == [] and statements(2, inline) == []
    assert detect_conflicts([(1, fenced), (2, inline), (3, prose)]) == ()


def test_three_sources_that_disagree_make_one_conflict_listing_all():
    a = hit("docs/a.md", "The default context window is 2048 tokens.")
    b = hit("archive/b.md", "The default context window was 512 tokens.", outdated=True)
    c = hit("notes/c.md", "In the notes the default context window is 1024 tokens.")
    d = hit("docs/d.md", "The default context window is 2048 tokens, as the course sets it.")
    (conflict,) = detect_conflicts([(1, a), (2, b), (3, c), (4, d)])
    assert conflict.numbers == (1, 2, 3, 4) and conflict.outdated == (2,)
    assert conflict.note() == (
        "The sources disagree on default context window: 2048 tokens [1][4]; 512 tokens [2] (outdated); 1024 tokens [3]."
    )


def test_one_document_is_not_in_conflict_with_itself():
    a = hit("docs/a.md", "The default context window is 2048 tokens.", n=0)
    b = hit("docs/a.md", "An older default context window was 512 tokens.", n=1)
    assert detect_conflicts([(1, a), (2, b)]) == ()


def test_unrelated_numbers_in_the_same_unit_are_not_a_conflict():
    a = hit("docs/a.md", "The default context window is 2048 tokens.")
    b = hit("docs/b.md", "A typical answer reserve is 256 tokens.")
    c = hit("docs/c.md", "In 2023 the edition changed; the 2024 edition followed.")
    assert detect_conflicts([(1, a), (2, b), (3, c)]) == ()


def test_shared_heading_terms_and_one_key_word_are_enough():
    a = hit("docs/a.md", "It is 2048 tokens by default.", heading=("Context window defaults",))
    b = hit("docs/b.md", "It was 512 tokens by default.", heading=("Defaults of the context window",))
    (conflict,) = detect_conflicts([(1, a), (2, b)])
    assert conflict.numbers == (1, 2)


def test_a_failure_inside_detection_gives_no_annotation(caplog):
    broken = Hit(Chunk("docs/a.md#0", "docs/a.md", "docs/a.md", None), 1.0)  # text None: detection raises inside
    good = hit("docs/b.md", "The default context window is 2048 tokens.")
    assert find_conflicts([(1, broken), (2, good)]) == ()
    assert "conflict detection failed" in caplog.text


def test_one_shared_word_and_one_shared_heading_word_are_not_enough():
    # Seen in the bundled docs: two different token counts about prompts under headings sharing "rule".
    a = hit("docs/a.md", "A sum of parts that says 2,040 tokens can belong to a prompt that is over.", ("The one budget rule",))
    b = hit("docs/b.md", "Estimates are useless to decide whether the prompt fits the last 40 tokens.", ("Rule of thumb",))
    assert detect_conflicts([(1, a), (2, b)]) == ()
