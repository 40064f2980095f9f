"""The TUI through Pilot, over the real ChatSession with a scripted model: ask, stream, cite, cancel, save, resume."""

from __future__ import annotations

import dataclasses
import threading
import time
from contextlib import asynccontextmanager

import pytest
from textual.content import Content
from textual.widgets import Collapsible, OptionList, ProgressBar, Static

from agent.chats import ChatStore
from agent.errors import UsageError
from agent.events import AnswerFinished, ErrorEvent, TextDelta
from agent.surfaces.tui import make_app
from agent.surfaces.tui.chat_list_screen import ChatListScreen
from agent.surfaces.tui.citation_screen import CitationScreen
from agent.surfaces.tui.cited_markdown import CitedMarkdown
from agent.surfaces.tui.help_screen import HelpScreen
from agent.surfaces.tui.history_input import HistoryInput
from agent.surfaces.tui.loading import describe_progress
from agent.surfaces.tui.tool_trace import ToolTrace
from agent.surfaces.tui.message_list import AnswerView
from agent.surfaces.tui.search_view import SearchResultsView
from agent.surfaces.tui.slash import Slash, export_arguments, parse_slash
from agent.surfaces.tui.sources_panel import SourcesPanel
from agent.surfaces.tui.token_meter import TokenBar, TokenScreen
from agent.surfaces.tui.turns import error_line, run_turn
from models.errors import ModelError
from models.protocols import CancelToken
from rag.indexing.build import IndexProgress
from tui_support import CHUNKS, lasting_notices, pilot_test, real_session

REPLY = "KV cache stores keys [1]. It is 9000 GB [7]."
SIZE = (100, 32)


def test_the_replay_double_and_the_real_session_both_are_what_the_tui_drives():
    from agent.session import Session
    from tui_support import ReplaySession

    assert isinstance(ReplaySession(), Session)
    assert isinstance(real_session()[0], Session)


def app_for(session, store):
    return lasting_notices(make_app(lambda progress=None: session, store))


@asynccontextmanager
async def chatting(store, replies=(), size=SIZE, delay: float = 0.0):
    """The app over the real session with a scripted model, loaded: yields (pilot, session, model, retriever)."""
    session, model, retriever = real_session(list(replies), delay=delay)
    async with app_for(session, store).run_test(size=size) as pilot:
        await ready(pilot)
        yield pilot, session, model, retriever


async def wait_for(pilot, predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.02)


def streamed(chat) -> str:
    """The answer text shown so far ("" until the answer view is mounted)."""
    views = chat.query("CitedMarkdown.answer-text")  # not an unverified draft's, which fills when it ends
    return views.last().source if views else ""


async def ready(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.chat.session is not None)


async def ask(pilot, question: str, timeout: float = 10.0) -> AnswerView:
    """Type the question and wait for its answer to finish."""
    chat = pilot.app.chat
    before = len(chat.query(AnswerView))
    chat.query_one(HistoryInput).value = question
    await pilot.press("enter")
    await wait_for(pilot, lambda: len(chat.query(AnswerView)) > before)
    view = list(chat.query(AnswerView))[-1]
    await wait_for(pilot, lambda: view.finished and not chat.busy, timeout)
    await pilot.pause()
    return view


def marker_styles(view: AnswerView) -> dict[str, set[str]]:
    """Each styled citation marker in the rendered answer and its unverified draft -> the style classes on it."""
    found: dict[str, set[str]] = {}
    blocks = [block for markdown in view.query(CitedMarkdown) for block in markdown.query("MarkdownBlock")]
    for block in blocks:
        content = block.content
        if not isinstance(content, Content):
            continue
        for span in content.spans:
            if isinstance(span.style, str) and span.style.startswith(".cite--"):
                found.setdefault(content.plain[span.start : span.end], set()).add(span.style[1:])
    return found


async def opened_source(pilot) -> int | None:
    """The number of the source the citation view shows, or None when it is not open."""
    await pilot.pause()
    screen = pilot.app.screen
    return screen.infos[screen.index].n if isinstance(screen, CitationScreen) else None


def screen_text(app) -> str:
    return app.export_screenshot()


@pytest.fixture
def store(tmp_path):
    return ChatStore(tmp_path / "chats")


@pilot_test
async def test_a_question_streams_into_an_answer_with_verdict_coloured_citations(store):
    session, model, _ = real_session([REPLY])
    app = app_for(session, store)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        view = await ask(pilot, "what does the kv cache store")
        assert view.answer.status == "answered"
        styles = marker_styles(view)
        assert styles["[7?]"] == {"cite--made_up"}  # flagged, with a `?`, not a plain [7]
        verdict_1 = next(c.verdict for c in view.answer.citations if c.n == 1)
        assert styles["[1]"] == {f"cite--{verdict_1}"}
        assert "made up" in str(view.query_one(".answer-footer", Static).content)
        assert len(model.calls) == 1 and session.history[0].question == "what does the kv cache store"
        # The status line shows the speed of the last answer.
        assert "tok/s" in str(app.chat.query_one("#status", Static).content)


@pilot_test
async def test_made_up_numbers_are_not_links_but_real_citations_are(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        view = await ask(pilot, "what does the kv cache store")
        actions = {}
        for block in view.query_one(CitedMarkdown).query("MarkdownBlock"):
            content = block.content
            for span in getattr(content, "spans", []):
                meta = getattr(span.style, "meta", {}) if not isinstance(span.style, str) else {}
                if "@click" in meta:
                    actions[content.plain[span.start : span.end]] = meta["@click"]
        assert actions == {"[1]": f"screen.open_citation(1, {view.turn_id})"}


@pilot_test
async def test_text_shows_while_the_answer_streams(store):
    # Slow words: on a loaded machine the app must still see the answer before it ends.
    async with chatting(store, ["one two three four five six seven eight nine ten [1]."], delay=0.3) as (pilot, session, _, _):
        app = pilot.app
        app.chat.query_one(HistoryInput).value = "kv cache"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "four" in streamed(app.chat))
        view = app.chat.query_one(AnswerView)
        assert not view.finished and app.chat.busy
        assert "writing" in str(view.query_one(".answer-footer", Static).content)
        await wait_for(pilot, lambda: view.finished)


@pilot_test
async def test_esc_cancels_and_keeps_what_streamed(store):
    words = " ".join(f"word{i}" for i in range(200))
    async with chatting(store, [words + " [1]."], delay=0.02) as (pilot, session, _, _):
        chat = pilot.app.chat
        chat.query_one(HistoryInput).value = "kv cache"
        await pilot.press("enter")
        await wait_for(pilot, lambda: "word5" in streamed(chat))
        await pilot.press("escape")  # the input has focus: Esc still cancels
        view = chat.query_one(AnswerView)
        await wait_for(pilot, lambda: view.finished and not chat.busy)
        assert view.answer.status == "cancelled"
        # What streamed is kept as the unverified draft: none of it is supported, so none of it is the answer.
        assert view.answer.draft.startswith("word0 word1") and "word199" not in view.answer.draft
        assert not view.answer.text
        assert "cancelled" in str(view.query_one(".answer-footer", Static).content)
        assert view.has_class("-cancelled")
        saved = store.load(store.list_chats()[0].chat_id).turns[0].answer
        assert saved.status == "cancelled" and saved.draft == view.answer.draft


@pilot_test
async def test_opening_a_citation_shows_the_whole_chunk_with_path_heading_and_lines(store):
    async with chatting(store, ["The kv cache of SmolLM2 takes about 90 MB [2]."]) as (pilot, session, _, _):
        view = await ask(pilot, "how big is the kv cache")
        number = next(c.n for c in view.answer.citations if c.chunk_id == CHUNKS[1].chunk_id)
        await pilot.press("tab")  # leave the input: digits now open sources
        assert not isinstance(pilot.app.focused, HistoryInput)
        await pilot.press(str(number))
        screen = pilot.app.screen
        assert isinstance(screen, CitationScreen)
        header = str(screen.query_one("#citation-header", Static).content)
        assert "docs/kv-cache.md" in header and "lines 8-14" in header and "KV cache > Size" in header
        assert f"chunk {CHUNKS[1].chunk_id}" in header
        assert str(screen.query_one("#citation-text", Static).content) == CHUNKS[1].text
        await pilot.press("escape")
        assert not isinstance(pilot.app.screen, CitationScreen)


@pilot_test
async def test_clicking_a_source_in_the_panel_opens_it(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
        listing = pilot.app.chat.query_one(SourcesPanel).query_one(OptionList)
        labels = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        assert labels[0].startswith("[1]") and any(label.startswith("[7] ?") for label in labels)
        await pilot.click(listing, offset=(2, 0))
        assert await opened_source(pilot) == 1


@pilot_test
async def test_the_made_up_citation_view_says_it_is_made_up(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
        await pilot.press("tab", "7")
        screen = pilot.app.screen
        assert isinstance(screen, CitationScreen)
        assert "made up" in str(screen.query_one("#citation-text", Static).content)


@pilot_test
async def test_slash_search_shows_hits_without_asking_the_model(store):
    async with chatting(store) as (pilot, session, model, retriever):
        pilot.app.chat.query_one(HistoryInput).value = "/search kv cache"
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(SearchResultsView))
        results = pilot.app.chat.query_one(SearchResultsView)
        assert [h.chunk_id for h in results.hits][:2] == [CHUNKS[0].chunk_id, CHUNKS[1].chunk_id]
        assert "docs/kv-cache.md lines 1-6" in str(results.content)
        assert model.calls == [] and retriever.calls[-1][0] == "kv cache"
        assert store.list_chats() == []  # a search alone is not a chat


@pilot_test
async def test_slash_export_writes_markdown_with_footnotes(store, tmp_path):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
        target = tmp_path / "export" / "kv.md"
        pilot.app.chat.query_one(HistoryInput).value = f"/export {target}"
        await pilot.press("enter")
        await pilot.pause()
        text = target.read_text()
        assert "# what does the kv cache store" in text
        assert "KV cache stores keys [^1]." in text
        assert "9000 GB" not in text and "[7" not in text  # the unverified draft is left out unless asked
        assert "[^1]: docs/kv-cache.md lines 1-6, KV cache" in text


@pilot_test
async def test_slash_export_never_replaces_a_file_unasked_nor_writes_into_the_docs_folder(store, tmp_path):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "a.md").write_text("# A\n\nA document of the folder being chatted over.\n")
        session.docs_dir = docs
        await ask(pilot, "what does the kv cache store")
        mine = tmp_path / "mine.md"
        mine.write_text("mine\n")
        for command in (f"/export {mine}", f"/export {docs / 'a.md'} --force", f"/export --force {docs / 'new.md'}"):
            pilot.app.chat.query_one(HistoryInput).value = command
            await pilot.press("enter")
            await pilot.pause()
        assert mine.read_text() == "mine\n" and sorted(p.name for p in docs.iterdir()) == ["a.md"]
        assert (docs / "a.md").read_text().startswith("# A")
        messages = [str(n.message) for n in pilot.app._notifications]
        assert any("mine.md already exists: add --force" in m for m in messages)
        assert sum("is inside the docs folder" in m for m in messages) == 2
        pilot.app.chat.query_one(HistoryInput).value = f"/export {mine} --force"
        await pilot.press("enter")
        await pilot.pause()
        assert mine.read_text().startswith("# what does the kv cache store")


@pilot_test
async def test_ctrl_e_exports_to_the_exports_folder(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
        await pilot.press("ctrl+e")  # even with the input focused, where Ctrl+E would mean "end of line"
        await pilot.pause()
        exported = list((store.root.parent / "exports").glob("*.md"))
        assert len(exported) == 1 and "[^1]:" in exported[0].read_text()


@pilot_test
async def test_slash_clear_and_ctrl_n_start_a_new_chat(store):
    async with chatting(store, [REPLY, REPLY]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
        pilot.app.chat.query_one(HistoryInput).value = "/clear"
        await pilot.press("enter")
        await pilot.pause()
        assert session.history == [] and not pilot.app.chat.query(AnswerView)
        await ask(pilot, "what does the kv cache store")
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert session.history == [] and not pilot.app.chat.query(AnswerView)
        assert len(store.list_chats()) == 2  # both chats stay saved


@pilot_test
async def test_an_unknown_slash_command_says_which_exist(store):
    async with chatting(store) as (pilot, session, model, _):
        pilot.app.chat.query_one(HistoryInput).value = "/frobnicate"
        await pilot.press("enter")
        await pilot.pause()
        messages = [n.message for n in pilot.app._notifications]
        assert any("unknown command /frobnicate" in m and "/search" in m for m in messages)
        assert model.calls == []


@pilot_test
async def test_a_saved_chat_resumes_after_restarting_the_app(store):
    async with chatting(store, ["The kv cache stores keys and values [1]."]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
    # A new app, a new session: the chat comes back from disk.
    session2, model2, _ = real_session(["It is about 90 MB [1]."])
    async with app_for(session2, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+o")
        assert isinstance(pilot.app.screen, ChatListScreen)
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        view = pilot.app.chat.query_one(AnswerView)
        assert view.answer.text == "The kv cache stores keys and values [1]."
        assert "cite--" in " ".join(s for styles in marker_styles(view).values() for s in styles)
        assert [t.question for t in session2.history] == ["what does the kv cache store"]
        await ask(pilot, "and how big is it")
        # The follow-up saw the restored history and went into the same chat file.
        assert any("what does the kv cache store" in m["content"] for m in model2.calls[0])
        assert [t.question for t in store.load(store.list_chats()[0].chat_id).turns] == [
            "what does the kv cache store",
            "and how big is it",
        ]
        assert len(store.list_chats()) == 1


@pilot_test
async def test_a_chat_saved_over_a_folder_that_is_gone_resumes_with_a_notice(store, tmp_path):
    old = tmp_path / "old-docs"
    old.mkdir()
    async with chatting(store, ["The kv cache stores keys and values [1]."]) as (pilot, session, _, _):
        session.docs_dir = old
        await ask(pilot, "what does the kv cache store")
    old.rmdir()
    session2, _, _ = real_session(["It is about 90 MB [1]."])
    session2.docs_dir = tmp_path / "current-docs"
    async with app_for(session2, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+o")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        await pilot.pause()
        messages = [str(n.message) for n in pilot.app._notifications]
        assert any(f"saved over {old}, which no longer exists" in m and "current-docs" in m for m in messages)


@pilot_test
async def test_a_resumed_chat_marks_a_citation_whose_source_changed_as_stale(store):
    async with chatting(store, ["The kv cache stores keys and values [1]."]) as (pilot, session, _, _):
        await ask(pilot, "what does the kv cache store")
    # The docs changed since: the cited chunk now says something else.
    session2, _, retriever2 = real_session([])
    cited = session.history[0].answer.citations[0].chunk_id
    retriever2.by_id[cited] = dataclasses.replace(retriever2.by_id[cited], text="the kv cache was removed")
    async with app_for(session2, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+o")
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        view = pilot.app.chat.query_one(AnswerView)
        await wait_for(pilot, lambda: view.finished)
        assert view.stale == {1: "changed"}
        assert "cite--stale" in marker_styles(view)["[1]"]
        assert "1 stale" in str(view.query_one(".answer-footer", Static).content)


@pilot_test
async def test_a_damaged_chat_is_listed_with_its_mark_and_resumes_its_intact_turns(store):
    async with chatting(store, [REPLY, REPLY]) as (pilot, session, _, _):
        await ask(pilot, "first question")
        await ask(pilot, "second question")
    path = store.list_chats()[0].path
    lines = path.read_bytes().split(b"\n")
    second = next(i for i, line in enumerate(lines) if b"second question" in line)
    lines[second + 1] = b"\x00" * 40  # a zero-filled block inside the second turn
    path.write_bytes(b"\n".join(lines))
    damaged = path.read_bytes()
    session2, model2, _ = real_session([REPLY])
    async with app_for(session2, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        await pilot.press("ctrl+o")
        options = pilot.app.screen.query_one(OptionList)
        assert "damaged after turn 1" in str(options.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        assert len(pilot.app.chat.query(AnswerView)) == 1
        assert any("Damaged after turn 1" in n.message for n in pilot.app._notifications)
        assert path.read_bytes() == damaged  # opening it is not continuing it
        await ask(pilot, "third question")
    chat = store.load(path.stem)
    assert [t.question for t in chat.turns] == ["first question", "third question"]
    assert chat.info.damaged_after is None
    [backup] = path.parent.glob(f"{path.name}.damaged-*")
    assert backup.read_bytes() == damaged


@pilot_test
async def test_up_and_down_recall_earlier_inputs(store):
    async with chatting(store, [REPLY, REPLY]) as (pilot, session, _, _):
        await ask(pilot, "first question")
        await ask(pilot, "second question")
        box = pilot.app.chat.query_one(HistoryInput)
        box.value = "draft"
        await pilot.press("up")
        assert box.value == "second question"
        await pilot.press("up", "up")
        assert box.value == "first question"
        await pilot.press("down", "down")
        assert box.value == "draft"


@pilot_test
async def test_help_opens_with_f1_and_with_question_mark_on_an_empty_input(store):
    async with chatting(store) as (pilot, session, _, _):
        await pilot.press("f1")
        assert isinstance(pilot.app.screen, HelpScreen)
        assert "Ctrl+T" in str(pilot.app.screen.query_one("#help-text", Static).content)
        await pilot.press("escape")
        await pilot.press("question_mark")
        assert isinstance(pilot.app.screen, HelpScreen)
        await pilot.press("escape")
        box = pilot.app.chat.query_one(HistoryInput)
        box.value = "why"
        box.cursor_position = 3
        await pilot.press("question_mark")  # inside a question, ? is just a character
        assert box.value == "why?" and not isinstance(pilot.app.screen, HelpScreen)


@pilot_test
async def test_token_meter_shows_the_real_counts_and_omissions(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        view = await ask(pilot, "what does the kv cache store")
        built = view.context
        assert built is not None and pilot.app.chat.query_one(TokenBar).context == built
        await pilot.press("ctrl+t")
        screen = pilot.app.screen
        assert isinstance(screen, TokenScreen)
        legend = str(screen.query_one("#token-legend", Static).content)
        for name, count in built.layers.items():
            if count:
                assert f"{name:<10}{count:>6,} tokens" in legend
        assert f"{built.prompt_tokens:>6,} tokens, counted whole" in legend
        assert "omissions" in screen_text(pilot.app).lower()


@pilot_test
async def test_loading_shows_index_progress_and_a_question_waits_for_it(store):
    session, model, _ = real_session([REPLY])
    release = threading.Event()

    def factory(progress=None):
        progress(IndexProgress("embed", done=3, total=12))
        release.wait(10)
        return session

    async with make_app(factory, store).run_test(size=SIZE) as pilot:
        chat = pilot.app.chat
        bar = chat.query_one(ProgressBar)
        await wait_for(pilot, lambda: bar.total == 12)
        assert bar.progress == 3
        assert "Building the index: embedding 3/12 chunks" in str(chat.query_one("#loading-label", Static).content)
        chat.query_one(HistoryInput).value = "what does the kv cache store"
        await pilot.press("enter")  # asked while loading: kept, then asked when ready
        assert model.calls == []
        release.set()
        await wait_for(pilot, lambda: chat.query(AnswerView) and chat.query_one(AnswerView).finished)
        assert not chat.query_one("#loading").display
        assert len(model.calls) == 1


@pilot_test
async def test_a_model_that_fails_to_load_is_reported_in_the_app(store):
    def factory(progress=None):
        raise ModelError("model file not found: /nope.gguf: pass --model PATH to a GGUF file")

    async with make_app(factory, store).run_test(size=SIZE) as pilot:
        label = pilot.app.chat.query_one("#loading-label", Static)
        await wait_for(pilot, lambda: "Could not start" in str(label.content))
        assert "pass --model PATH" in str(label.content)


@pilot_test
async def test_the_command_palette_offers_the_main_actions(store):
    session, _, _ = real_session()
    app = app_for(session, store)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("New chat", "Open a saved chat", "Export chat", "Token meter", "Search the docs", "Help"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"


@pilot_test
async def test_the_layout_fits_80_by_24(store):
    async with chatting(store, [REPLY], size=(80, 24)) as (pilot, session, _, _):
        view = await ask(pilot, "what does the kv cache store")
        chat = pilot.app.chat
        assert not chat.query_one(SourcesPanel).display  # too narrow: Ctrl+S shows it
        box = chat.query_one(HistoryInput)
        assert box.region.bottom <= 23 and box.region.width >= 70
        assert view.region.width >= 70
        await pilot.press("ctrl+s")
        assert chat.query_one(SourcesPanel).display


class BrokenSession:
    """Streams two words, then fails the way a crashed backend would."""

    def ask(self, question, cancel=None):
        yield TextDelta("half ")
        yield TextDelta("an answer")
        raise RuntimeError("llama_decode returned -1")


class SilentCancelSession:
    """Stops at a cancel without reporting an answer."""

    def ask(self, question, cancel=None):
        yield TextDelta("partial")
        cancel.cancel()


def test_a_session_that_raises_ends_the_turn_with_an_error_answer():
    events = []
    answer = run_turn(BrokenSession(), "q", CancelToken(), events.append)
    assert answer.status == "error" and answer.draft == "half an answer" and not answer.text
    assert isinstance(events[-2], ErrorEvent) and events[-2].message == "RuntimeError: llama_decode returned -1"
    assert events[-1] == AnswerFinished(answer)


def test_a_cancel_the_session_did_not_report_still_ends_in_a_cancelled_answer():
    events = []
    answer = run_turn(SilentCancelSession(), "q", CancelToken(), events.append)
    assert answer.status == "cancelled" and answer.draft == "partial" and not answer.text


def test_user_errors_keep_their_own_words():
    assert error_line(ModelError("model file not found: x.gguf: pass --model PATH")) == (
        "model file not found: x.gguf: pass --model PATH"
    )
    assert error_line(KeyError("k")) == "KeyError: 'k'"


@pilot_test
async def test_a_crashing_turn_shows_the_error_and_the_app_goes_on(store):
    session, _, _ = real_session([REPLY])
    broken = BrokenSession()
    async with app_for(session, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        original = session.ask
        session.ask = broken.ask
        view = await ask(pilot, "what does the kv cache store")
        assert view.answer.status == "error" and view.has_class("-error")
        assert "llama_decode returned -1" in str(view.query_one(".answer-footer", Static).content)
        session.ask = original
        second = await ask(pilot, "what does the kv cache store")
        assert second.answer.status == "answered"


@pilot_test
async def test_clicking_a_marker_in_the_answer_opens_its_source(store):
    async with chatting(store, ["The kv cache stores keys and values [1]."]) as (pilot, session, _, _):
        view = await ask(pilot, "what does the kv cache store")
        paragraph = view.query_one(CitedMarkdown).query("MarkdownBlock").last()
        column = paragraph.content.plain.index("[1]")
        await pilot.click(paragraph, offset=(column + 1, 0))
        assert await opened_source(pilot) == 1


@pilot_test
async def test_the_tool_trace_shows_each_search_with_its_counts_and_expands(store):
    async with chatting(store, [REPLY]) as (pilot, session, _, _):
        view = await ask(pilot, "what does the kv cache store")
        call = view.query_one(ToolTrace).query_one(Collapsible)
        assert call.collapsed
        assert call.title == "search_docs “what does the kv cache…” → 3 hits, 3 packed, 0 dropped"
        await pilot.click(call.query_one("CollapsibleTitle"))
        assert not call.collapsed
        details = str(call.query_one(".trace-hits", Static).content)
        assert "1. [1] docs/kv-cache.md lines 1-6 · KV cache" in details


def test_slash_commands_parse_and_bad_ones_say_what_to_type():
    assert parse_slash("/search  kv cache ") == Slash("search", "kv cache")
    assert parse_slash("/EXPORT out.md") == Slash("export", "out.md")
    assert parse_slash("what is /search?") is None
    assert export_arguments("--drafts my chat.md --force") == ("my chat.md", True, True)
    assert export_arguments(" --force ") == (None, False, True) and export_arguments("") == (None, False, False)
    assert parse_slash("//etc/hosts is a path") is None  # sent as the question "/etc/hosts is a path"
    with pytest.raises(UsageError, match="e.g. /search kv cache"):
        parse_slash("/search")
    with pytest.raises(UsageError, match="/search, /export, /clear, /help"):
        parse_slash("/quit")


def test_index_progress_reads_as_a_label_and_a_fraction():
    progress = describe_progress(IndexProgress("embed", done=120, total=409))
    assert (progress.done, progress.total) == (120, 409)
    assert progress.label == "Building the index: embedding 120/409 chunks"
    assert describe_progress(IndexProgress("notice", message="index rebuilt: settings changed")).label == (
        "index rebuilt: settings changed"
    )
    pages = describe_progress(IndexProgress("read", done=40, total=300, message="manuals/big.pdf"))
    assert pages.label == "Building the index: reading manuals/big.pdf 40/300 pages" and pages.total == 300


@pilot_test
async def test_clicking_an_earlier_answer_makes_its_sources_current(store):
    async with chatting(store, ["Keys and values are stored [1].", "BM25 ranks documents [1]."]) as (pilot, session, _, _):
        first = await ask(pilot, "what does the kv cache store")
        second = await ask(pilot, "what is bm25")
        panel = pilot.app.chat.query_one(SourcesPanel)
        assert panel.turn_id == second.turn_id and second.has_class("-current")
        await pilot.click(first.query_one(".answer-footer"))
        assert panel.turn_id == first.turn_id and first.has_class("-current") and not second.has_class("-current")
        await pilot.press("tab", "1")
        screen = pilot.app.screen
        assert isinstance(screen, CitationScreen)
        assert screen.infos[screen.index].citation.chunk_id == first.answer.citations[0].chunk_id


@pilot_test
async def test_an_unverified_draft_is_collapsed_under_its_own_line_and_expands(store):
    async with chatting(store, ["KV cache stores keys [1].", REPLY]) as (pilot, session, _, _):
        first = await ask(pilot, "what does the kv cache store")
        assert not first.query_one(".answer-draft", Collapsible).has_class("-shown")  # nothing held back: no line
        view = await ask(pilot, "what does the kv cache store")
        assert "9000 GB" not in view.query_one(".answer-text", CitedMarkdown).source  # never part of the answer
        draft = view.query_one(".answer-draft", Collapsible)
        assert draft.has_class("-shown") and draft.collapsed and draft.title.startswith("unverified draft")
        assert "It is 9000 GB [7]." in view.query_one(".draft-text", CitedMarkdown).source
        await pilot.click(draft.query_one("CollapsibleTitle"))
        assert not draft.collapsed


class _FailingOs:
    """The os module as agent.chats.store sees it, with one call failing the way a full or read-only disk does."""

    def __init__(self, name: str, error: OSError) -> None:
        import os

        self._os, self._name, self._error = os, name, error

    def __getattr__(self, attr):
        if attr == self._name:
            def fail(*args, **kwargs):
                raise self._error
            return fail
        return getattr(self._os, attr)


@pytest.mark.parametrize("fault", ["chats folder is a file", "disk full", "read-only"])
@pilot_test
async def test_a_chat_that_cannot_be_saved_goes_on_unsaved_with_one_notice(tmp_path, monkeypatch, fault):
    import errno

    from agent.chats import store as store_module

    root = tmp_path / "chats"
    if fault == "chats folder is a file":
        root.write_text("not a folder")
    elif fault == "disk full":
        monkeypatch.setattr(store_module, "os", _FailingOs("write", OSError(errno.ENOSPC, "No space left on device")))
    else:
        monkeypatch.setattr(store_module, "os", _FailingOs("open", OSError(errno.EROFS, "Read-only file system")))
    async with chatting(ChatStore(root), [REPLY, "The kv cache stores keys and values of earlier tokens [1]."]) as (pilot, session, _, _):
        first = await ask(pilot, "what does the kv cache store")
        second = await ask(pilot, "and what else")
        assert pilot.app.is_running and first.finished and second.finished
        assert "KV cache stores keys" in first.query_one(CitedMarkdown).source
        assert "stores keys and values" in second.query_one(CitedMarkdown).source
        notices = [str(n.message) for n in pilot.app._notifications if "not saved" in str(n.message)]
        assert len(notices) == 1 and "\n" not in notices[0], notices
        assert len(session.history) == 2


EVIL = "\x1b]52;c;aGVsbG8gY2xpcGJvYXJk\x07\x1b[2J\x9b31m"  # write the clipboard, clear the screen, C1 CSI
EVIL_NAME = "docs/[bold]evil[/bold]\x1b[2J.md"


def rendered_controls(app) -> list[str]:
    """Control characters in what the app would draw: every line of every visible widget."""
    from textual.geometry import Region

    found = []
    for widget in app.screen.walk_children(with_self=True):
        if not widget.display or not widget.region:
            continue
        width, height = widget.size
        for strip in widget.render_lines(Region(0, 0, width, height)):
            found += [c for c in strip.text if (ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F]
    return found


@pilot_test
async def test_document_and_model_escapes_are_shown_never_sent_to_the_terminal(store):
    from agent.session import ChatSession
    from agent.settings import AgentSettings
    from fakes import HashEmbedder, ScriptedChatModel
    from rag.types import Chunk
    from test_agent_loop import MemoryRetriever

    evil = Chunk(f"{EVIL_NAME}#0", EVIL_NAME, EVIL_NAME, f"The escapeword page hides {EVIL} in its text.",
                 (f"Evil {EVIL}",), 1, 3)
    model = ScriptedChatModel([f"The escapeword page hides {EVIL} in its text [1]. Also \x1b]0;pwned\x07 [1].",
                               "Nothing here [1]."])
    session = ChatSession(model, MemoryRetriever([evil, *CHUNKS]), embedder=HashEmbedder(),
                          settings=AgentSettings(policy="search-first", fallback=False), docs_dir=None)
    async with app_for(session, store).run_test(size=SIZE) as pilot:
        await ready(pilot)
        view = await ask(pilot, "where is the escapeword page")
        assert "escapeword" in view.query_one(CitedMarkdown).source
        assert rendered_controls(pilot.app) == []
        pilot.app.chat.query_one(HistoryInput).value = "/search escapeword"
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(SearchResultsView))
        await pilot.pause()
        assert rendered_controls(pilot.app) == []
        await pilot.press("tab")
        await pilot.press("1")
        assert isinstance(pilot.app.screen, CitationScreen)
        await pilot.pause()
        text = str(pilot.app.screen.query_one("#citation-text", Static).content)
        assert "\\x1b]52;c;aGVsbG8gY2xpcGJvYXJk\\x07" in text  # shown, escaped
        assert "[bold]evil[/bold]" in str(pilot.app.screen.query_one("#citation-header", Static).content)
        assert rendered_controls(pilot.app) == []
        await pilot.press("escape")
        pilot.app.chat.query_one(HistoryInput).focus()
        markup = "[/bold] escapeword [@click=app.quit]quit[/]"  # Textual markup in a question (the search query)
        await ask(pilot, markup)
        shown = [str(s.content) for s in pilot.app.chat.query(Static)]
        assert pilot.app.is_running and any(markup in text for text in shown)  # literally, not as markup
