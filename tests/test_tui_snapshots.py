"""Snapshots of the TUI's main states, over a replay session with fixed numbers so they never move.

Update after an intended change with `pytest tests/test_tui_snapshots.py --snapshot-update`, and look at the
report (snapshot_report.html) before committing.
"""

from __future__ import annotations

import pytest

from agent.chats import ChatStore
from agent.surfaces.tui import make_app
from agent.surfaces.tui.history_input import HistoryInput
from tui_support import ReplaySession, mixed_turn, save_chats

SIZE = (100, 32)
QUESTION = "What does the kv cache store, and how big is it?"


@pytest.fixture
def store(tmp_path):
    return ChatStore(tmp_path / "chats")


def replay_app(store, turns=(), theme=None):
    session = ReplaySession(list(turns))
    return make_app(lambda progress=None: session, store, theme=theme)


async def loaded(pilot) -> None:
    """Wait for the session; a steady cursor keeps the snapshots the same from run to run."""
    await until(pilot, lambda: pilot.app.chat.session is not None)
    pilot.app.chat.query_one(HistoryInput).cursor_blink = False
    await pilot.pause()


async def until(pilot, predicate) -> None:
    for _ in range(500):
        if predicate():
            return
        await pilot.pause(0.01)
    raise AssertionError("the app did not get there")


async def answered(pilot) -> None:
    chat = pilot.app.chat
    await loaded(pilot)
    chat.query_one(HistoryInput).value = QUESTION
    await pilot.press("enter")
    await until(pilot, lambda: chat.query("AnswerView") and chat.query_one("AnswerView").finished and not chat.busy)
    await pilot.pause()


def test_empty_chat(snap_compare, store):
    """You should see the welcome text, an empty token meter, the input and an empty sources panel."""

    assert snap_compare(replay_app(store), terminal_size=SIZE, run_before=loaded)


def test_answer_with_mixed_verdicts(snap_compare, store):
    """You should see [1] green (supported), [2] yellow (weak), [3] red underlined (unsupported) and [7?] struck
    through on red (made up); the sources panel lists [1]-[3] with marks and [7] as made up."""
    assert snap_compare(replay_app(store, [mixed_turn(QUESTION)]), terminal_size=SIZE, run_before=answered)


def test_answer_with_mixed_verdicts_in_the_light_theme(snap_compare, store):
    """You should see the same answer readable on a light background."""
    app = replay_app(store, [mixed_turn(QUESTION)], theme="textual-light")
    assert snap_compare(app, terminal_size=SIZE, run_before=answered)


def test_citation_view(snap_compare, store):
    """You should see source [2]: docs/kv-cache.md lines 8-14 under KV cache > Size, marked weak with support
    0.41, its claim, the chunk text with the evidence sentence highlighted, and the hint naming c (copy the quote),
    o (open in $PAGER) and e (open in $EDITOR)."""

    async def open_citation(pilot):
        await answered(pilot)
        await pilot.press("tab", "2")
        await pilot.pause()

    assert snap_compare(replay_app(store, [mixed_turn(QUESTION)]), terminal_size=SIZE, run_before=open_citation)


def test_token_meter(snap_compare, store):
    """You should see the stacked bar of 1,211 prompt tokens out of 2,048 (system 212, evidence 771, history 96,
    question 118, template 14), the 384-token reserve, and the omissions: one history turn and one dropped hit."""

    async def open_meter(pilot):
        await answered(pilot)
        await pilot.press("ctrl+t")
        await pilot.pause()

    assert snap_compare(replay_app(store, [mixed_turn(QUESTION)]), terminal_size=SIZE, run_before=open_meter)


def test_help_screen(snap_compare, store):
    """You should see the keys (Enter, Up/Down, Esc, 1-9 with c/o/e in a source, Ctrl+N/O/E/T/S/Y/P, F1, Ctrl+Q) and the slash commands."""

    async def open_help(pilot):
        await loaded(pilot)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(replay_app(store), terminal_size=SIZE, run_before=open_help)


def test_chat_list_filtered(snap_compare, store, monkeypatch):
    """You should see the saved chats dialog with "ranked" typed in its filter, and only "how are documents ranked"
    (1970-01-12 13:46 · 1 question) left of the three saved chats."""
    import time

    monkeypatch.setenv("TZ", "UTC")  # the list shows local times
    time.tzset()
    save_chats(store)

    async def filter_chats(pilot):
        await loaded(pilot)
        await pilot.press("ctrl+o")
        await until(pilot, lambda: pilot.app.screen.query("#chat-filter"))
        pilot.app.screen.query_one("#chat-filter").cursor_blink = False
        await pilot.press(*"ranked")
        await pilot.pause()

    try:
        assert snap_compare(replay_app(store), terminal_size=SIZE, run_before=filter_chats)
    finally:
        monkeypatch.undo()
        time.tzset()
