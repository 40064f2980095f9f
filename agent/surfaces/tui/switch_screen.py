"""The switch dialog: type a docs folder or a model file; Enter switches, a bad path is one line in the dialog."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from agent.errors import UsageError
from agent.surfaces.tui.switching import KINDS, checked_choice


class SwitchScreen(ModalScreen[Path | None]):
    """Dismissed with the checked path, or None (Esc)."""

    BINDINGS = [Binding("escape", "dismiss", "Keep")]

    def __init__(self, kind: str, current: str = "") -> None:
        super().__init__()
        self.kind = kind
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="switch-dialog", classes="dialog"):
            yield Static(f"Switch the {KINDS[self.kind]}", classes="dialog-title")
            yield Static(Content(f"Now: {self.current}" if self.current else "Now: the default"), classes="switch-now")
            placeholder = "a folder of docs, e.g. ~/notes" if self.kind == "docs" else "a GGUF chat model, e.g. ~/models/x.gguf"
            yield Input(placeholder=placeholder, id="switch-path")
            yield Static("", id="switch-error")
            yield Static("Enter switch · Esc keep this one · the chat goes on", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted, "#switch-path")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            self.dismiss(checked_choice(self.kind, event.value))
        except UsageError as exc:
            self.query_one("#switch-error", Static).update(Content(str(exc)))  # a path is not markup

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
