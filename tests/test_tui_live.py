"""The TUI over a live index: a usable prompt while embeddings fill in, coverage in the status line, notices, close."""

from __future__ import annotations

from textual.widgets import Static

from agent.surfaces.tui import make_app
from agent.surfaces.tui.status_line import embedding_text
from rag.indexing.build import IndexProgress
from test_tui import REPLY, SIZE, ask, ready, store, wait_for  # noqa: F401 - store is a fixture
from tui_support import pilot_test, real_session


class LiveSession:
    """The real session over a scripted model, plus what a live index adds: coverage, close."""

    def __init__(self, session, coverage: float) -> None:
        self._session = session
        self.dense_coverage = coverage
        self.closed = False

    def __getattr__(self, name):
        return getattr(self._session, name)

    def close(self) -> None:
        self.closed = True


def test_embedding_text_shows_share_bar_and_counts():
    assert embedding_text(800, 2000) == "semantic 40% ████░░░░░░ 800/2,000 (BM25 for the rest)"


@pilot_test
async def test_prompt_is_usable_while_embedding_and_the_status_line_follows(store):
    session, model, _ = real_session([REPLY])
    live = LiveSession(session, coverage=0.25)
    sent = {}

    def factory(progress=None):
        sent["progress"] = progress
        return live

    app = make_app(factory, store)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        status = app.chat.query_one("#status", Static)
        assert "semantic 25%" in str(status.content)
        view = await ask(pilot, "what does the kv cache store")  # answered while embedding goes on
        assert view.answer.status == "answered"
        sent["progress"](IndexProgress("chunk", 3, 20))  # a re-index reading files
        await wait_for(pilot, lambda: "reading files 3/20" in str(status.content))
        sent["progress"](IndexProgress("embed", 6, 10))  # from the worker thread in real use
        await wait_for(pilot, lambda: "semantic 60%" in str(status.content))
        assert not app.chat.query_one("#loading").display
        sent["progress"](IndexProgress("notice", message="re-indexed: 0 added, 1 changed, 0 removed"))
        await wait_for(pilot, lambda: any("re-indexed" in str(n.message) for n in app._notifications))
        sent["progress"](IndexProgress("embed", 10, 10))
        await wait_for(pilot, lambda: "semantic" not in str(status.content))
    assert live.closed  # quitting saves the live index's embeddings
