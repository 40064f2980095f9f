"""Metrics over per-question records, computed without a judge model (citations, answers, what is shown as the
answer, sources, cost), and the gate a run is held to: invariants that must always hold, thresholds for CI."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from agent.eval.records import Record, ShownSentence
from rag.evaluation import holds_evidence, mean
from rag.text import alnum_runs
from rag.verification.verdicts import Verdict

CONFLICT_TAG = "conflict"  # questions.jsonl tag: the docs disagree about what the question asks


def ratio(part: int, whole: int) -> float | None:
    """part / whole, or None when there is nothing to divide (a rate of nothing is not 0 or 1)."""
    return part / whole if whole else None


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation between the closest ranks."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def evidence_overlap(answer: str, evidence: str | None) -> float | None:
    """Share of the evidence string's distinct words that the answer contains."""
    wanted = set(alnum_runs((evidence or "").lower()))
    if not wanted:
        return None
    return len(wanted & set(alnum_runs(answer.lower()))) / len(wanted)


def citation_metrics(records: Sequence[Record]) -> dict:
    """Resolution of every cited number, made-up rate, precision and recall against the gold chunks."""
    numbers = [(r, n) for r in records for n in cited_numbers(r)]
    found = [(r, r.cited(n)) for r, n in numbers]
    resolved = sum(1 for _, c in found if c is not None and c.resolved)
    flagged = sum(1 for _, c in found if c is not None and c.flagged)
    made_up = sum(1 for _, c in found if c is not None and c.verdict == Verdict.MADE_UP)
    everything = [c for r in records for c in r.citations]
    judged = [c for r in records if r.answerable for c in r.citations if c.resolved]
    answerable = [r for r in records if r.answerable]
    return {
        "cited": len(numbers),
        "resolved": resolved,
        "flagged": flagged,
        "unchecked": sum(1 for _, c in found if c is None),
        "flagged_or_resolved": ratio(resolved + flagged, len(numbers)),
        "made_up": made_up,
        "made_up_rate": ratio(made_up, len(numbers)),
        "answers_with_made_up": sum(1 for r in records if any(c.verdict == Verdict.MADE_UP for c in r.citations)),
        "falsely_passed": sum(1 for c in everything if c.falsely_passed),
        "precision": ratio(sum(c.gold for c in judged), len(judged)),
        "precision_n": len(judged),
        "recall": ratio(sum(cites_gold(r) for r in answerable), len(answerable)),
        "doc_recall": ratio(sum(cites_gold_doc(r) for r in answerable), len(answerable)),
        "recall_n": len(answerable),
        "verdicts": dict(Counter(c.verdict for c in everything).most_common()),
    }


def cited_numbers(record: Record) -> list[int]:
    """The numbers the eval parsed from the answer, then any other the checker reported."""
    return list(dict.fromkeys([*record.markers, *(c.n for c in record.citations)]))


def cites_gold(record: Record) -> bool:
    return any(c.resolved and c.gold for c in record.citations)


def cites_gold_doc(record: Record) -> bool:
    return any(c.resolved and c.doc_id in record.gold_docs for c in record.citations)


def answer_metrics(records: Sequence[Record]) -> dict:
    """Answered vs abstained, abstention on unanswerable questions, and how much of the evidence answers carry."""
    answerable = [r for r in records if r.answerable]
    unanswerable = [r for r in records if not r.answerable]
    answered = [r for r in answerable if r.status == "answered"]
    overlaps = [o for r in answered if (o := evidence_overlap(r.answer, r.evidence)) is not None]
    return {
        "status": dict(Counter(r.status for r in records).most_common()),
        "quoted": sum(r.quoted for r in records),
        "abstention_accuracy": ratio(sum(r.abstained for r in unanswerable), len(unanswerable)),
        "unanswerable": len(unanswerable),
        "false_abstention": ratio(sum(r.abstained for r in answerable), len(answerable)),
        "answerable": len(answerable),
        "evidence_overlap": mean(overlaps) if overlaps else None,
        "evidence_contained": ratio(sum(holds_evidence(r.answer, r.evidence) for r in answered), len(answered)),
        "evidence_n": len(answered),
        "gold_retrieved": ratio(sum(bool(set(r.retrieved) & set(r.gold_chunks)) for r in answerable), len(answerable)),
        "gold_shown": ratio(sum(bool(set(r.shown_chunks) & set(r.gold_chunks)) for r in answerable), len(answerable)),
    }


def source_metrics(records: Sequence[Record]) -> dict:
    """Conflict notes where the docs disagree (questions tagged conflict) and nowhere else; answers that cite
    only an outdated page although a current excerpt was shown (questions about the outdated page itself, such
    as "what did the 2023 edition use?", are left out: there the outdated page is the right source)."""
    tagged = [r for r in records if CONFLICT_TAG in r.tags]
    others = [r for r in records if CONFLICT_TAG not in r.tags]
    with_current = [
        r for r in records
        if r.status == "answered" and set(r.shown_chunks) - set(r.shown_outdated) and not asks_about_outdated(r)
    ]
    cite_outdated = [r for r in with_current if any(c.resolved and c.outdated for c in r.citations)]
    outdated_only = [r for r in cite_outdated if cites_outdated_only(r)]
    return {
        "conflict_questions": len(tagged),
        "conflict_noted": sum(bool(r.conflicts) for r in tagged),
        "conflict_note_rate": ratio(sum(bool(r.conflicts) for r in tagged), len(tagged)),
        "other_questions": len(others),
        "other_noted": sum(bool(r.conflicts) for r in others),
        "other_note_rate": ratio(sum(bool(r.conflicts) for r in others), len(others)),
        "outdated_shown": sum(bool(r.shown_outdated) for r in records),
        "answers_with_current_shown": len(with_current),
        "cite_outdated": len(cite_outdated),
        "cite_outdated_only": len(outdated_only),
        "outdated_only_rate": ratio(len(outdated_only), len(cite_outdated)),
    }


def asks_about_outdated(record: Record) -> bool:
    """The question's gold document is an outdated page (seen among its shown or cited excerpts)."""
    outdated_docs = {cid.rpartition("#")[0] for cid in record.shown_outdated}
    outdated_docs |= {c.doc_id for c in record.citations if c.outdated and c.doc_id is not None}
    return record.doc is not None and record.doc in outdated_docs


def cites_outdated_only(record: Record) -> bool:
    """Every resolved citation points into an outdated page, a current excerpt was shown beside it, and the
    question is not about the outdated page itself."""
    resolved = [c for c in record.citations if c.resolved]
    current_shown = bool(set(record.shown_chunks) - set(record.shown_outdated))
    if not current_shown or not resolved or asks_about_outdated(record):
        return False
    return all(c.outdated for c in resolved)


def overflows(record: Record) -> bool:
    """The prompt plus the answer did not fit the context window."""
    return record.n_ctx > 0 and record.prompt_tokens + record.completion_tokens > record.n_ctx


def cost_metrics(records: Sequence[Record]) -> dict:
    """Latency, time to first token, speed, prompt sizes and tool-call success."""
    latency = [r.latency for r in records]
    ttft = [r.time_to_first_token for r in records if r.time_to_first_token > 0]
    speed = [r.tokens_per_second for r in records if r.tokens_per_second > 0]
    prompts = [r.prompt_tokens for r in records if r.prompt_tokens > 0]
    steps = [s for r in records for s in r.tool_steps]
    return {
        "latency_p50": percentile(latency, 50),
        "latency_p95": percentile(latency, 95),
        "ttft_p50": percentile(ttft, 50),
        "ttft_p95": percentile(ttft, 95),
        "tokens_per_second_p50": percentile(speed, 50),
        "prompt_tokens_mean": mean(prompts) if prompts else None,
        "prompt_tokens_max": max(prompts, default=0),
        "n_ctx": max((r.n_ctx for r in records), default=0),
        "overflows": sum(overflows(r) for r in records),
        "tool_steps": len(steps),
        "tool_steps_ok": sum(s.succeeded for s in steps),
        "tool_call_success": ratio(sum(s.succeeded for s in steps), len(steps)),
        "agent_searches": sum(r.agent_searches for r in records),
    }


def problems(record: Record) -> list[str]:
    """What went wrong with one question, one short phrase each, worst first."""
    out = []
    if record.crashed:
        out.append(f"crashed: {record.error or record.status}")
    if overflows(record):
        out.append(f"context overflow ({record.prompt_tokens}+{record.completion_tokens} > {record.n_ctx})")
    for n in record.markers:
        c = record.cited(n)
        if c is None:
            out.append(f"[{n}] not checked")
        elif c.falsely_passed:
            out.append(f"[{n}] passed as {c.verdict} but does not resolve")
        elif c.flagged:
            out.append(f"[{n}] {c.verdict}")
    if record.answerable:
        if record.abstained:
            out.append("false abstention")
        elif record.status == "answered" and not cites_gold(record):
            out.append("no gold chunk cited")
        if not set(record.retrieved) & set(record.gold_chunks):
            out.append("gold chunk not retrieved")
    elif record.status == "answered":
        out.append("answered an unanswerable question")
    if CONFLICT_TAG in record.tags and not record.conflicts:
        out.append("no conflict note")
    if record.status == "answered" and cites_outdated_only(record):
        out.append("cites only the outdated page although a current one was shown")
    return out


# What is shown as the answer: the metrics of #16 over the sentences records.split_answer finds.
#
# A shown sentence is a factual sentence of the displayed answer that the verifier judged (quotes included).
# Text the answer keeps apart as an unverified draft is passed separately and never counts as shown.
#
# - displayed precision: supported shown sentences / shown sentences, pooled over the run;
# - evidence hit: an answerable question whose evidence string (case and whitespace aside) is in the shown
#   sentences or in the sentence of a cited chunk that one of them was judged against;
# - model share: shown sentences the model decoded (copied or written) / shown sentences; smoldocs' own
#   extractive quotes are not the model's.


def displayed_precision(shown: Sequence[ShownSentence], draft: Sequence[ShownSentence] = ()) -> tuple[int, int]:
    """(supported, shown): the draft is not shown as the answer, so it does not count either way."""
    return sum(s.verdict is Verdict.SUPPORTED for s in shown), len(shown)


def evidence_hit(shown: Sequence[ShownSentence], evidence: str | None, draft: Sequence[ShownSentence] = ()) -> bool:
    """The evidence is in the shown sentences, or in a cited sentence they were judged against."""
    if not evidence or not shown:
        return False
    if holds_evidence(" ".join(s.text for s in shown), evidence):
        return True
    return any(s.evidence and holds_evidence(s.evidence, evidence) for s in shown)


def model_share(shown: Sequence[ShownSentence], draft: Sequence[ShownSentence] = ()) -> tuple[int, int]:
    """(sentences the model decoded, shown sentences)."""
    return sum(s.by_model for s in shown), len(shown)


def shown_metrics(records: Sequence) -> dict:
    """Displayed precision, evidence hit and model share over a run's records."""
    sentences = [s for r in records for s in r.shown_sentences]
    supported, shown = displayed_precision(sentences)
    by_model, _ = model_share(sentences)
    answerable = [r for r in records if r.answerable]
    hits = sum(evidence_hit(r.shown_sentences, r.evidence, r.draft_sentences) for r in answerable)
    return {
        "shown_sentences": shown,
        "draft_sentences": sum(len(r.draft_sentences) for r in records),
        "displayed_precision": ratio(supported, shown),
        "evidence_hit": ratio(hits, len(answerable)),
        "evidence_hit_n": len(answerable),
        "model_share": ratio(by_model, shown),
    }


# The gate: the exit code of `smoldocs eval`.


@dataclass(frozen=True)
class Thresholds:
    """Optional quality thresholds for CI; a run below one fails the gate."""

    min_recall5: float | None = None  # hybrid search, chunk level
    min_citation_precision: float | None = None
    max_made_up_rate: float | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if v is not None}


def invariant_failures(records: Sequence[Record], citations: dict) -> list[str]:
    """Why the run is broken, one line each: a crash, a context overflow, a bad citation not flagged."""
    out = []
    if not records:
        out.append("no question was run")
    crashed = [r for r in records if r.crashed]
    if crashed:
        first = crashed[0]
        out.append(f"{len(crashed)} question(s) crashed, first {first.id}: {first.error or first.status}")
    over = [r.id for r in records if overflows(r)]
    if over:
        out.append(f"{len(over)} prompt(s) overflowed the context window: {', '.join(over[:5])}")
    if citations["flagged_or_resolved"] is not None and citations["flagged_or_resolved"] < 1.0:
        missing = citations["cited"] - citations["resolved"] - citations["flagged"]
        out.append(f"{missing} cited number(s) neither resolved nor flagged")
    if citations["falsely_passed"]:
        out.append(f"{citations['falsely_passed']} citation(s) that do not resolve were not flagged")
    return out


def threshold_failures(thresholds: Thresholds, recall5: float | None, citations: dict) -> list[str]:
    """Which requested quality thresholds the run missed."""
    out = []
    if thresholds.min_recall5 is not None and (recall5 or 0.0) < thresholds.min_recall5:
        out.append(f"hybrid chunk Recall@5 {_fmt(recall5)} is below --min-recall5 {thresholds.min_recall5}")
    precision = citations["precision"]
    if thresholds.min_citation_precision is not None and (precision or 0.0) < thresholds.min_citation_precision:
        out.append(
            f"citation precision {_fmt(precision)} is below --min-citation-precision {thresholds.min_citation_precision}"
        )
    made_up = citations["made_up_rate"] or 0.0  # no citation at all: nothing was made up
    if thresholds.max_made_up_rate is not None and made_up > thresholds.max_made_up_rate:
        out.append(f"made-up rate {made_up:.3f} is above --max-made-up-rate {thresholds.max_made_up_rate}")
    return out


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
