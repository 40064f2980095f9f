"""Binds rag's claim verifier and extractive fallback to the agent's verdict types."""

from __future__ import annotations

from agent.events import CitationVerdict, ClaimVerdict, weaker
from models.protocols import Embedder
from rag.extractive import extractive_answer
from rag.verify import verify_answer

def make_judge(embedder: Embedder | None):
    """(answer, shown, lookup) -> (verdict per cited number, verdict per claim)."""

    def judge(answer: str, shown, lookup):
        result = verify_answer(answer, shown, lookup, embedder)
        by_number: dict[int, CitationVerdict] = {}
        for c in result.citations:
            verdict = CitationVerdict(c.n, c.chunk_id, c.doc_id, c.uri, c.verdict, c.support, c.evidence)
            # A number cited by several claims shows its weakest support.
            by_number[c.n] = weaker(verdict, by_number[c.n]) if c.n in by_number else verdict
        claims = [ClaimVerdict(c.text, c.citations, c.verdict, c.support, c.evidence) for c in result.claims]
        return by_number, claims

    return judge


# A quote must score at least this against the question (0.6 x MiniLM cosine + 0.4 x word coverage). Measured
# on docs_corpus (every 4th answerable question and the 12 unanswerable ones): the best quote scored >= 0.456 for
# 90% of answerable questions and <= 0.424 for 75% of unanswerable ones. Below it, smoldocs abstains.
QUOTE_MIN_SCORE = 0.43


def make_fallback(embedder: Embedder | None, min_score: float = QUOTE_MIN_SCORE):
    """(question, shown, lookup) -> (quoted text, numbers), or None when no sentence is close enough."""

    def fallback(question: str, shown, lookup):
        text, numbers = extractive_answer(question, shown, lookup, embedder, min_score=min_score)
        return (text, numbers) if text else None

    return fallback
