"""Any agent's answer checked against the excerpts it was shown, when those may have changed since.

rag.verification.verifier decides every verdict; this adds what a long-lived reader (`smoldocs mcp`, `smoldocs check`) needs: an
excerpt whose chunk was edited after it was shown is unresolved, not judged against text the agent never saw.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Collection, Mapping

from models.protocols import Embedder
from rag.citations import CitationLike, Lookup
from rag.verification.verdicts import CitationVerdict, Verdict, Verification
from rag.verification.verifier import verify_answer

MAX_ANSWER_CHARS = 20_000  # an agent's answer, not a book: longer input is refused with one line


def check_citations(
    answer: str,
    shown: Mapping[int, CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    changed: Collection[int] = (),
) -> Verification:
    """Every verdict of `answer` against `shown` (number -> citation); numbers in `changed` are unresolved."""
    stale = {shown[n].chunk_id for n in changed if n in shown}
    current = (lambda chunk_id: None if chunk_id in stale else lookup(chunk_id)) if stale else lookup
    verification = verify_answer(answer, shown, current, embedder)
    if not stale:
        return verification
    why = {n: f"[{n}] {shown[n].chunk_id}: the chunk changed in the docs after it was shown" for n in changed if n in shown}

    def explained(v: CitationVerdict) -> CitationVerdict:
        return replace(v, reason=why[v.n]) if v.n in why and v.verdict is Verdict.UNRESOLVED else v

    claims = tuple(
        replace(c, reason=next(why[n] for n in c.citations if n in why))
        if c.verdict is Verdict.UNRESOLVED and any(n in why for n in c.citations) else c
        for c in verification.claims
    )
    return replace(verification, citations=tuple(explained(c) for c in verification.citations), claims=claims)


def supported_share(verification: Verification) -> float | None:
    """Supported factual claims over all factual claims; None when the answer makes no factual claim."""
    claims = verification.claims
    return sum(c.verdict is Verdict.SUPPORTED for c in claims) / len(claims) if claims else None
