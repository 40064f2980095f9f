"""The verifier judges each text of a turn once: the shown answer's verdicts are the ones that chose it.

A counting double wraps the real verifier, so the verdicts are real and only the calls are recorded."""

from __future__ import annotations

import pytest

from agent.session import ChatSession
from agent.settings import AgentSettings
from agent.turn.decline import Decline
from agent.turn.quoting import QuoteUnit
from agent.turn.verified import quote_display
from fakes import HashEmbedder, ScriptedChatModel
from rag.citations import Citation
from rag.verification.verifier import Verifier
from test_agent_loop import CHUNKS, FAR_QUESTION, FEW_COLLISIONS, MemoryRetriever, final

KV = "the kv cache stores keys and values of earlier tokens so they are not recomputed"
QUESTION = "what does the kv cache store of earlier tokens"


class Counting:
    """The agent's own judge, recording the text of every call."""

    def __init__(self, judge) -> None:
        self.judge = judge
        self.texts: list[str] = []

    def __call__(self, text, shown, lookup):
        self.texts.append(text)
        return self.judge(text, shown, lookup)


def ask(replies, question=QUESTION, embedder=None, **settings):
    session = ChatSession(ScriptedChatModel(replies), MemoryRetriever(CHUNKS), embedder=embedder or HashEmbedder(),
                          settings=AgentSettings(policy="search-first", **settings))  # fmt: skip
    judge = session.agent.judge = Counting(session.agent.judge)
    return final(session.ask(question)), judge.texts


def test_an_extractive_answer_is_judged_once_as_it_is_shown():
    answer, texts = ask(["never used"], decoding="extractive")
    assert answer.quoted and texts == [answer.text]


def test_a_free_answer_is_judged_once_and_its_shown_sentences_keep_the_verdicts_that_chose_them():
    written = "The kv cache stores keys and values of earlier tokens [1]. Zebras graze on purple farms [1]."
    answer, texts = ask([written], decoding="free")
    assert texts == [written]
    assert answer.text == "The kv cache stores keys and values of earlier tokens [1]."
    assert [c.verdict for c in answer.claims] == ["supported", "unsupported"]  # each sentence once
    assert [(c.n, c.verdict) for c in answer.citations] == [(1, "unsupported")]  # a number's weaker use


def test_a_free_answer_that_falls_back_to_quotes_judges_the_model_and_the_quotes_once_each():
    answer, texts = ask(["Zebras are purple [1]."], decoding="free", fallback=True)
    assert answer.quoted and texts == ["Zebras are purple [1].", answer.text]
    verdicts = [c.verdict for c in answer.claims]
    assert verdicts[0] == "unsupported" and len(verdicts) > 1 and set(verdicts[1:]) == {"supported"}


def test_a_declined_free_answer_judges_only_what_the_model_wrote():
    answer, texts = ask(["Zebras on the farm are striped purple [1]."], question=FAR_QUESTION,
                        embedder=HashEmbedder(FEW_COLLISIONS), decoding="free", fallback=True)  # fmt: skip
    assert answer.decline is Decline.NOTHING_SUPPORTED and texts == ["Zebras on the farm are striped purple [1]."]


def test_a_quote_answer_judges_each_reference_and_claim_once_and_never_the_whole_again():
    claim = "Keys and values of earlier tokens are stored by the kv cache."
    answer, texts = ask([f"{KV} [1]\n{claim}\n"], decoding="quote")
    assert texts == [f"> {KV} [1]", f"{claim} [1]"]
    assert answer.text == f"> {KV} [1]\n\n{claim} [1]"


@pytest.mark.parametrize("embedder", [None, HashEmbedder()], ids=["lexical", "hash"])
def test_the_quote_displays_verdicts_equal_judging_its_shown_text_whole(embedder):
    # quote_display keeps the verdicts of each block it shows; judging the shown text whole must give the same.
    judge = Verifier(embedder)
    bm25, sampling = CHUNKS[1].text, CHUNKS[2].text
    units = [
        QuoteUnit(KV, 1, "Keys and values of earlier tokens are stored by the kv cache."),
        QuoteUnit(bm25, 2, "Zebras graze on purple farms."),  # held back: the reference stays
        QuoteUnit(sampling, 3, "Temperature scales the logits before sampling [3]. It also ranks documents [2]."),
        QuoteUnit(sampling, 3),
    ]
    shown = {n: Citation(n, c.chunk_id, c.doc_id, c.uri) for n, c in enumerate(CHUNKS, 1)}
    lookup = {c.chunk_id: c for c in CHUNKS}.get
    display = quote_display(units, judge, shown, lookup)
    assert display.text.count("\n\n> ") == 3 and "Zebras" in display.draft
    assert display.checked == judge(display.text, shown, lookup)
