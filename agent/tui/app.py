"""The smoldocs Textual app: `make_app(session_factory=..., store=...)` builds it; tests and the CLI call it."""

from __future__ import annotations

from typing import Iterable

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.widgets import Input

from agent.chats import ChatStore
from agent.errors import UsageError
from agent.tui.chat_screen import ChatScreen, SessionFactory


class SmoldocsApp(App):
    CSS_PATH = "smoldocs.tcss"
    TITLE = "smoldocs"

    def __init__(self, session_factory: SessionFactory, store: ChatStore, *, theme: str | None = None) -> None:
        super().__init__()
        self.session_factory = session_factory
        self.store = store
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

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        chat = self.chat
        yield SystemCommand("New chat", "Start a new chat; this one stays saved (Ctrl+N)", chat.action_new_chat)
        yield SystemCommand("Open a saved chat", "Resume an earlier chat (Ctrl+O)", chat.action_chat_list)
        yield SystemCommand("Export chat", "Write this chat to Markdown with sources as footnotes (Ctrl+E)", chat.action_export)
        yield SystemCommand("Token meter", "The last prompt's token budget and what was dropped (Ctrl+T)", chat.action_token_meter)
        yield SystemCommand("Sources panel", "Show or hide the sources of the answer (Ctrl+S)", chat.action_toggle_sources)
        yield SystemCommand("Search the docs", "Show hits without asking the model (/search QUERY)", self._start_search)
        yield SystemCommand("Cancel the answer", "Stop the answer being written, keeping what streamed (Esc)", chat.action_cancel)
        yield SystemCommand("Help", "Keys and commands (F1)", chat.action_help)
        yield from super().get_system_commands(screen)

    def _start_search(self) -> None:
        question = self.chat.query_one("#question", Input)
        question.value = "/search "
        question.cursor_position = len(question.value)
        question.focus()


def make_app(session_factory: SessionFactory, store: ChatStore | None = None, *, theme: str | None = None) -> SmoldocsApp:
    """The app; `session_factory(progress=callback)` runs in a worker thread and returns a ChatSession."""
    return SmoldocsApp(session_factory, store if store is not None else ChatStore(), theme=theme)
