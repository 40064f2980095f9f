"""What a turn shows, decided by one pure function: each decline reason, the quotes, and what a cut-off turn keeps."""

from __future__ import annotations

import jsonschema
import pytest

from agent import json_output
from agent.chats.codec import answer_from_dict, answer_to_dict
from agent.events import Answer, AnswerStatus
from agent.turn.decline import Decline, decline_text
from agent.turn.outcome import Facts, Outcome, decide, wants_quotes

QUOTES = "Quoted from the docs:\n\n> The kv cache stores keys and values. [1]"
VERIFIED = "The kv cache stores keys and values [1]."


@pytest.mark.parametrize("facts, reason", [
    (Facts(asked=False), Decline.EMPTY_QUESTION),
    (Facts(offered=False), Decline.NO_CLOSE_SENTENCE),
    (Facts(shown=False), Decline.NO_EXCERPT),
    (Facts(wrote=False), Decline.NOT_ANSWERABLE),
    (Facts(abstained=True), Decline.MODEL_DECLINED),
    (Facts(status=AnswerStatus.INSUFFICIENT_EVIDENCE), Decline.MODEL_DECLINED),
    (Facts(), Decline.NOTHING_SUPPORTED),
])  # fmt: skip
def test_each_decline_reason_shows_its_own_note_with_insufficient_evidence(facts, reason):
    assert decide(facts) == Outcome(decline_text(reason), AnswerStatus.INSUFFICIENT_EVIDENCE, decline=reason)


def test_every_decline_reason_is_reachable():
    facts = [Facts(asked=False), Facts(offered=False), Facts(shown=False), Facts(wrote=False), Facts(abstained=True), Facts()]
    assert {decide(f).decline for f in facts} == set(Decline)


def test_an_earlier_exit_wins_over_what_a_later_one_would_show():
    # An empty question never reaches search; a prompt with no excerpt never reaches the model.
    assert decide(Facts(asked=False, shown=False, verified=VERIFIED)).decline is Decline.EMPTY_QUESTION
    assert decide(Facts(offered=False, shown=False)).decline is Decline.NO_CLOSE_SENTENCE
    assert decide(Facts(shown=False, verified=VERIFIED, quotes=QUOTES)).decline is Decline.NO_EXCERPT


def test_verified_words_are_shown_before_any_quote():
    assert decide(Facts(verified=VERIFIED, quotes=QUOTES)) == Outcome(VERIFIED, AnswerStatus.ANSWERED)


def test_verified_words_of_a_model_that_also_declined_are_shown_as_insufficient_evidence():
    assert decide(Facts(abstained=True, verified=VERIFIED)) == Outcome(VERIFIED, AnswerStatus.INSUFFICIENT_EVIDENCE)


@pytest.mark.parametrize("wrote", [True, False])
def test_quotes_that_hold_are_shown_when_nothing_the_model_wrote_does(wrote):
    assert decide(Facts(wrote=wrote, quotes=QUOTES)) == Outcome(QUOTES, AnswerStatus.ANSWERED, quoted=True)


@pytest.mark.parametrize("status", [AnswerStatus.CANCELLED, AnswerStatus.ERROR, AnswerStatus.INTERRUPTED])
def test_a_cut_off_turn_shows_what_holds_or_nothing_and_never_declines(status):
    assert decide(Facts(status=status, quotes=QUOTES)) == Outcome("", status)
    assert decide(Facts(status=status, verified=VERIFIED)) == Outcome(VERIFIED, status)
    assert not wants_quotes(Facts(status=status))


def test_quotes_are_sought_only_when_they_would_be_shown():
    assert wants_quotes(Facts()) and wants_quotes(Facts(wrote=False))
    assert not wants_quotes(Facts(verified=VERIFIED))
    assert not wants_quotes(Facts(abstained=True))
    assert not wants_quotes(Facts(shown=False)) and not wants_quotes(Facts(asked=False))


def test_the_decline_reason_travels_through_json_and_saved_chats():
    answer = Answer("q", decline_text(Decline.NO_EXCERPT), AnswerStatus.INSUFFICIENT_EVIDENCE, decline=Decline.NO_EXCERPT)
    data = answer_to_dict(answer)
    assert data["decline"] == "no_excerpt"
    assert answer_from_dict(data) == answer
    assert answer_from_dict({**data, "decline": "a reason from a newer smoldocs"}).decline is None
    assert answer_from_dict({k: v for k, v in data.items() if k != "decline"}).decline is None  # an older chat


@pytest.mark.parametrize("reason", [None, *Decline])
def test_the_ask_schema_lists_every_decline_reason(reason):
    data = answer_to_dict(Answer("q", "t", AnswerStatus.ANSWERED, decline=reason))
    decline = json_output.schema("ask")["properties"]["decline"]
    jsonschema.validate(data["decline"], decline)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate("declined", decline)


def test_a_decline_names_what_the_question_asks_about_that_the_docs_or_the_excerpts_never_mention():
    assert decide(Facts(wrote=False, unknown=("Redis",))).text == "The docs do not cover this. The docs never mention Redis."
    assert decide(Facts(wrote=False, unshown=("Redis", "LoRA"))).text == (
        "The docs do not cover this. None of the excerpts found mentions Redis or LoRA.")
    both = decide(Facts(abstained=True, unknown=("A", "B", "C"), unshown=("Django",)))
    assert both.decline is Decline.MODEL_DECLINED
    assert (both.missing_from_docs, both.missing_from_excerpts) == (("A", "B", "C"), ("Django",))
    assert both.text == "The docs do not cover this. The docs never mention A, B or C. None of the excerpts found mentions Django."
    many = decide(Facts(wrote=False, unknown=tuple("ABCDEFG")))
    assert many.text.endswith("The docs never mention A, B, C, D or 3 more.") and many.missing_from_docs == tuple("ABCDEFG")
    # smoldocs' parenthesised note keeps its parentheses round the names
    assert decide(Facts(unknown=("Redis",))).text == (
        "(smoldocs: no excerpt supports this answer, and none comes close to the question; the docs may not cover it."
        " The docs never mention Redis.)")


def test_excerpts_not_shown_are_never_said_to_lack_a_name_and_an_empty_question_names_nothing():
    # no excerpt: "none of the excerpts" would say nothing; what the index lacks still helps
    assert decide(Facts(shown=False, unknown=("Redis",), unshown=("Django",))).text == (
        "The docs do not cover this. search_docs found no excerpt for this question. The docs never mention Redis.")
    assert decide(Facts(shown=False, unknown=("Redis",), unshown=("Django",))).missing_from_excerpts == ()
    assert decide(Facts(offered=False, unshown=("Django",))).text == decline_text(Decline.NO_CLOSE_SENTENCE)
    assert decide(Facts(asked=False, unknown=("Redis",))).text == "Ask a question about the docs."
    # names never touch an answer that is shown
    assert decide(Facts(wrote=False, quotes=QUOTES, unknown=("Redis",))) == Outcome(QUOTES, AnswerStatus.ANSWERED, quoted=True)


def test_the_missing_names_travel_through_json_and_saved_chats():
    from agent.turn.loop import shown_answer

    base = Answer("Can I back it with Redis?", "", AnswerStatus.ANSWERED)
    answer = shown_answer(base, decide(Facts(wrote=False, unknown=("Redis",), unshown=("Django",))))
    assert (answer.missing_from_docs, answer.missing_from_excerpts) == (("Redis",), ("Django",))
    data = answer_to_dict(answer)
    assert data["missing_from_docs"] == ["Redis"] and data["missing_from_excerpts"] == ["Django"]
    schema = json_output.schema("ask")["properties"]
    for key in ("missing_from_docs", "missing_from_excerpts"):
        jsonschema.validate(data[key], schema[key])
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([1], schema[key])
    assert answer_from_dict(data) == answer
    older = {k: v for k, v in data.items() if not k.startswith("missing_")}  # a chat saved before them
    assert answer_from_dict(older).missing_from_docs == () and answer_from_dict(older).missing_from_excerpts == ()
    answered = shown_answer(base, decide(Facts(wrote=False, quotes=QUOTES, unknown=("Redis",))))
    assert "missing_from_docs" not in answer_to_dict(answered)  # only a decline names what is missing
    assert "missing_from_docs" not in answer_to_dict(shown_answer(base, decide(Facts(wrote=False))))
