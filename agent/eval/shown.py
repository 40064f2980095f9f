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

from typing import Sequence

from agent.eval.metrics import ratio
from agent.events import Answer
from agent.eval.records import ShownSentence
from rag.evaluation import holds_evidence
from rag import markers
from rag.verification.verdicts import Verdict


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


def split_answer(answer: Answer) -> tuple[tuple[ShownSentence, ...], tuple[ShownSentence, ...]]:
    """(shown, draft) of an agent Answer.

    `answer.claims` holds the verdicts of the shown text and of everything the model wrote (the draft included),
    so a claim is shown when its text is in `answer.text`, and draft when it is only in `answer.draft`; a
    sentence judged twice (the model wrote it and it is shown) counts once, with the shown text's verdict. The
    model decoded a shown sentence unless the text is smoldocs' own quotes (`quoted`).
    """
    shown_text, draft_text = _squash(markers.strip(answer.text)), _squash(markers.strip(answer.draft))
    # smoldocs' own quotes: the whole text of a quoted answer, or what follows the model's words in one that
    # keeps them in front.
    model = answer.model_text or ""
    quotes = answer.text[len(model):] if model and answer.text.startswith(model) else answer.text
    quotes = _squash(markers.strip(quotes)) if answer.quoted else ""
    shown: dict[str, ShownSentence] = {}
    draft: dict[str, ShownSentence] = {}
    for c in reversed(answer.claims):  # the shown text's verdicts come last: they win
        key = _squash(c.text)
        if not key:
            continue
        if key in shown_text:
            shown.setdefault(key, ShownSentence(c.text, c.verdict, by_model=key not in quotes, evidence=c.evidence))
        elif key in draft_text:
            draft.setdefault(key, ShownSentence(c.text, c.verdict, by_model=True, evidence=c.evidence))
    return tuple(reversed(shown.values())), tuple(reversed(draft.values()))


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
