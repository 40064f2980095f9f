"""The question input: Up/Down recall earlier inputs, `?` on an empty input opens help."""

from __future__ import annotations

from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class HistoryInput(Input):
    BINDINGS = [
        Binding("up", "recall(-1)", "Previous input", show=False),
        Binding("down", "recall(1)", "Next input", show=False),
    ]

    class HelpRequested(Message):
        """`?` typed into an empty input."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.history: list[str] = []
        self._position = 0  # len(history) means the draft being typed
        self._draft = ""

    def remember(self, text: str) -> None:
        if text and (not self.history or self.history[-1] != text):
            self.history.append(text)
        self._position = len(self.history)
        self._draft = ""

    def action_recall(self, step: int) -> None:
        if not self.history:
            return
        if self._position == len(self.history):
            self._draft = self.value
        self._position = min(len(self.history), max(0, self._position + step))
        self.value = self.history[self._position] if self._position < len(self.history) else self._draft
        self.cursor_position = len(self.value)

    def on_key(self, event: events.Key) -> None:
        # Runs before Input's own key handler; preventing the default keeps the `?` out of the input.
        if event.character == "?" and not self.value:
            event.stop()
            event.prevent_default()
            self.post_message(self.HelpRequested())
