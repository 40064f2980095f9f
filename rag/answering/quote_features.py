"""What the quote scorer knows about each candidate sentence of the shown excerpts, as a row of numbers.

Chosen by 2-fold cross-validation inside the fit split (even-numbered docs_corpus questions, 74 answerable),
evidence in top 1 / top 3: cosine + coverage of the bare sentence (the old scorer) 26 / 44; coverage and cosine
under the heading path 32 / 49; + 1/excerpt rank 36 / 54; + a number for a "how many" question 37 / 54.
Tried and left out: sentence BM25 over the shown sentences (26 / 41 with cosine + coverage), the neighbouring
sentences in the embedded text (no gain), the heading's own cosine (no gain), a code cue for "which command"
questions (no gain), idf-weighted coverage from the index (38 / 53: within noise, and it needs index statistics).
No cross-encoder ships in a PyPI package for llama.cpp, so none was tried. `python -m rag.evaluation.quote_eval` reports the
chosen set against the old scorer on both splits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

import numpy as np

from models.protocols import Embedder
from rag import markers
from rag.citations import CitationLike, Lookup, problem
from rag.verification.claim_terms import terms
from rag.verification.claims import split_claims
from rag.verification.support import embed_cached

FEATURES = ("coverage", "cosine", "rank", "number")
# "how many", "how big", "what size": the answer is a number.
_WANTS_NUMBER = re.compile(
    r"\bhow (?:many|much|big|large|long|fast|often|small|far)\b|\bwhat (?:size|number|percentage|share|value)\b",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class Candidate:
    """One sentence of excerpt `n`, which was the `rank`-th shown excerpt (1 = first)."""

    n: int
    rank: int
    sentence: str
    heading: str = ""  # the chunk's heading path, "A > B"

    @property
    def in_context(self) -> str:
        """The sentence as it is embedded and matched: under its heading path."""
        return f"{self.heading}: {self.sentence}" if self.heading else self.sentence


def candidates(shown: Mapping[int, CitationLike] | Iterable[CitationLike], lookup: Lookup) -> list[Candidate]:
    """Every quotable sentence of the shown, resolvable excerpts, in excerpt order."""
    citations = shown.values() if isinstance(shown, Mapping) else shown
    out: list[Candidate] = []
    rank = 0
    for citation in sorted(citations, key=lambda c: c.n):
        if problem(citation, lookup) is not None:
            continue  # never quote text the index no longer holds as shown
        rank += 1
        chunk = lookup(citation.chunk_id)
        heading = " > ".join(chunk.heading_path)
        for claim in split_claims(chunk.text, keep_markers=True):
            # A sentence that ends with ":" introduces a code block or list, and often is the answer itself
            # ("... cosine similarity equals the dot product, so ...:"); a literal `[1]` would read as a citation.
            quotable = claim.factual or claim.text.rstrip().endswith(":")
            if quotable and claim.kind != "heading" and claim.text and not markers.find(claim.text):
                out.append(Candidate(citation.n, rank, claim.text, heading))
    return out


def feature_matrix(question: str, found: Sequence[Candidate], embedder: Embedder | None) -> np.ndarray:
    """One row per candidate, one column per name in FEATURES, each in [0, 1] (cosine: 0 without an embedder)."""
    out = np.zeros((len(found), len(FEATURES)), dtype=np.float32)
    if not found:
        return out
    asked = terms(question).words
    wants_number = bool(_WANTS_NUMBER.search(question))
    for i, c in enumerate(found):
        have = terms(f"{c.heading} {c.sentence}").words
        out[i, 0] = len(asked & have) / len(asked) if asked else 0.0
        out[i, 2] = 1.0 / c.rank
        out[i, 3] = float(wants_number and bool(_DIGIT.search(c.sentence)))
    if embedder is not None:
        texts = [c.in_context for c in found]
        vectors = embed_cached([question, *texts], embedder)
        out[:, 1] = [max(0.0, float(vectors[t] @ vectors[question])) for t in texts]
    return out
