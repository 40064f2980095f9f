"""The quote scorer's measurement: what counts as an evidence hit, and how features become a score."""

from __future__ import annotations

import numpy as np
import pytest

from rag.citations import Citation
from rag.answering.extractive import best_quotes, scores_of
from rag.evaluation import evidence_sentence, holds_evidence
from rag.answering.quote_features import FEATURES, candidates, document_words, feature_matrix
from rag.types import Chunk


def test_an_evidence_hit_is_containment_a_sentence_inside_the_evidence_or_most_of_its_words():
    assert evidence_sentence("After normalisation, cosine  similarity equals the dot product, so:", "Cosine similarity equals the dot product")
    assert evidence_sentence("The docs live in five folders.", "The docs live in five folders. Each has a README.")
    assert not evidence_sentence("Five folders.", "The docs live in five folders. Each has a README.")  # under 4 words
    assert evidence_sentence("one token is about four characters of text", "four characters of English text")  # 4 of 5 words
    assert not evidence_sentence("one token is about four characters", "four characters of English text")  # 2 of 5
    assert not evidence_sentence("anything", None)


def test_evidence_held_across_a_code_fence_is_held_as_the_page_shows_it():
    chunk = "To turn it off, use this command:\n\n```vim\n\t:set nowrapscan\n```\n\nSearches then stop at the end."
    assert holds_evidence(chunk, "To turn it off, use this command: :set nowrapscan")
    assert holds_evidence(chunk, "use this command: ```vim :set nowrapscan")  # as written, fence and all
    assert not holds_evidence(chunk, "use this command: :set wrapscan")
    assert not holds_evidence("Write `:set nowrapscan` in a line: ```", "line: :set nowrapscan")


def test_scores_are_the_weighted_features_renormalised_without_an_embedder():
    rows = np.array([[1.0, 0.5, 1.0, 0.0]], dtype=np.float32)
    weights = dict(zip(FEATURES, (0.4, 0.2, 0.2, 0.2)))
    assert scores_of(rows, True, weights)[0] == pytest.approx(0.4 + 0.1 + 0.2)
    assert scores_of(rows, False, weights)[0] == pytest.approx((0.4 + 0.2) / 0.8)
    assert scores_of(rows, True, weights, only=("coverage", "cosine"))[0] == pytest.approx(0.5)


CODE = Chunk("docs/e.md#1", "docs/e.md", "docs/e.md",
             "After normalisation, cosine similarity equals the dot product, so scoring is one product:\n\n"
             "```python\nscores = matrix @ query\n```\n", ("Sentence embeddings", "Normalisation"))
OTHER = Chunk("docs/f.md#1", "docs/f.md", "docs/f.md", "Cosine similarity compares directions of two vectors.")
SHOWN = {1: Citation(1, CODE.chunk_id, CODE.doc_id, CODE.uri), 2: Citation(2, OTHER.chunk_id, OTHER.doc_id, OTHER.uri)}
LOOKUP = {c.chunk_id: c for c in (CODE, OTHER)}.get


def test_a_sentence_introducing_a_code_block_is_quotable_with_its_heading_as_context():
    found = candidates(SHOWN, LOOKUP)
    assert [(c.n, c.rank, c.sentence) for c in found] == [
        (1, 1, "After normalisation, cosine similarity equals the dot product, so scoring is one product:"),
        (2, 2, "Cosine similarity compares directions of two vectors."),
    ]
    assert found[0].in_context.startswith("Sentence embeddings > Normalisation: After normalisation")
    rows = feature_matrix("How many products does cosine similarity take after normalisation?", found, None)
    # "how many" wants a number: neither sentence has a digit; excerpt 1 gets the full rank prior, excerpt 2 half.
    assert rows[:, FEATURES.index("rank")].tolist() == [1.0, 0.5]
    assert rows[:, FEATURES.index("number")].tolist() == [0.0, 0.0]
    quotes = best_quotes("What does cosine similarity equal after normalisation?", SHOWN, LOOKUP, None)
    assert quotes[0].n == 1 and quotes[0].sentence.endswith("one product:")


XZ = Chunk("man1/xz.1#3", "man1/xz.1", "xz(1)",
           "xz is a general-purpose data compression tool with command line syntax similar to gzip.\n\n"
           "-e, --extreme\nUse a slower variant of the selected compression preset level to get a better ratio.",
           ("OPTIONS",))


def test_a_sentence_counts_its_document_name_as_context_so_naming_the_tool_favours_none():
    """"what does xz --extreme do": the option's own line never says xz; the page's general sentence does. The
    file name is every sentence's context, as the heading path is, so "xz" covers both alike."""
    found = candidates({1: Citation(1, XZ.chunk_id, XZ.doc_id, XZ.uri)}, {XZ.chunk_id: XZ}.get)
    assert [c.document for c in found] == ["xz", "xz"]
    general, option = feature_matrix("what does xz --extreme do?", found, None)[:, FEATURES.index("coverage")]
    assert (general, option) == (0.5, 1.0)  # without the file name they tied at 0.5: "xz" against "extreme"
    assert document_words("man/man1/dpkg-query.1") == "dpkg query" and document_words("mod/mod_rewrite.html") == "mod rewrite"
