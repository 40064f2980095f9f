"""Check every claim of an answer against the excerpts the model was shown in this run, and only those.

This is the one place a verdict is decided: made up (no excerpt had the number), unresolved (the chunk is not in
the index as shown), uncited, or supported / weak / unsupported by the cited text (rag.verification.support judges the text).
"""

from __future__ import annotations

from typing import Mapping

from models.protocols import Embedder
from rag import tuned
from rag.citations import CitationLike, Lookup, chunk_of, resolve
from rag.verification.claims import Claim, factual_claims
from rag.verification.support import Params, Support, gather, judge
from rag.types import Chunk
from rag.verification.verdicts import CitationVerdict, ClaimVerdict, Verdict, Verification, per_number

# Fitted on the train split of both hand-written claim sets (rag.tuned.VERIFIER_FIT); `python -m
# benchmarks.fitting.calibrate report` prints how they do on the held-back packages, the reserved passages and the
# rule-made regression set (tests/test_calibration.py checks them).
DENSE = Params(**tuned.VERIFIER_DENSE)
LEXICAL = Params(**tuned.VERIFIER_LEXICAL)


class Verifier:
    """The Judge of an agent: `verify_answer` bound to an embedder (None: lexical overlap only)."""

    def __init__(self, embedder: Embedder | None, params: Params | None = None) -> None:
        self.embedder = embedder
        self.params = params

    def __call__(self, text: str, shown: Mapping[int, CitationLike], lookup: Lookup) -> Verification:
        return verify_answer(text, shown, lookup, self.embedder, self.params)


def verify_answer(
    answer: str,
    shown: Mapping[int, CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    params: Params | None = None,
) -> Verification:
    """Judge each factual claim of `answer` against the chunks behind the `[n]` it carries, among those `shown`."""
    params = params or (DENSE if embedder is not None else LEXICAL)
    claims = factual_claims(answer)
    used, _made_up = resolve(answer, shown)
    # Each shown number the answer cites: its chunk, or why it does not resolve. Nothing else is looked up.
    resolved: dict[int, Chunk | str] = {c.n: chunk_of(c, lookup) for c in used}

    # One batch: every (claim, shown chunk) pair that needs judging.
    pairs, keys = [], []
    for i, claim in enumerate(claims):
        for n in claim.citations:
            chunk = resolved.get(n)
            if isinstance(chunk, Chunk) and (i, n) not in keys:
                pairs.append((claim.text, chunk))
                keys.append((i, n))
    judged = dict(zip(keys, (judge(ev, params) for ev in gather(pairs, embedder, params))))

    citation_checks: list[CitationVerdict] = []
    claim_checks: list[ClaimVerdict] = []
    for i, claim in enumerate(claims):
        mine = [_check(n, shown, resolved, judged.get((i, n))) for n in claim.citations]
        citation_checks.extend(mine)
        claim_checks.append(_claim_check(claim, mine))
    return Verification(tuple(claim_checks), per_number(citation_checks), lexical_only=embedder is None)


def _check(n: int, shown: Mapping[int, CitationLike], resolved: Mapping[int, Chunk | str], support: Support | None) -> CitationVerdict:
    citation = shown.get(n)
    if citation is None:
        return CitationVerdict(n, None, None, None, Verdict.MADE_UP, reason=f"[{n}] was not among the excerpts shown")
    where = (citation.chunk_id, citation.doc_id, citation.uri)
    if support is None:
        reason = resolved.get(n)
        return CitationVerdict(n, *where, Verdict.UNRESOLVED, reason=reason if isinstance(reason, str) else "")
    return CitationVerdict(n, *where, Verdict(support.verdict), support.score, support.evidence, support.reason)


def _claim_check(claim: Claim, checks: list[CitationVerdict]) -> ClaimVerdict:
    span = (claim.start, claim.end)
    if not checks:
        return ClaimVerdict(claim.text, (), Verdict.UNCITED, reason="a factual claim with no citation", start=claim.start, end=claim.end)
    best = max(checks, key=lambda c: (c.verdict.strength, c.support or 0.0))
    return ClaimVerdict(claim.text, claim.citations, best.verdict, best.support, best.evidence, best.reason, *span)
