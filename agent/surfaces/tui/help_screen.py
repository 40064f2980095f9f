"""The help screen: every key and slash command."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.content import Content
from textual.widgets import Static

from agent.surfaces.tui import verdicts as v

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send the question (or run a /command)"),
    ("Up / Down", "recall earlier inputs"),
    ("Esc", "stop the answer; what streamed is kept"),
    ("1-9", "open source n (outside the input)"),
    ("  c / o / e", "in a source: copy its quote, open it at its line in $PAGER, $EDITOR"),
    ("Tab", "move between the input, the chat and the sources"),
    ("Ctrl+N", "new chat"),
    ("Ctrl+O", "open a saved chat"),
    ("Ctrl+E", "export this chat to Markdown"),
    ("Ctrl+T", "token meter: the last prompt, what was dropped"),
    ("Ctrl+S", "show or hide the sources panel"),
    ("Ctrl+Y", "copy the answer, its sources as path:line"),
    ("Ctrl+P", "palette: copy a quote, open a source, switch the folder or model"),
    ("F1 or ?", "this help (? when the input is empty)"),
    ("Ctrl+Q", "quit"),
)

SLASH: tuple[tuple[str, str], ...] = (
    ("/search QUERY", "the hits for QUERY, without the model"),
    ("/export [FILE]", "export to Markdown (add --drafts for unverified drafts)"),
    ("/clear", "start a new chat; the old one stays saved"),
    ("/help", "this help"),
)



def _rows(rows: tuple[tuple[str, str], ...], width: int) -> list[Content]:
    return [Content.assemble((f"  {key:<{width}}", "bold"), does) for key, does in rows]


def help_text() -> Content:
    lines = [Content.assemble(("Keys", "bold underline")), *_rows(KEYS, 12), Content("")]
    lines += [Content.assemble(("Commands", "bold underline")), *_rows(SLASH, 16), Content("")]
    lines += [Content.assemble(("Citations", "bold underline")), v.verdict_legend()]
    lines.append(Content("  made up: no excerpt has that number\n  unresolved: the chunk is not in the index\n"
                         "  Click a marker to open its source."))
    return Content("\n").join(lines)


class HelpScreen(ModalScreen[None]):
    COMPONENT_CLASSES = v.COMPONENT_CLASSES
    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Static("smoldocs — keys and commands", classes="dialog-title")
            with VerticalScroll():
                yield Static(help_text(), id="help-text")
            yield Static("Esc close", classes="dialog-hint")

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
