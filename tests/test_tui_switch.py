"""Switching the docs folder or the model from the command palette, through Pilot, over the real ChatSession.

The session factory records what it was asked for and opens a real session (scripted model) each time.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from textual.widgets import Input, Static

from agent.chats import ChatStore
from agent.errors import UsageError
from agent.surfaces.tui import make_app
from agent.surfaces.tui.message_list import AnswerView
from agent.surfaces.tui.switch_screen import SwitchScreen
from agent.surfaces.tui.switching import checked_choice
from test_tui import ask, wait_for
from tui_support import pilot_test, real_session

SIZE = (100, 32)
REPLY = "The kv cache of SmolLM2 takes about 90 MB [2]."


@pytest.fixture
def store(tmp_path):
    return ChatStore(tmp_path / "chats")


class Factory:
    """Opens a real session per call, recording the keyword arguments; `fail_on` makes one kind of switch fail."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.calls: list[dict] = []
        self.sessions: list = []
        self.closed: list = []
        self.fail_on = fail_on

    def __call__(self, progress=None, **choice):
        self.calls.append(choice)
        if self.fail_on and self.fail_on in choice:
            raise UsageError(f"cannot load {choice[self.fail_on]}: not a chat model")
        session, _, _ = real_session([REPLY, REPLY])
        session.docs_dir = choice.get("docs", session.docs_dir)
        session.close = lambda s=session: self.closed.append(s)
        self.sessions.append(session)
        return session


@asynccontextmanager
async def switching(store, factory):
    async with make_app(factory, store).run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pilot.app.chat.session is not None)
        yield pilot


async def switch(pilot, kind: str, text: str) -> SwitchScreen:
    """What the palette's "Switch the docs folder" / "Switch the model" runs, then typing `text` and Enter."""
    pilot.app.chat.action_switch(kind)
    await wait_for(pilot, lambda: isinstance(pilot.app.screen, SwitchScreen) and pilot.app.screen.query(Input))
    screen = pilot.app.screen
    screen.query_one(Input).value = text
    await pilot.press("enter")
    await pilot.pause()
    return screen


def notes(chat) -> list[str]:
    return [str(s.content) for s in chat.query(".switch-note").results(Static)]


@pilot_test
async def test_the_palette_offers_both_switches(store):
    async with switching(store, Factory()) as pilot:
        titles = [c.title for c in pilot.app.get_system_commands(pilot.app.screen)]
        assert "Switch the docs folder" in titles and "Switch the model" in titles


@pilot_test
async def test_switching_the_folder_notes_it_in_the_chat_which_goes_on_over_the_new_folder(store, tmp_path):
    notes_dir = tmp_path / "notes"
    notes_dir.mkdir()
    factory = Factory()

    async with switching(store, factory) as pilot:
        chat = pilot.app.chat
        first = await ask(pilot, "how big is the kv cache")
        await switch(pilot, "docs", str(notes_dir))
        await wait_for(pilot, lambda: chat.session is factory.sessions[-1] and len(factory.sessions) == 2)
        await pilot.pause()
        assert factory.calls == [{}, {"docs": notes_dir.resolve()}]
        assert factory.closed == [factory.sessions[0]]  # the old one closed: one live index at a time
        [note] = notes(chat)
        assert note.startswith(f"⇄ Switched the docs folder to {notes_dir.resolve()} (4 chunks)")
        assert chat.session.docs_dir == notes_dir.resolve()
        # The chat goes on: the earlier answer is still shown, the new session knows the earlier turn.
        assert first in chat.query(AnswerView) and len(chat.session.history) == 1
        second = await ask(pilot, "and how big is the kv cache again")
        assert second.answer.status == "answered" and len(chat.session.history) == 2
        # The note sits between the two answers, where the switch happened.
        children = list(chat.message_list.children)
        note_at = next(i for i, w in enumerate(children) if w.has_class("switch-note"))
        assert children.index(first) < note_at < children.index(second)


@pilot_test
async def test_a_switch_is_saved_with_the_chat_and_shown_again_where_it_happened_when_resumed(store, tmp_path):
    """The note is a line of the chat's file: a restarted app resumes the chat with it between the two answers.
    A switch before the first question is kept until that question creates the file."""
    from agent.chats.store import NOTE

    first_dir, notes_dir = tmp_path / "first", tmp_path / "notes"
    first_dir.mkdir()
    notes_dir.mkdir()
    factory = Factory()
    async with switching(store, factory) as pilot:
        chat = pilot.app.chat
        await switch(pilot, "docs", str(first_dir))  # before any question: the chat has no file yet
        await wait_for(pilot, lambda: len(factory.sessions) == 2 and chat.session is factory.sessions[1])
        await ask(pilot, "how big is the kv cache")
        await switch(pilot, "docs", str(notes_dir))
        await wait_for(pilot, lambda: len(factory.sessions) == 3 and chat.session is factory.sessions[2])
        await pilot.pause()
        shown = notes(chat)
        await ask(pilot, "and how big is it again")
    [info] = store.list_chats()
    saved = store.load(info.chat_id)
    assert [(n.after, n.text) for n in saved.notes] == [(0, shown[0]), (1, shown[1])]
    assert shown[1].startswith(f"⇄ Switched the docs folder to {notes_dir.resolve()}")
    records = [line for line in info.path.read_text().splitlines() if f'"type": "{NOTE}"' in line]
    assert len(records) == 2 and [t.question for t in saved.turns] == ["how big is the kv cache", "and how big is it again"]

    async with switching(store, Factory()) as pilot:  # a new app: the chat comes back from its file
        chat = pilot.app.chat
        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(chat.query(AnswerView)) == 2)
        await pilot.pause()
        assert notes(chat) == shown
        children = list(chat.message_list.children)
        at = [i for i, w in enumerate(children) if w.has_class("switch-note")]
        answers = [children.index(v) for v in chat.query(AnswerView)]
        assert at[0] < answers[0] < at[1] < answers[1]
        # The app's own export of the resumed chat keeps them there too (issue 39).
        md = chat.action_export(str(tmp_path / "chat.md")).read_text()
        italic = ["_" + note.replace("_", r"\_") + "_" for note in shown]  # the path's `_` escaped for Markdown
        places = [md.find(part) for part in (italic[0], "## how big is the kv cache", italic[1], "## and how big")]
        assert -1 not in places and places == sorted(places), md


@pilot_test
async def test_a_bad_folder_is_one_line_in_the_dialog_and_nothing_switches(store, tmp_path):
    factory = Factory()

    async with switching(store, factory) as pilot:
        screen = await switch(pilot, "docs", str(tmp_path / "no-such-folder"))
        assert pilot.app.screen is screen  # still open: fix the path or Esc
        error = str(screen.query_one("#switch-error", Static).content)
        assert error == f"docs folder not found: {tmp_path / 'no-such-folder'}: give a folder of .md/.txt/.rst/.adoc files"
        await pilot.press("escape")
        await pilot.pause()
        assert factory.calls == [{}] and not notes(pilot.app.chat)


@pilot_test
async def test_a_model_switch_that_fails_is_noted_and_the_one_before_opens_again(store, tmp_path):
    model = tmp_path / "other.gguf"
    model.write_bytes(b"GGUF")
    factory = Factory(fail_on="model")

    async with switching(store, factory) as pilot:
        chat = pilot.app.chat
        await switch(pilot, "model", str(model))
        await wait_for(pilot, lambda: len(factory.calls) == 3 and chat.session is not None)
        assert factory.calls == [{}, {"model": model.resolve()}, {}]
        [note] = notes(chat)
        assert note == (f"✗ Could not switch the model to {model.resolve()}: cannot load {model.resolve()}: not a chat "
                        "model. Back on the one before.")
        assert chat.choice == {}
        view = await ask(pilot, "how big is the kv cache")  # the chat still answers
        assert view.answer.status == "answered"


@pilot_test
async def test_switching_the_model_passes_it_to_the_factory_and_notes_its_name(store, tmp_path):
    model = tmp_path / "other.gguf"
    model.write_bytes(b"GGUF")
    factory = Factory()

    async with switching(store, factory) as pilot:
        chat = pilot.app.chat
        await switch(pilot, "model", str(model))
        await wait_for(pilot, lambda: len(factory.sessions) == 2 and chat.session is factory.sessions[1])
        await pilot.pause()
        assert factory.calls[-1] == {"model": model.resolve()}
        assert notes(chat) == ["⇄ Switched the model to scripted; the chat goes on with it."]


def test_only_a_folder_or_a_gguf_file_can_be_switched_to(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match=r"not a folder: .*notes.txt: give a folder, not a file"):
        checked_choice("docs", str(tmp_path / "notes.txt"))
    with pytest.raises(UsageError, match=r"notes.txt is not a .gguf file: give the path of a GGUF chat model"):
        checked_choice("model", str(tmp_path / "notes.txt"))
    with pytest.raises(UsageError, match="give the path of a docs folder, or Esc"):
        checked_choice("docs", "  ")
    assert checked_choice("docs", str(tmp_path)) == Path(tmp_path).resolve()


def chat_args(tmp_path, monkeypatch, *flags: str):
    """`smoldocs chat FLAGS` parsed and resolved as the CLI does, with an empty settings file: its Settings."""
    from agent import config
    from agent.cli import parse

    monkeypatch.setenv(config.CONFIG_ENV, str(tmp_path / "no-config.toml"))
    return parse(["chat", *flags]).settings


def test_the_chat_factory_opens_a_switched_folder_in_its_own_index_and_keeps_the_model(tmp_path, monkeypatch):
    from agent.surfaces.commands import chat

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    opened, models = [], []
    monkeypatch.setattr("agent.session.open_session", lambda *a, **kw: opened.append((a, kw)) or kw["open_model"]())
    monkeypatch.setattr("agent.surfaces.commands.common.open_chat_model", lambda args: models.append(args.model) or object())
    factory = chat.session_factory(chat_args(tmp_path, monkeypatch, "--docs", str(first), "--index", str(tmp_path / "ix")))
    start = factory(progress=None)
    switched = factory(progress=None, docs=second.resolve())
    assert [a[0] for a, _ in opened] == [first.resolve(), second.resolve()]
    assert [kw["index_dir"] for _, kw in opened] == [tmp_path / "ix", None]  # --index was the first folder's
    assert start is switched and models == [None]  # the model loaded once, kept across the folder switch
    factory(progress=None, model=tmp_path / "other.gguf")
    assert models == [None, tmp_path / "other.gguf"]


def test_the_chat_factory_refuses_what_cannot_be_switched_in_one_line(tmp_path, monkeypatch):
    from agent.surfaces.commands import chat

    served = chat.session_factory(chat_args(tmp_path, monkeypatch, "--base-url", "http://127.0.0.1:9/v1"))
    with pytest.raises(UsageError, match=r"^the model is the server's \(--base-url\): restart with another --model-name$"):
        served(progress=None, model=tmp_path / "other.gguf")
    shared = chat.session_factory(chat_args(tmp_path, monkeypatch, "--store", "postgresql://reader@db/docs"))
    with pytest.raises(UsageError, match=r"^a shared index \(--store\) has no folder to switch to"):
        shared(progress=None, docs=tmp_path)
