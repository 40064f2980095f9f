"""What an answer shows as the answer, sentence by sentence, and the metrics of #16 over it.

A shown sentence is a factual sentence of the displayed answer that the verifier judged (quotes included).
Text the answer keeps apart as an unverified draft is passed separately and never counts as shown.

- displayed precision: supported shown sentences / shown sentences, pooled over the run;
- evidence hit: an answerable question whose evidence string (case and whitespace aside) is in the shown
  sentences or in the sentence of a cited chunk that one of them was judged against;
- model share: shown sentences the model decoded (copied or written) / shown sentences; smoldocs' own
  extractive quotes are not the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from agent.eval.metrics import contains_evidence, ratio
from rag.verdicts import Verdict


@dataclass(frozen=True)
class ShownSentence:
    text: str
    verdict: Verdict  # the verifier's verdict of the sentence
    by_model: bool  # the model decoded it (copied or written); False for smoldocs' own quotes
    evidence: str | None = None  # the cited chunk's sentence it was judged against


def displayed_precision(shown: Sequence[ShownSentence], draft: Sequence[ShownSentence] = ()) -> tuple[int, int]:
    """(supported, shown): the draft is not shown as the answer, so it does not count either way."""
    return sum(s.verdict is Verdict.SUPPORTED for s in shown), len(shown)


def evidence_hit(shown: Sequence[ShownSentence], evidence: str | None, draft: Sequence[ShownSentence] = ()) -> bool:
    """The evidence is in the shown sentences, or in a cited sentence they were judged against."""
    if not evidence or not shown:
        return False
    if contains_evidence(" ".join(s.text for s in shown), evidence):
        return True
    return any(s.evidence and contains_evidence(s.evidence, evidence) for s in shown)


def model_share(shown: Sequence[ShownSentence], draft: Sequence[ShownSentence] = ()) -> tuple[int, int]:
    """(sentences the model decoded, shown sentences)."""
    return sum(s.by_model for s in shown), len(shown)


def split_answer(answer) -> tuple[tuple[ShownSentence, ...], tuple[ShownSentence, ...]]:
    """(shown, draft) of an agent Answer. Every judged claim is shown today; the model's claims are those not
    in the quotes smoldocs appended after the model's words."""
    quotes = answer.text[len(answer.model_text):] if answer.quoted and answer.text.startswith(answer.model_text) else ""
    # Claim texts are tidied ("`a ::= b`" loses a space before punctuation): compare without any whitespace.
    squashed = _squash(quotes)
    shown = tuple(
        ShownSentence(c.text, c.verdict, by_model=not (quotes and _squash(c.text) in squashed), evidence=c.evidence)
        for c in answer.claims
    )
    return shown, ()


def _squash(text: str) -> str:
    return "".join(text.split())


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
