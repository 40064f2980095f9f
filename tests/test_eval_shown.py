"""Displayed precision, evidence hit and model share: exact values on hand-made answers."""

from __future__ import annotations

import pytest

from agent.eval.metrics import displayed_precision, evidence_hit, model_share, shown_metrics
from agent.eval.records import Record, ShownSentence, split_answer
from agent.events import Answer
from rag.verification.verdicts import ClaimVerdict, Verdict

QUOTE = ShownSentence("b controls how much document length normalises the score.", Verdict.SUPPORTED, by_model=False,
                      evidence="b controls how much document length normalises the score.")
WRITTEN = ShownSentence("b sets the maximum term frequency.", Verdict.UNSUPPORTED, by_model=True,
                        evidence="The b parameter controls length normalisation; b = 0.75 is standard.")
WEAK = ShownSentence("It is a number.", Verdict.WEAK, by_model=True)


def test_displayed_precision_counts_supported_shown_sentences_and_ignores_the_draft():
    assert displayed_precision([QUOTE, WRITTEN, WEAK]) == (1, 3)
    assert displayed_precision([QUOTE], draft=[WRITTEN, WEAK]) == (1, 1)
    assert displayed_precision([]) == (0, 0)


def test_model_share_counts_what_the_model_decoded():
    assert model_share([QUOTE, WRITTEN, WEAK]) == (2, 3)
    assert model_share([QUOTE], draft=[WRITTEN]) == (0, 1)


def test_evidence_hit_in_the_shown_text_or_in_a_sentence_it_cites_but_never_in_the_draft():
    assert evidence_hit([QUOTE], "document  LENGTH normalises")
    assert evidence_hit([WRITTEN], "b = 0.75 is standard")  # only in the cited sentence it was judged against
    assert not evidence_hit([WEAK], "document length normalises", draft=[QUOTE])
    assert not evidence_hit([QUOTE], None)
    assert not evidence_hit([], "anything")


def test_split_answer_marks_appended_quotes_as_not_the_models():
    claims = [ClaimVerdict("b sets the maximum term frequency.", (1,), Verdict.UNSUPPORTED),
              ClaimVerdict("b controls how much document length normalises the score.", (1,), Verdict.SUPPORTED)]
    answer = Answer("q", "b sets the maximum term frequency [1].\n\nQuoted from the docs:\n\n"
                    "> b controls how much document length normalises the score. [1]", "answered",
                    claims=tuple(claims), quoted=True, model_text="b sets the maximum term frequency [1].")
    shown, draft = split_answer(answer)
    assert [s.by_model for s in shown] == [True, False] and draft == ()
    extractive = Answer("q", "Quoted from the docs:\n\n> b controls how much document length normalises the score. [1]",
                        "answered", claims=tuple(claims[1:]), quoted=True)
    assert [s.by_model for s in split_answer(extractive)[0]] == [False]
    tidied = Answer("q", "Quoted from the docs:\n\n> Rules look like `name ::= expression`. [1]", "answered",
                    claims=(ClaimVerdict("Rules look like `name::= expression`.", (1,), Verdict.SUPPORTED),), quoted=True)
    assert [s.by_model for s in split_answer(tidied)[0]] == [False]  # the verifier's tidied text is still the quote


def test_shown_metrics_pool_sentences_over_the_run():
    records = [
        Record("a1", "q", "docs/bm25.md", evidence="document length normalises", shown_sentences=(QUOTE, WRITTEN)),
        Record("a2", "q", "docs/bm25.md", evidence="not there", shown_sentences=(WEAK,), draft_sentences=(QUOTE,)),
        Record("u1", "q", None, status="insufficient_evidence"),
    ]
    assert shown_metrics(records) == {
        "shown_sentences": 3, "draft_sentences": 1, "displayed_precision": pytest.approx(1 / 3),
        "evidence_hit": 0.5, "evidence_hit_n": 2, "model_share": pytest.approx(2 / 3),
    }
    again = Record.from_json(records[1].to_json())
    assert again.shown_sentences == (WEAK,) and again.draft_sentences == (QUOTE,)


def test_split_answer_counts_a_sentence_judged_twice_once_and_keeps_the_draft_apart():
    ref = "The docs live in five folders."
    claims = (
        ClaimVerdict(ref, (1,), Verdict.UNSUPPORTED),  # judged with the model's words, a weaker use of [1]
        ClaimVerdict("Each folder holds four documents.", (1,), Verdict.UNSUPPORTED),
        ClaimVerdict(ref, (1,), Verdict.SUPPORTED),  # judged as shown
    )
    answer = Answer("q", f"> {ref} [1]", "answered", claims=claims,
                    model_text=f"> {ref} [1]\nEach folder holds four documents. [1]", draft="Each folder holds four documents. [1]")
    shown, draft = split_answer(answer)
    assert [(s.text, s.verdict, s.by_model) for s in shown] == [(ref, Verdict.SUPPORTED, True)]
    assert [s.text for s in draft] == ["Each folder holds four documents."]
