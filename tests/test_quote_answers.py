"""Quote decoding through the agent with the scripted model, and answers that show only what is verified."""

from __future__ import annotations

import json

from agent.chats import ChatStore
from agent.chats.codec import answer_to_dict
from agent.events import AnswerFinished, TextDelta
from agent.turn.quoting import REF_OPEN, QuoteGuard
from agent.session import ChatSession
from agent.settings import AgentSettings
from fakes import HashEmbedder, ScriptedChatModel
from models.protocols import CancelToken
from rag.verification.verdicts import Verdict
from test_agent_loop import CHUNKS, MemoryRetriever, _chunk, final

KV = "the kv cache stores keys and values of earlier tokens so they are not recomputed"
QUESTION = "what does the kv cache store of earlier tokens"


def quote_session(replies, chunks=CHUNKS, delay=0.0, fallback=True):
    model = ScriptedChatModel(replies, delay=delay)
    settings = AgentSettings(policy="search-first", decoding="quote", fallback=fallback)
    return ChatSession(model, MemoryRetriever(chunks), embedder=HashEmbedder(), settings=settings), model


def test_quote_decoding_copies_under_the_guard_and_shows_the_cited_reference():
    session, model = quote_session([f"{KV} [1]\nKeys and values of earlier tokens are stored by the kv cache.\n"])
    events = list(session.ask(QUESTION))
    answer = final(events)
    options = model.options[-1]
    assert isinstance(options.guard, QuoteGuard) and options.prefix == REF_OPEN
    assert options.guard.spans[0].text == KV and options.guard.spans[0].n == 1  # the best candidate first
    assert "copies, word for word" in model.calls[-1][0]["content"]  # the quote rules, not the free ones
    assert next(e for e in events if isinstance(e, TextDelta)).text.startswith(REF_OPEN + "the")  # as it is shown
    assert answer.status == "answered" and not answer.quoted
    assert answer.text.startswith(f"> {KV} [1]")
    assert [c.n for c in answer.citations] == [1] and answer.citations[0].verdict is Verdict.SUPPORTED


def test_a_claim_the_verifier_does_not_support_goes_to_the_draft():
    session, _ = quote_session([f"{KV} [1]\nZebras graze on purple farms every winter.\n"])
    answer = final(session.ask(QUESTION))
    assert answer.text == f"> {KV} [1]"
    assert answer.draft == "Zebras graze on purple farms every winter."
    # The shown reference and the held-back claim each keep their own verdict.
    assert Verdict.UNSUPPORTED in [c.verdict for c in answer.claims]
    assert all(c.verdict is Verdict.SUPPORTED for c in answer.claims if c.text in answer.text)
    data = json.loads(json.dumps(answer_to_dict(answer)))  # what `ask --json` prints
    assert data["draft"] == answer.draft and "Zebras" not in data["text"]


def test_a_reference_that_is_not_an_offered_span_is_never_shown():
    # A model whose guard did not run (a server) copies badly: what it calls a reference is dropped.
    session, _ = quote_session([f"the kv cache stores zebras [1]\n> {KV} [1]\n"])
    answer = final(session.ask(QUESTION))
    assert answer.text == f"> {KV} [1]" and "zebras" not in answer.text


def test_no_excerpts_means_no_model_call():
    session, model = quote_session([])
    answer = final(session.ask("zzz qqq"))
    assert answer.status == "insufficient_evidence" and model.calls == []


def test_no_sentence_close_to_the_question_means_no_model_call():
    session, model = quote_session([])
    answer = final(session.ask("kv zebra giraffe elephant savannah migration"))
    assert answer.status == "insufficient_evidence" and model.calls == []
    assert "No excerpt sentence comes close" in answer.text


def test_a_model_that_ends_at_once_gets_the_extractive_quotes():
    session, model = quote_session([""])
    answer = final(session.ask(QUESTION))
    assert len(model.calls) == 1
    assert answer.status == "answered" and answer.quoted and "[1]" in answer.text and not answer.draft
    session, _ = quote_session([""], fallback=False)
    answer = final(session.ask(QUESTION))
    assert answer.status == "insufficient_evidence" and "[" not in answer.text


def test_cancelling_mid_reference_drops_the_partial_reference():
    first = "the kv cache stores the keys and values of earlier tokens."
    chunks = [_chunk("docs/kv-cache.md", 0, f"{first} It grows with every token of the context window.")]
    session, _ = quote_session([f"{first} [1]\nIt grows with every token of the context window."], chunks, delay=0.01)
    cancel = CancelToken()
    events = []
    for event in session.ask("what does the kv cache store of earlier tokens, and how does it grow", cancel=cancel):
        events.append(event)
        if isinstance(event, TextDelta) and sum(isinstance(e, TextDelta) for e in events) == 5:
            cancel.cancel()  # five words of the reference have streamed
    answer = final(events)
    assert answer.status == "cancelled"
    assert answer.text == "" and answer.citations == ()  # the partial reference is never shown as a quote
    assert answer.model_text.startswith("> the kv cache stores") and not answer.draft


def test_every_decoding_shows_only_supported_claims():
    for decoding in ("free", "guarded", "constrained"):
        model = ScriptedChatModel(["The kv cache stores keys and values of earlier tokens [1]. Zebras graze on purple farms [1]."])
        settings = AgentSettings(policy="search-first", decoding=decoding)
        session = ChatSession(model, MemoryRetriever(CHUNKS), embedder=HashEmbedder(), settings=settings)
        answer = final(session.ask(QUESTION))
        assert answer.text == "The kv cache stores keys and values of earlier tokens [1].", decoding
        assert answer.draft == "Zebras graze on purple farms [1].", decoding


def test_the_export_leaves_drafts_out_unless_asked(tmp_path):
    session, _ = quote_session([f"{KV} [1]\nZebras graze on purple farms every winter.\n"])
    store = ChatStore(tmp_path)
    with store.create() as log:
        for event in session.ask(QUESTION):
            log.record(event)
            if isinstance(event, AnswerFinished):
                assert event.answer.draft
    plain = store.export(log.chat_id, tmp_path / "plain.md").read_text()
    with_drafts = store.export(log.chat_id, tmp_path / "drafts.md", drafts=True).read_text()
    assert "Zebras" not in plain and KV in plain
    assert "Unverified draft" in with_drafts and "Zebras graze on purple farms every winter." in with_drafts


def test_a_held_back_claim_does_not_weaken_the_reference_it_follows():
    session, _ = quote_session([f"{KV} [1]\nZebras graze on purple farms every winter.\n"])
    answer = final(session.ask(QUESTION))
    assert answer.draft and [(c.n, c.verdict) for c in answer.citations] == [(1, Verdict.SUPPORTED)]
