"""Check every claim of an answer against the excerpts the model was shown in this run, and only those."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol

from models.protocols import Embedder
from rag.citations import problem
from rag.claims import Claim, factual_claims
from rag.support import SUPPORTED, UNSUPPORTED, WEAK, Params, Support, gather, judge
from rag.types import Chunk

MADE_UP, UNRESOLVED, UNCITED = "made_up", "unresolved", "uncited"
# Best first: a claim takes the best verdict among its citations.
VERDICTS: tuple[str, ...] = (SUPPORTED, WEAK, UNSUPPORTED, UNRESOLVED, MADE_UP, UNCITED)

# Fitted on the train split of tests/data/claims_calibration.jsonl by `python -m rag.calibrate fit`;
# `python -m rag.calibrate report` prints how they do on the held-back split (tests/test_calibration.py checks both).
DENSE = Params(w_cos=0.3, w_sentence=0.7, w_chunk=0.0, supported=0.737, weak=0.483)
LEXICAL = Params(w_cos=0.0, w_sentence=1.0, w_chunk=0.0, supported=0.691, weak=0.487)


class CitationLike(Protocol):
    n: int
    chunk_id: str
    doc_id: str
    uri: str


Lookup = Callable[[str], "Chunk | None"]


@dataclass(frozen=True)
class CitationCheck:
    """One `[n]` of one claim: what it points at and whether that text supports the claim."""

    n: int
    chunk_id: str | None
    doc_id: str | None
    uri: str | None
    verdict: str  # supported | weak | unsupported | made_up | unresolved
    support: float | None  # support score, when judged
    evidence: str | None  # best-matching sentence of the cited chunk, when judged
    reason: str
    claim: int  # index into Verification.claims


@dataclass(frozen=True)
class ClaimCheck:
    """One factual claim of the answer and the best verdict among its citations."""

    text: str
    citations: tuple[int, ...]
    verdict: str  # supported | weak | unsupported | made_up | unresolved | uncited
    support: float | None
    evidence: str | None
    reason: str
    start: int  # span in the answer
    end: int


@dataclass(frozen=True)
class Verification:
    claims: tuple[ClaimCheck, ...]
    citations: tuple[CitationCheck, ...]
    embedder_id: str | None  # None: judged by lexical overlap only

    @property
    def lexical_only(self) -> bool:
        return self.embedder_id is None

    @property
    def has_supported_claim(self) -> bool:
        return any(c.verdict == SUPPORTED for c in self.claims)

    def counts(self) -> dict[str, int]:
        """How many claims got each verdict."""
        tally = Counter(c.verdict for c in self.claims)
        return {v: tally[v] for v in VERDICTS}

    def made_up_numbers(self) -> tuple[int, ...]:
        return tuple(sorted({c.n for c in self.citations if c.verdict == MADE_UP}))


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
    resolved = _resolve(claims, shown, lookup)

    # One batch: every (claim, shown chunk) pair that needs judging.
    pairs, keys = [], []
    for i, claim in enumerate(claims):
        for n in claim.citations:
            chunk = resolved.get(n)
            if isinstance(chunk, Chunk) and (i, n) not in keys:
                pairs.append((claim.text, chunk))
                keys.append((i, n))
    judged = dict(zip(keys, (judge(ev, params) for ev in gather(pairs, embedder, params))))

    citation_checks: list[CitationCheck] = []
    claim_checks: list[ClaimCheck] = []
    for i, claim in enumerate(claims):
        mine = [_check(i, n, shown, resolved, judged.get((i, n))) for n in claim.citations]
        citation_checks.extend(mine)
        claim_checks.append(_claim_check(claim, mine))
    return Verification(tuple(claim_checks), tuple(citation_checks), None if embedder is None else embedder.model_id)


def _resolve(claims: list[Claim], shown: Mapping[int, CitationLike], lookup: Lookup) -> dict[int, Chunk | str]:
    """For each cited number that was shown: its chunk, or why it does not resolve. Nothing else is looked up."""
    get = lookup.chunk if hasattr(lookup, "chunk") else lookup
    resolved: dict[int, Chunk | str] = {}
    for n in dict.fromkeys(n for c in claims for n in c.citations):
        citation = shown.get(n)
        if citation is not None:
            resolved[n] = problem(citation, get) or get(citation.chunk_id)
    return resolved


def _check(
    i: int, n: int, shown: Mapping[int, CitationLike], resolved: Mapping[int, Chunk | str], support: Support | None
) -> CitationCheck:
    citation = shown.get(n)
    if citation is None:
        return CitationCheck(n, None, None, None, MADE_UP, None, None, f"[{n}] was not among the excerpts shown", i)
    where = (citation.chunk_id, citation.doc_id, citation.uri)
    if support is None:
        reason = resolved.get(n)
        return CitationCheck(n, *where, UNRESOLVED, None, None, reason if isinstance(reason, str) else "", i)
    return CitationCheck(n, *where, support.verdict, support.score, support.evidence, support.reason, i)


def _claim_check(claim: Claim, checks: list[CitationCheck]) -> ClaimCheck:
    span = (claim.start, claim.end)
    if not checks:
        return ClaimCheck(claim.text, (), UNCITED, None, None, "a factual claim with no citation", *span)
    best = min(checks, key=lambda c: (VERDICTS.index(c.verdict), -(c.support or 0.0)))
    return ClaimCheck(claim.text, claim.citations, best.verdict, best.support, best.evidence, best.reason, *span)
