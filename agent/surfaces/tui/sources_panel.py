"""The sources panel: the excerpts of the current answer, numbered as the model saw them, with verdicts."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from agent.events import Answer
from agent.surfaces.tui import verdicts as v
from agent.surfaces.tui.format import clip
from agent.surfaces.tui.messages import OpenCitation
from rag.types import Hit
from rag.verification.verdicts import CitationVerdict, Verdict


DETAIL_WIDTH = 30  # what fits under the uri in the panel's width


def source_line(n: int, hit: Hit | None, citation: CitationVerdict | None, verdict: str | None) -> Content:
    """`[1] ✓ docs/kv-cache.md` over `lines 10-24 · KV cache > Size`."""
    shown = verdict or Verdict.UNCITED
    mark = Verdict.of(shown).mark if verdict else " "
    head = Content.assemble((f"[{n}] {mark}", f".{v.css_class(shown)}"), " ")
    if hit is not None:
        detail = hit.where + (f" · {hit.heading}" if hit.heading else "")
        return head + Content.assemble(hit.uri, "\n     ", (clip(detail, DETAIL_WIDTH), "dim"))
    if verdict is Verdict.MADE_UP:
        return head + Content.assemble(("made up: no such excerpt", "dim"))
    uri = (citation.uri or citation.chunk_id) if citation else None
    return head + Content.assemble(uri or "unknown source", ("\n     not in the index" if verdict is Verdict.UNRESOLVED else "", "dim"))


class SourcesPanel(Vertical):
    """Shows one answer's excerpts; Enter or a click opens one."""

    COMPONENT_CLASSES = v.COMPONENT_CLASSES

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.turn_id: int | None = None

    def compose(self) -> ComposeResult:
        yield Static("Sources", classes="panel-title")
        yield OptionList(id="sources-list")
        yield Static("Ask a question: its sources show here.", classes="panel-hint")

    def show(self, turn_id: int | None, shown: dict[int, Hit], answer: Answer | None) -> None:
        """List excerpts `shown` to the model and every number `answer` cited, in number order."""
        self.turn_id = turn_id
        verdicts = v.verdict_map(answer) if answer else {}
        citations = {c.n: c for c in answer.citations} if answer else {}
        options = [
            Option(source_line(n, shown.get(n), citations.get(n), verdicts.get(n)), id=str(n))
            for n in sorted(set(shown) | set(verdicts))
        ]
        listing = self.query_one(OptionList)
        listing.clear_options()
        listing.add_options(options)
        hint = self.query_one(".panel-hint", Static)
        if turn_id is None:
            hint.update("Ask a question: its sources show here.")
        elif not options:
            hint.update("Searching the docs…" if answer is None else "No excerpts for this answer.")
        elif answer is None:
            hint.update("Verdicts appear when the answer is finished.")
        else:
            hint.update("Enter or 1-9 opens a source.")

    @on(OptionList.OptionSelected, "#sources-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(OpenCitation(int(event.option.id), self.turn_id))
