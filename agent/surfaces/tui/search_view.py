"""The hits of a `/search`, shown in the chat without asking the model; click one to read its chunk."""

from __future__ import annotations

from textual.content import Content
from textual.style import Style
from textual.widgets import Static

from rag.types import Hit


def hit_line(rank: int, hit: Hit) -> Content:
    heading = f" · {hit.heading}" if hit.heading else ""
    line = Content.assemble(
        (f"{rank}. ", "bold"),
        (hit.uri, "underline"),
        (f" {hit.where}{heading} · score {hit.score:.3f}", "dim"),
    )
    return line.stylize(Style.from_meta({"@click": f"screen.open_chunk({hit.chunk_id!r})"}))


def results_text(query: str, hits: list[Hit], error: str | None) -> Content:
    title = Content.assemble(("/search ", "dim"), (query, "bold"))
    if error:
        return Content.assemble(title, "\n", (error, "red"))
    if not hits:
        return Content.assemble(title, "\n", "no results")
    lines = [hit_line(rank, hit) for rank, hit in enumerate(hits, 1)]
    return Content("\n").join([title, *lines, Content.assemble(("click a hit to read it", "dim"))])


class SearchResultsView(Static):
    def __init__(self, query: str, hits: list[Hit], error: str | None = None, **kwargs) -> None:
        super().__init__(results_text(query, hits, error), **kwargs)
        self.query_text = query
        self.hits = hits
