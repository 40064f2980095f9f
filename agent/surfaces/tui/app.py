"""The smoldocs Textual app: `make_app(session_factory=..., store=...)` builds it; tests and the CLI call it."""

from __future__ import annotations

import os
import shlex
import subprocess
from functools import partial
from typing import Callable, Iterable, Mapping, Sequence

from textual.app import App, SuspendNotSupported, SystemCommand
from textual.screen import Screen
from textual.widgets import Input

from agent.chats import ChatStore
from agent.errors import UsageError
from agent.surfaces.tui.chat_screen import ChatScreen, SessionFactory
from agent.surfaces.tui.clipboard import Clipboard, ClipboardUnavailable
from agent.surfaces.tui.messages import CopyQuote, OpenSource
from agent.surfaces.tui.open_source import Launch
from rag.printable import one_line

ProgramRunner = Callable[[Sequence[str], Mapping[str, str]], int]  # (argv, env) -> exit status


def run_program(argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Run a pager or an editor on the terminal the app handed over; no shell, so names stay arguments."""
    return subprocess.run(list(argv), env=dict(env), check=False).returncode


class SmoldocsApp(App):
    CSS_PATH = "smoldocs.tcss"
    TITLE = "smoldocs"

    def __init__(self, session_factory: SessionFactory, store: ChatStore, *, theme: str | None = None,
                 clipboard: str = "auto", runner: ProgramRunner = run_program) -> None:
        super().__init__()
        self.session_factory = session_factory
        self.store = store
        self.copier = Clipboard(clipboard)  # App.clipboard is Textual's own copy of the text
        self.runner = runner
        if theme:
            if theme not in self.available_themes:
                choices = ", ".join(sorted(self.available_themes))
                raise UsageError(f"unknown theme {theme!r}: choose one of {choices}")
            self.theme = theme

    def get_default_screen(self) -> Screen:
        return ChatScreen(self.session_factory, self.store)

    @property
    def chat(self) -> ChatScreen:
        """The chat screen, under whatever dialog is open."""
        return next(s for s in self.screen_stack if isinstance(s, ChatScreen))

    def copy_to_clipboard(self, text: str) -> None:
        """Every copy, Textual's own (a selection, Ctrl+C in the input) included, goes the user's chosen way."""
        self.copy_text(text, "the selection")

    def copy_text(self, text: str, what: str) -> bool:
        """Copy `text` (cleaned of control sequences) and say so in one line; False when nothing could take it."""
        try:
            how = self.copier.copy(text, terminal=super().copy_to_clipboard)
        except ClipboardUnavailable as exc:
            self.chat.notify(f"Could not copy: {exc}", severity="warning", timeout=10)
            return False
        self.chat.notify(f"Copied {what} with {how}.")
        return True

    def on_copy_quote(self, message: CopyQuote) -> None:
        self.chat.copy_quote(message.info)

    def on_open_source(self, message: OpenSource) -> None:
        self.chat.open_source(message.info, message.opener)

    def run_outside(self, launch: Launch) -> int | None:
        """Hand the terminal to a pager or an editor and come back to the same screen; None when it did not run."""
        code: int | None = None
        failed = ""
        try:
            with self.suspend():
                try:
                    code = self.runner(launch.argv, {**os.environ, **launch.env})
                except OSError as exc:  # caught inside: a failure must not leave the app suspended
                    failed = f"Could not run {one_line(launch.argv[0])}: {exc.strerror or exc}: set $PAGER or $EDITOR"
        except SuspendNotSupported:
            self.chat.notify(f"This terminal cannot hand over the screen: run {one_line(shlex.join(launch.argv))}",
                             severity="warning", timeout=12)
            return None
        if failed:
            self.chat.notify(failed, severity="error")
        elif code:
            self.chat.notify(f"{one_line(launch.argv[0])} exited with status {code}.", severity="warning")
        return code

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        chat = self.chat
        yield SystemCommand("New chat", "Start a new chat; this one stays saved (Ctrl+N)", chat.action_new_chat)
        yield SystemCommand("Open a saved chat", "Resume an earlier chat (Ctrl+O)", chat.action_chat_list)
        yield SystemCommand("Export chat", "Write this chat to Markdown with sources as footnotes (Ctrl+E)", chat.action_export)
        yield SystemCommand("Token meter", "The last prompt's token budget and what was dropped (Ctrl+T)", chat.action_token_meter)
        yield SystemCommand("Sources panel", "Show or hide the sources of the answer (Ctrl+S)", chat.action_toggle_sources)
        yield SystemCommand("Copy the answer", "The current answer with its sources as path:line (Ctrl+Y)", chat.action_copy_answer)
        for n in chat.source_numbers():
            yield SystemCommand(f"Copy a quote from [{n}]", f"Source [{n}]'s evidence sentence with its path:line",
                                partial(chat.action_copy_quote, n))
            yield SystemCommand(f"Open [{n}] in the pager", f"Source [{n}] at its line in $PAGER (less); q comes back",
                                partial(chat.action_open_source, n, "pager"))
            yield SystemCommand(f"Open [{n}] in the editor", f"Source [{n}] at its line in $VISUAL or $EDITOR (vi)",
                                partial(chat.action_open_source, n, "editor"))
        yield SystemCommand("Switch the docs folder", "Search another folder; the chat goes on and notes the switch",
                            partial(chat.action_switch, "docs"))
        yield SystemCommand("Switch the model", "Answer with another GGUF model; the chat goes on and notes the switch",
                            partial(chat.action_switch, "model"))
        yield SystemCommand("Search the docs", "Show hits without asking the model (/search QUERY)", self._start_search)
        yield SystemCommand("Cancel the answer", "Stop the answer being written, keeping what streamed (Esc)", chat.action_cancel)
        yield SystemCommand("Help", "Keys and commands (F1)", chat.action_help)
        yield from super().get_system_commands(screen)

    def _start_search(self) -> None:
        question = self.chat.query_one("#question", Input)
        question.value = "/search "
        question.cursor_position = len(question.value)
        question.focus()


def make_app(session_factory: SessionFactory, store: ChatStore | None = None, *, theme: str | None = None,
             clipboard: str = "auto", runner: ProgramRunner = run_program) -> SmoldocsApp:
    """The app; `session_factory(progress=callback)` runs in a worker thread and returns a ChatSession.

    `clipboard`: "auto" (a local tool) or "osc52" (the terminal); `runner(argv, env)` runs a pager or an editor."""
    return SmoldocsApp(session_factory, store if store is not None else ChatStore(), theme=theme,
                       clipboard=clipboard, runner=runner)
