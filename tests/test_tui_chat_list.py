"""Searching saved chats by their text: the chat list's filter, through Pilot, over chat files written by ChatStore."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, Static

from agent.chats import ChatStore
from agent.surfaces.tui import make_app
from agent.surfaces.tui.chat_list_screen import ChatListScreen
from agent.surfaces.tui.message_list import AnswerView
from test_tui import wait_for
from tui_support import SAVED_CHATS, ReplaySession, pilot_test, save_chats

SIZE = (100, 32)
CHATS = SAVED_CHATS  # (question, answer), oldest first


@pytest.fixture
def store(tmp_path) -> ChatStore:
    """Three saved chats, one question each, the newest last in CHATS."""
    store = ChatStore(tmp_path / "chats")
    save_chats(store, CHATS)
    return store


def listed(screen: ChatListScreen) -> list[str]:
    listing = screen.query_one(OptionList)
    return [str(listing.get_option_at_index(i).prompt).split("\n")[0] for i in range(listing.option_count)]


async def open_list(pilot) -> ChatListScreen:
    await wait_for(pilot, lambda: pilot.app.chat.session is not None)
    await pilot.press("ctrl+o")
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, ChatListScreen) and pilot.app.screen.query(Input))
    await pilot.pause()
    return pilot.app.screen


@pilot_test
async def test_typing_in_the_chat_list_keeps_the_chats_whose_answers_hold_every_word(store):
    session = ReplaySession()
    async with make_app(lambda progress=None: session, store).run_test(size=SIZE) as pilot:
        screen = await open_list(pilot)
        assert listed(screen) == [q for q, _ in reversed(CHATS)]
        assert isinstance(pilot.app.focused, Input)  # typing filters at once
        await pilot.press(*"term FREQUENCY")  # words of an answer, not of its title; any case
        await pilot.pause()
        assert listed(screen) == ["how are documents ranked"]
        await pilot.press("enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        view = pilot.app.chat.query_one(AnswerView)
        await wait_for(pilot, lambda: view.finished)
        assert view.answer.text == "BM25 ranks documents by term frequency [1]."
        assert [t.question for t in session.history] == ["how are documents ranked"]


@pilot_test
async def test_a_filter_nothing_matches_says_so_and_enter_opens_nothing(store):
    session = ReplaySession()
    async with make_app(lambda progress=None: session, store).run_test(size=SIZE) as pilot:
        screen = await open_list(pilot)
        await pilot.press(*"kv quantum")  # one word matches a chat, the other none: every word must
        await pilot.pause()
        assert listed(screen) == []
        none = screen.query_one("#chat-filter-none", Static)
        assert none.display and str(none.content) == "No saved chat holds “kv quantum”."
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen is screen and not pilot.app.chat.query(AnswerView)
        for _ in "quantum":
            await pilot.press("backspace")
        await pilot.pause()
        assert listed(screen) == ["what does the kv cache store"] and not none.display


@pilot_test
async def test_down_in_the_filter_moves_through_the_list_and_enter_opens_that_chat(store):
    session = ReplaySession()
    async with make_app(lambda progress=None: session, store).run_test(size=SIZE) as pilot:
        await open_list(pilot)
        await pilot.press("down", "down", "enter")
        await wait_for(pilot, lambda: pilot.app.chat.query(AnswerView))
        assert [t.question for t in session.history] == [CHATS[0][0]]  # the third listed: the oldest


def test_a_chat_matches_words_of_its_questions_and_answers_in_any_case_and_order(store):
    infos = {i.title: i for i in store.list_chats()}
    kv = infos["what does the kv cache store"]
    assert kv.matches("VALUES kv") and kv.matches("") and kv.matches("  store  ")
    assert not kv.matches("kv bm25")
    assert infos["how are documents ranked"].matches("bm25")
