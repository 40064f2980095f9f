"""The extractive fallback: quote the sentences of the shown excerpts that best answer the question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Protocol

import numpy as np

from models.protocols import Embedder
from rag import markers
from rag.citations import problem
from rag.claims import split_claims
from rag.claim_terms import terms
from rag.support import embed_cached
from rag.verdicts import CitationLike, Lookup

QUOTE_LABEL = "Quoted from the docs:"
W_COS = 0.6  # with an embedder: share of the score from cosine to the question; the rest is word overlap
MIN_SCORE = 0.2  # below this a sentence is not worth quoting
MAX_OVERLAP = 0.8  # a sentence sharing more of its words with one already chosen adds nothing


# A quote must score at least this against the question (0.6 x MiniLM cosine + 0.4 x word coverage) for smoldocs
# to answer with it. Measured on docs_corpus (every 4th answerable question and the 12 unanswerable ones): the
# best quote scored >= 0.456 for 90% of answerable questions and <= 0.424 for 75% of unanswerable ones.
QUOTE_MIN_SCORE = 0.43


@dataclass(frozen=True)
class Quote:
    n: int
    sentence: str
    score: float


@dataclass(frozen=True)
class QuotedAnswer:
    """A quote-only answer: the labelled `> sentence [n]` blocks, and the numbers they cite in order."""

    text: str
    numbers: tuple[int, ...]


class Quoter(Protocol):
    """The quotes of the shown excerpts that best answer `question`, or None when none comes close enough."""

    def __call__(self, question: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> QuotedAnswer | None: ...


class QuoteFallback:
    """The agent's Quoter: `extractive_answer` bound to an embedder (None: word overlap only) and a threshold."""

    def __init__(self, embedder: Embedder | None, min_score: float = QUOTE_MIN_SCORE) -> None:
        self.embedder = embedder
        self.min_score = min_score

    def __call__(self, question: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> QuotedAnswer | None:
        text, numbers = extractive_answer(question, shown, lookup, self.embedder, min_score=self.min_score)
        return QuotedAnswer(text, numbers) if text else None


def extractive_answer(
    question: str,
    shown_citations: Mapping[int, CitationLike] | Iterable[CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    max_sentences: int = 3,
    min_score: float = MIN_SCORE,
) -> tuple[str, tuple[int, ...]]:
    """A quote-only answer (label, then `> sentence [n]` blocks) and the citation numbers it uses, in order."""
    quotes = best_quotes(question, shown_citations, lookup, embedder, max_sentences, min_score)
    if not quotes:
        return "", ()
    body = "\n\n".join(f"> {q.sentence} [{q.n}]" for q in quotes)
    return f"{QUOTE_LABEL}\n\n{body}", tuple(dict.fromkeys(q.n for q in quotes))


def best_quotes(
    question: str,
    shown_citations: Mapping[int, CitationLike] | Iterable[CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    max_sentences: int = 3,
    min_score: float = MIN_SCORE,
) -> list[Quote]:
    """The sentences of the shown, resolvable excerpts closest to the question, best first, near-duplicates dropped."""
    citations = shown_citations.values() if isinstance(shown_citations, Mapping) else shown_citations
    candidates: list[tuple[int, str]] = []
    for citation in sorted(citations, key=lambda c: c.n):
        if problem(citation, lookup) is not None:
            continue  # never quote text the index no longer holds as shown
        chunk = lookup(citation.chunk_id)
        for claim in split_claims(chunk.text, keep_markers=True):
            # A doc sentence with a literal `[1]` in it would read as a citation once quoted.
            if claim.factual and claim.kind != "heading" and not markers.find(claim.text):
                candidates.append((citation.n, claim.text))
    if not candidates or max_sentences <= 0:
        return []
    scores = _scores(question, [s for _, s in candidates], embedder)
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i][0], i))
    chosen: list[Quote] = []
    for i in order:
        n, sentence = candidates[i]
        if scores[i] < min_score or len(chosen) >= max_sentences:
            break
        if any(_overlap(sentence, q.sentence) > MAX_OVERLAP for q in chosen):
            continue
        chosen.append(Quote(n, sentence, float(scores[i])))
    return chosen


def _scores(question: str, sentences: list[str], embedder: Embedder | None) -> np.ndarray:
    asked = terms(question).words
    coverage = np.array(
        [len(asked & terms(s).words) / len(asked) if asked else 0.0 for s in sentences], dtype=np.float32
    )
    if embedder is None:
        return coverage
    vectors = embed_cached([question, *sentences], embedder)  # the verifier has usually embedded many already
    cos = np.array([float(vectors[s] @ vectors[question]) for s in sentences], dtype=np.float32)
    return W_COS * cos + (1 - W_COS) * coverage


def _overlap(a: str, b: str) -> float:
    wa, wb = terms(a).words, terms(b).words
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else float(a == b)
