"""One answer checked against what was shown: a verdict for every `[n]` and for every factual claim."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Collection, Mapping

from models.protocols import Embedder
from rag.citations import parse_citations, problem
from rag.support import SUPPORTED
from rag.verify import MADE_UP, UNRESOLVED, VERDICTS, CitationCheck, CitationLike, ClaimCheck, Lookup, verify_answer

CITED = "cited"  # a marker outside every factual claim: shown and resolved, with nothing to judge it against
MAX_ANSWER_CHARS = 20_000  # an agent's answer, not a book: longer input is refused with one line


@dataclass(frozen=True)
class AnswerCheck:
    """Per-number verdicts (a number cited by several claims keeps its weakest) and per-claim verdicts."""

    citations: tuple[CitationCheck, ...]  # in order of first appearance
    claims: tuple[ClaimCheck, ...]
    embedder_id: str | None  # None: judged by lexical overlap only

    @property
    def made_up(self) -> tuple[int, ...]:
        return tuple(c.n for c in self.citations if c.verdict == MADE_UP)

    @property
    def unresolved(self) -> tuple[int, ...]:
        return tuple(c.n for c in self.citations if c.verdict == UNRESOLVED)

    def counts(self) -> dict[str, int]:
        """How many factual claims got each verdict."""
        return {v: sum(c.verdict == v for c in self.claims) for v in VERDICTS}

    @property
    def supported_share(self) -> float | None:
        """Supported factual claims over all factual claims; None when the answer makes no factual claim."""
        return sum(c.verdict == SUPPORTED for c in self.claims) / len(self.claims) if self.claims else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "citations": [
                {"n": c.n, "chunk_id": c.chunk_id, "doc_id": c.doc_id, "uri": c.uri, "verdict": c.verdict,
                 "support": _round(c.support), "evidence": c.evidence, "reason": c.reason}
                for c in self.citations
            ],
            "claims": [
                {"text": c.text, "citations": list(c.citations), "verdict": c.verdict, "support": _round(c.support),
                 "evidence": c.evidence, "reason": c.reason}
                for c in self.claims
            ],
            "counts": self.counts(),
            "made_up": list(self.made_up),
            "unresolved": list(self.unresolved),
            "supported_share": _round(self.supported_share),
            "judged_by": self.embedder_id or "lexical overlap",
        }  # fmt: skip

    def render(self) -> str:
        """A report for people: one line per cited number, then one per claim."""
        lines = [f"citations: {len(self.citations)}" + ("" if self.citations else " (the answer cites nothing)")]
        for c in self.citations:
            score = f" {c.support:.2f}" if c.support is not None else ""
            where = c.chunk_id or "-"
            lines.append(f"  [{c.n}] {c.verdict}{score}  {where}" + (f"  ({c.reason})" if c.reason else ""))
        tally = ", ".join(f"{n} {v}" for v, n in self.counts().items() if n)
        lines.append(f"claims: {len(self.claims)}" + (f" ({tally})" if tally else ""))
        for c in self.claims:
            marks = "".join(f"[{n}]" for n in c.citations)
            lines.append(f"  {c.verdict:<11} {_short(c.text)} {marks}".rstrip())
        share = self.supported_share
        lines.append("supported: " + ("no factual claims" if share is None else f"{share:.0%} of claims"))
        return "\n".join(lines)


def check_citations(
    answer: str,
    shown: Mapping[int, CitationLike],
    lookup: Lookup,
    embedder: Embedder | None,
    changed: Collection[int] = (),
) -> AnswerCheck:
    """Judge `answer` against the excerpts `shown` (number -> citation) and only those.

    `changed` names shown numbers whose chunk text changed in the docs after it was shown: they are unresolved.
    """
    get = lookup.chunk if hasattr(lookup, "chunk") else lookup
    stale = {shown[n].chunk_id for n in changed if n in shown}
    current = (lambda chunk_id: None if chunk_id in stale else get(chunk_id)) if stale else get
    verification = verify_answer(answer, shown, current, embedder)
    by_number: dict[int, CitationCheck] = {}
    for c in verification.citations:
        known = by_number.get(c.n)
        by_number[c.n] = c if known is None or _rank(c) > _rank(known) else known
    order = list(dict.fromkeys([*parse_citations(answer), *by_number]))
    checks = []
    for n in order:
        check = by_number.get(n) or _unjudged(n, shown, current)
        if n in changed and check.verdict == UNRESOLVED:
            check = replace(check, reason=f"[{n}] {check.chunk_id}: the chunk changed in the docs after it was shown")
        checks.append(check)
    return AnswerCheck(tuple(checks), verification.claims, verification.embedder_id)


def _rank(check: CitationCheck) -> int:
    # Higher is weaker: VERDICTS runs best first.
    return VERDICTS.index(check.verdict) if check.verdict in VERDICTS else 0


def _unjudged(n: int, shown: Mapping[int, CitationLike], lookup: Lookup) -> CitationCheck:
    citation = shown.get(n)
    if citation is None:
        return CitationCheck(n, None, None, None, MADE_UP, None, None, f"[{n}] was not among the excerpts shown", -1)
    where = (citation.chunk_id, citation.doc_id, citation.uri)
    why = problem(citation, lookup)
    if why is not None:
        return CitationCheck(n, *where, UNRESOLVED, None, None, why, -1)
    return CitationCheck(n, *where, CITED, None, None, "cited outside any factual claim: not judged", -1)


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."
