"""The help screen: every key and slash command."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown, Static

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the question (or run a /command)"),
    ("Up / Down", "recall earlier inputs"),
    ("Esc", "cancel the answer being written (what streamed is kept)"),
    ("1-9", "open that source of the latest answer (input not focused)"),
    ("Tab", "move between the input, the chat and the sources"),
    ("Ctrl+N", "new chat"),
    ("Ctrl+O", "open a saved chat"),
    ("Ctrl+E", "export this chat to Markdown"),
    ("Ctrl+T", "token meter: the last prompt's budget and omissions"),
    ("Ctrl+S", "show or hide the sources panel"),
    ("Ctrl+P", "command palette"),
    ("F1 or ?", "this help (? when the input is empty)"),
    ("Ctrl+Q", "quit"),
)

SLASH: tuple[tuple[str, str], ...] = (
    ("/search QUERY", "show the hits for QUERY without asking the model"),
    ("/export [FILE]", "export this chat to Markdown (default: the exports folder)"),
    ("/clear", "start a new chat (the old one stays in the chat list)"),
    ("/help", "this help"),
)

VERDICT_HELP = (
    "Citation colours: **[n]** supported, weak, unsupported, not yet judged, **[n?]** made up "
    "(no excerpt has that number), unresolved (the chunk is not in the index). Click a marker to open it."
)


def help_markdown() -> str:
    rows = ["| Key | Does |", "| --- | --- |", *(f"| {k} | {d} |" for k, d in KEYS)]
    rows += ["", "| Command | Does |", "| --- | --- |", *(f"| `{c}` | {d} |" for c, d in SLASH)]
    return "\n".join([*rows, "", VERDICT_HELP])


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static("smoldocs — keys and commands", classes="dialog-title")
            with VerticalScroll():
                yield Markdown(help_markdown(), id="help-text")
            yield Static("Esc close", classes="dialog-hint")

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
