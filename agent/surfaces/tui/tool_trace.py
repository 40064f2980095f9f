"""The tool trace of one answer: each search_docs call with its query, hits, packed and dropped counts."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import Collapsible, Static

from agent.events import SearchFinished, SearchStarted, ToolStep
from agent.surfaces.tui.format import clip, plural


QUERY_WIDTH = 24  # keeps a call's title on one line in a narrow terminal


def call_title(event: SearchStarted | SearchFinished) -> str:
    """`search_docs "kv cache" → 5 hits, 3 packed, 2 dropped`."""
    title = f"search_docs “{clip(event.query, QUERY_WIDTH)}”"
    if isinstance(event, SearchStarted):
        return f"{title} …"
    if event.error:
        return f"{title} → error"
    if event.searched:  # a misspelt word was read as another
        title += f" as “{clip(event.searched, QUERY_WIDTH)}”"
    return f"{title} → {plural(len(event.hits), 'hit')}, {len(event.packed)} packed, {event.dropped} dropped"


def step_title(event: ToolStep) -> str:
    """`model tool step → 1 call, 1 not understood`."""
    title = f"model tool step → {plural(event.calls, 'call')}"
    return f"{title}, {len(event.parse_errors)} not understood" if event.parse_errors else title


def step_details(event: ToolStep) -> Content:
    """What the model wrote for its tool round, then why each unusable call was refused."""
    lines = [Content.assemble(("wrote: ", "dim"), clip(" ".join(event.text.split()), 200) or "(nothing)")]
    lines += [Content.assemble(("refused: ", "dim"), reason) for reason in event.parse_errors]
    return Content("\n").join(lines)


def call_details(event: SearchFinished) -> Content:
    """One line per hit: its excerpt number when packed, or why it was dropped."""
    if event.error:
        return Content.from_markup("[$error]$error[/]", error=event.error)
    if not event.hits:
        return Content("no results")
    omitted = {o.rank: o for o in event.omissions}
    numbers = iter(event.packed)
    lines = []
    for rank, hit in enumerate(event.hits, 1):
        if rank in omitted:
            status = f"dropped ({omitted[rank].why})"
        else:
            n = next(numbers, None)
            status = f"[{n}]" if n is not None else "kept"
        heading = f" · {hit.heading}" if hit.heading else ""
        lines.append(
            Content.from_markup(
                "$rank. [b]$status[/b] $uri [dim]$where$heading · score $score[/]",
                rank=str(rank),
                status=status,
                uri=hit.uri,
                where=hit.where,
                heading=heading,
                score=f"{hit.score:.3f}",
            )
        )
    return Content("\n").join(lines)


class ToolTrace(Vertical):
    """Collapsed by default: one collapsible per call, titled with its counts."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._calls: dict[int, tuple[Collapsible, Static]] = {}

    def compose(self) -> ComposeResult:
        return []

    def started(self, event: SearchStarted) -> None:
        hits = Static("searching…", classes="trace-hits")
        # The model's query is not markup: a Content title is shown as is. Collapsible hands its title to
        # CollapsibleTitle, which takes Content; Textual 8.2 annotates Collapsible's title as str only.
        call = Collapsible(hits, title=Content(call_title(event)), collapsed=True)  # type: ignore[arg-type]
        self._calls[event.call_id] = (call, hits)
        self.mount(call)
        self.display = True

    def step(self, event: ToolStep) -> None:
        """One of the model's tool rounds, so a reader sees what it asked for and what was refused."""
        call = Collapsible(Static(step_details(event), classes="trace-hits"), title=step_title(event), collapsed=True)
        if event.parse_errors:
            call.add_class("-error")
        self.mount(call)
        self.display = True

    def finished(self, event: SearchFinished) -> None:
        if event.call_id not in self._calls:
            self.started(SearchStarted(event.query, len(event.hits), call_id=event.call_id))
        call, hits = self._calls[event.call_id]
        call.title = Content(call_title(event))  # type: ignore[assignment]  # as in started: shown as is
        hits.update(call_details(event))
        if event.error:
            call.add_class("-error")
