"""The TUI with the real SmolLM2-135M model, MiniLM embedder and docs_corpus index, through Pilot."""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import OptionList

from agent.chats import ChatStore
from agent.session import ChatSession
from agent.settings import AgentSettings, answer_options
from agent.surfaces.tui import make_app
from agent.surfaces.tui.sources_panel import SourcesPanel
from rag.verification.verdicts import Verdict
from rag.ingest.corpus import default_docs_dir
from test_tui import ask, marker_styles, ready
from tui_support import pilot_test

pytestmark = pytest.mark.real


@pilot_test
async def test_a_real_question_gets_an_answer_whose_citations_carry_verdicts(real_model, real_embedder, real_index, tmp_path):
    # A short answer keeps the test lean; everything else is the default session.
    settings = AgentSettings().with_(generation=replace(answer_options(), max_tokens=96))
    session = ChatSession(real_model, real_index, embedder=real_embedder, settings=settings, docs_dir=default_docs_dir())
    app = make_app(lambda progress=None: session, ChatStore(tmp_path / "chats"))
    async with app.run_test(size=(100, 32)) as pilot:
        await ready(pilot)
        view = await ask(pilot, "What does the KV cache store?", timeout=600)
        answer = view.answer
        assert answer.status in ("answered", "insufficient_evidence"), answer
        assert answer.text.strip()
        assert answer.citations, f"no citations in {answer.text!r}"
        assert all(isinstance(c.verdict, Verdict) for c in answer.citations)
        # Every cited number in the rendered answer is styled with its own verdict.
        styles = {s for found in marker_styles(view).values() for s in found}
        assert {f"cite--{c.verdict}" for c in answer.citations if c.verdict != "made_up"} <= styles
        listing = app.chat.query_one(SourcesPanel).query_one(OptionList)
        assert listing.option_count >= len({c.n for c in answer.citations})
        assert view.context is not None and view.context.prompt_tokens <= view.context.n_ctx
