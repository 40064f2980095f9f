"""The chat list: saved chats, newest first, filtered by their text as you type; Enter resumes one."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from agent.chats import ChatInfo
from agent.surfaces.tui.format import plural


def chat_line(info: ChatInfo, current: bool) -> Content:
    """Title, then when, how many questions, and a damaged chat's mark (it is listed, never hidden)."""
    turns = plural(info.turns, "question")
    marker = " (open)" if current else ""
    parts: list = [info.title, "\n", (f"{info.when} · {turns}{marker}", "dim")]
    if info.damaged_after is not None:
        parts.append((f" · damaged after turn {info.damaged_after}", "bold $warning"))
    return Content.assemble(*parts)


class ChatListScreen(ModalScreen[str | None]):
    """Dismissed with the chosen chat id, or None. The filter keeps the chats holding every word typed."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("down", "move(1)", show=False),
        Binding("up", "move(-1)", show=False),
    ]

    def __init__(self, chats: list[ChatInfo], current: str | None = None) -> None:
        super().__init__()
        self.chats = chats
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="chats-dialog", classes="dialog"):
            yield Static("Saved chats", classes="dialog-title")
            if self.chats:
                yield Input(placeholder="Filter: words in a question or an answer", id="chat-filter")
                yield OptionList(*self._options(self.chats), id="chat-list")
                yield Static("", id="chat-filter-none")
            else:
                yield Static("No saved chats yet: every chat is saved as you go.")
            yield Static("Type to filter · ↑/↓ choose · Enter open · Esc close", classes="dialog-hint")

    def _options(self, chats: list[ChatInfo]) -> list[Option]:
        return [Option(chat_line(c, c.chat_id == self.current), id=c.chat_id) for c in chats]

    def on_mount(self) -> None:
        for box in self.query("#chat-filter").results(Input):
            box.focus()
        self.query("#chat-filter-none").set(display=False)

    @on(Input.Changed, "#chat-filter")
    def _filter(self, event: Input.Changed) -> None:
        shown = [c for c in self.chats if c.matches(event.value)]
        listing = self.query_one(OptionList)
        listing.clear_options()
        listing.add_options(self._options(shown))
        if shown:
            listing.highlighted = 0
        none = self.query_one("#chat-filter-none", Static)
        none.update(Content(f"No saved chat holds “{event.value.strip()}”."))  # typed text is not markup
        none.display = not shown

    @on(Input.Submitted, "#chat-filter")
    def _open_highlighted(self, event: Input.Submitted) -> None:
        event.stop()
        listing = self.query_one(OptionList)
        if listing.option_count:
            self.dismiss(listing.get_option_at_index(listing.highlighted or 0).id)

    def action_move(self, step: int) -> None:
        listing = self.query_one(OptionList) if self.chats else None
        if listing is not None and listing.option_count:
            listing.highlighted = ((listing.highlighted or 0) + step) % listing.option_count

    @on(OptionList.OptionSelected, "#chat-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
