"""The chat list: saved chats, newest first; Enter resumes one."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.chats import ChatInfo
from agent.tui.format import plural


def chat_line(info: ChatInfo, current: bool) -> Content:
    """Title, then when, how many questions, and a damaged chat's mark (it is listed, never hidden)."""
    turns = plural(info.turns, "question")
    marker = " (open)" if current else ""
    parts: list = [info.title, "\n", (f"{info.when} · {turns}{marker}", "dim")]
    if info.damaged_after is not None:
        parts.append((f" · damaged after turn {info.damaged_after}", "bold $warning"))
    return Content.assemble(*parts)


class ChatListScreen(ModalScreen[str | None]):
    """Dismissed with the chosen chat id, or None."""

    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def __init__(self, chats: list[ChatInfo], current: str | None = None) -> None:
        super().__init__()
        self.chats = chats
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="chats-dialog", classes="dialog"):
            yield Static("Saved chats", classes="dialog-title")
            if self.chats:
                yield OptionList(
                    *(Option(chat_line(c, c.chat_id == self.current), id=c.chat_id) for c in self.chats),
                    id="chat-list",
                )
            else:
                yield Static("No saved chats yet: every chat is saved as you go.")
            yield Static("Enter open · Esc close", classes="dialog-hint")

    @on(OptionList.OptionSelected, "#chat-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(result)
