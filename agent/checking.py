"""Every `[n]` in an answer gets a verdict: made up, unresolved, or judged against the cited text."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from agent.events import CitationVerdict, ClaimVerdict, weaker
from rag.citations import Citation, problem, resolve
from rag.types import Chunk

Lookup = Callable[[str], Chunk | None]


@dataclass
class CheckResult:
    citations: list[CitationVerdict] = field(default_factory=list)
    claims: list[ClaimVerdict] = field(default_factory=list)
    unknown: list[int] = field(default_factory=list)
    unresolved: list[int] = field(default_factory=list)


def check_answer(answer: str, shown: Mapping[int, Citation], lookup: Lookup, judge=None) -> CheckResult:
    """Verdicts for the markers in `answer`; only excerpts in `shown` (what the model saw) can support a claim.

    `judge`, when given, is a callable (answer, shown, lookup) -> (per-number verdicts, claims) that refines
    resolved citations into support levels.
    """
    used, unknown = resolve(answer, list(shown.values()))
    result = CheckResult(unknown=unknown)
    bad = {c.n for c in used if problem(c, lookup) is not None}
    result.unresolved = sorted(bad)
    judged: dict[int, CitationVerdict] = {}
    if judge is not None:
        judged, result.claims = judge(answer, shown, lookup)
    for c in used:
        if c.n in bad:
            verdict = CitationVerdict(c.n, c.chunk_id, c.doc_id, c.uri, "unresolved")
        else:
            verdict = judged.get(c.n) or CitationVerdict(c.n, c.chunk_id, c.doc_id, c.uri, "cited")
            if verdict.verdict in ("made_up", "unresolved"):  # the judge cannot overrule what we checked
                verdict = CitationVerdict(c.n, c.chunk_id, c.doc_id, c.uri, "cited", verdict.support, verdict.evidence)
        result.citations.append(verdict)
    for n in unknown:
        result.citations.append(CitationVerdict(n, None, None, None, "made_up"))
    return result


def shown_map(citations: Sequence[Citation], numbers: Sequence[int]) -> dict[int, Citation]:
    """The ledger's citations restricted to the numbers that reached the prompt."""
    wanted = set(numbers)
    return {c.n: c for c in citations if c.n in wanted}


def merge_checks(first: CheckResult, second: CheckResult) -> CheckResult:
    """The checks of two parts of one answer: a number cited in both keeps its weaker verdict."""
    by_n: dict[int, CitationVerdict] = {}
    for c in [*first.citations, *second.citations]:
        by_n[c.n] = weaker(c, by_n[c.n]) if c.n in by_n else c
    return CheckResult(
        citations=list(by_n.values()),
        claims=[*first.claims, *second.claims],
        unknown=sorted({*first.unknown, *second.unknown}),
        unresolved=sorted({*first.unresolved, *second.unresolved}),
    )
