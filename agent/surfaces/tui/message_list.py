"""The message list: each question, then its answer with the tool trace and a footer."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownStream

from agent.events import (
    shown_hits,
    Answer,
    AnswerFinished,
    ContextBuilt,
    ErrorEvent,
    Event,
    SearchFinished,
    SearchStarted,
    ToolStep,
    TextDelta,
)
from agent.surfaces.tui import verdicts as v
from agent.surfaces.tui.cited_markdown import CitedMarkdown
from agent.surfaces.tui.messages import AnswerSelected
from agent.surfaces.tui.tool_trace import ToolTrace
from rag.types import Hit

DRAFT_TITLE = "unverified draft: the model's words, not supported by the docs"

STATUS = {
    "answered": "✓ answered",
    "insufficient_evidence": "○ the docs do not say",
    "cancelled": "■ cancelled — what streamed is kept",
    "error": "✗ error",
    "interrupted": "✗ interrupted — the server stopped; what streamed is kept",
}


def welcome_text(docs: Path | str | None) -> Content:
    """What an empty chat shows: what to do, and what the citation colours mean."""
    where = f" in {docs}" if docs else ""
    return Content("\n").join(
        [
            Content(f"Ask a question about the docs{where}."),
            Content("Answers cite their sources as [n], coloured by whether the source supports the claim:"),
            v.verdict_legend(),
            Content("F1 keys · /search QUERY shows hits without the model · Ctrl+O saved chats"),
        ]
    )


class QuestionView(Static):
    def __init__(self, question: str, **kwargs) -> None:
        super().__init__(Content(question), **kwargs)


def footer_text(answer: Answer) -> str:
    """`✓ answered · 2 supported · 1 made up · 38 tokens · 24.1 tok/s`."""
    parts = [STATUS.get(answer.status, answer.status)]
    if answer.quoted:
        parts.append("quoted from the docs")
    if judged := v.summary(answer):
        parts.append(judged)
    if answer.completion_tokens:
        parts.append(f"{answer.completion_tokens} tokens")
    if answer.tokens_per_second:
        parts.append(f"{answer.tokens_per_second:.1f} tok/s")
    return " · ".join(parts)


def conflict_text(answer: Answer) -> Content:
    """`⚠ The sources disagree on context window: 512 tokens [2] (outdated); 2048 tokens [1].`, one line each."""
    return Content("\n").join([Content(f"⚠ {c.get('note', '')}") for c in answer.conflicts])


class AnswerView(Vertical):
    """Consumes the events of one turn; `answer` is set once it finishes."""

    def __init__(self, turn_id: int, question: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.turn_id = turn_id
        self.question = question
        self.events: list[Event] = []
        self.answer: Answer | None = None
        self.context: ContextBuilt | None = None
        self.error: str | None = None
        self.stale: dict[int, str] = {}  # saved answers only: number -> "changed" | "vanished"
        self._stream: MarkdownStream | None = None

    def compose(self) -> ComposeResult:
        yield ToolTrace(classes="trace")
        yield CitedMarkdown(turn_id=self.turn_id, classes="answer-text")
        with Collapsible(title=DRAFT_TITLE, collapsed=True, classes="answer-draft"):
            yield CitedMarkdown(classes="draft-text")  # markers coloured too, a made-up one flagged; no links
        yield Static("thinking…", classes="answer-footer")

    @property
    def finished(self) -> bool:
        return self.answer is not None

    def excerpts(self) -> dict[int, Hit]:
        """Ledger number -> hit, for every excerpt this turn showed the model."""
        return shown_hits(self.events)

    def on_click(self) -> None:
        self.post_message(AnswerSelected(self.turn_id))

    def _footer(self, text: str) -> None:
        self.query_one(".answer-footer", Static).update(Content(text))  # a query or error is not markup

    async def apply(self, event: Event, replay: bool = False) -> None:
        """Show one event; when replaying a saved chat, text deltas are skipped for the final text."""
        self.events.append(event)
        if isinstance(event, SearchStarted):
            self.query_one(ToolTrace).started(event)
            self._footer(f"searching the docs for “{event.query}”…")
        elif isinstance(event, SearchFinished):
            self.query_one(ToolTrace).finished(event)
            self._footer("reading the excerpts…")
        elif isinstance(event, ToolStep):
            self.query_one(ToolTrace).step(event)
        elif isinstance(event, ContextBuilt):
            self.context = event
        elif isinstance(event, TextDelta) and not replay:
            await self._write(event.text)
        elif isinstance(event, ErrorEvent):
            self.error = event.message
            self._footer(f"✗ {event.message}")
        elif isinstance(event, AnswerFinished):
            await self.finish(event.answer)

    async def _write(self, text: str) -> None:
        if self._stream is None:
            self._stream = Markdown.get_stream(self.query_one(CitedMarkdown))
            self._footer("writing…  (Esc cancels)")
        await self._stream.write(text)

    async def finish(self, answer: Answer) -> None:
        """Render the final text once, with every marker coloured by its verdict."""
        if self._stream is not None:
            await self._stream.stop()
            self._stream = None
        self.answer = answer
        markdown = self.query_one(CitedMarkdown)
        markdown.verdicts = v.verdict_map(answer)
        markdown.stale = frozenset(self.stale)
        text = answer.text.strip() or "_(no text)_"
        await markdown.update(text)
        if answer.conflicts and not self.query(".conflict-note"):
            await self.mount(Static(conflict_text(answer), classes="conflict-note"), after=markdown)
        if answer.draft.strip():
            draft = self.query_one(".draft-text", CitedMarkdown)
            draft.verdicts = markdown.verdicts
            await draft.update(answer.draft.strip())
        self.query_one(".answer-draft", Collapsible).set_class(bool(answer.draft.strip()), "-shown")
        footer = footer_text(answer)
        if self.stale:
            footer += f" · {len(self.stale)} stale (source changed since)"
        if self.error and answer.status == "error":
            footer += f": {self.error}"
        self._footer(footer)
        self.set_class(answer.status == "cancelled", "-cancelled")
        self.set_class(answer.status == "error", "-error")


class MessageList(VerticalScroll):
    """Starts at the top; once taller than the screen it follows the newest text, until the user scrolls up."""

    def follow(self, new_turn: bool = False) -> None:
        if new_turn or not self.is_anchored:
            if self.virtual_size.height > self.size.height:
                self.anchor()
            elif new_turn:
                self.anchor(False)
