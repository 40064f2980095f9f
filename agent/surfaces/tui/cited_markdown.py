"""Markdown whose `[n]` markers are coloured by verdict and open their citation when clicked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.content import Content
from textual.style import Style
from textual.widgets import Markdown
from textual.widgets.markdown import MarkdownBlock

from agent.surfaces.tui import verdicts as v
from rag.verification.verdicts import Verdict


def cite_content(
    content: Content, verdicts: dict[int, Verdict], turn_id: int | None, stale: frozenset[int] = frozenset()
) -> Content:
    """`content` with each citation number styled by its verdict; made-up numbers get a `?` and no link; a number
    whose source changed since a saved answer was given is styled stale, whatever its verdict was."""
    found = list(v.markers(content.plain))
    if not found:
        return content
    out = Content("")
    position = 0
    for n, start, end in found:
        verdict = verdicts.get(n, Verdict.CITED)
        piece = content[start:end]
        if verdict is Verdict.MADE_UP:
            digits_end = piece.plain.index(str(n)) + len(str(n))
            piece = piece[:digits_end] + "?" + piece[digits_end:]
        piece = piece.stylize(f".{v.STALE_CLASS if n in stale else v.css_class(verdict)}")
        if verdict is not Verdict.MADE_UP and turn_id is not None:
            piece = piece.stylize(Style.from_meta({"@click": f"screen.open_citation({n}, {turn_id})"}))
        out = out + content[position:start] + piece
        position = end
    return out + content[position:]


# The mixin is typed as the block it is mixed into; at run time its base is object, so each block class keeps its
# own place in the method order.
if TYPE_CHECKING:
    _Block = MarkdownBlock
else:
    _Block = object


class _Citing(_Block):
    """Mixed into a Markdown block: restyle its inline content once built."""

    def build_from_token(self, token) -> None:
        super().build_from_token(token)
        self.auto_links = False  # a link colour would hide the verdict colour of clickable markers
        markdown = self._markdown
        if isinstance(markdown, CitedMarkdown) and isinstance(self.content, Content):
            self.set_content(cite_content(self.content, markdown.verdicts, markdown.turn_id, markdown.stale))


_CITING: dict[type, type] = {}


def _citing(block_class: type[MarkdownBlock]) -> type[MarkdownBlock]:
    if block_class not in _CITING:
        _CITING[block_class] = type(f"Cited{block_class.__name__}", (_Citing, block_class), {})
    return _CITING[block_class]


class CitedMarkdown(Markdown):
    """An answer. Set `verdicts` (number -> verdict) before `update` to colour its markers."""

    COMPONENT_CLASSES = v.COMPONENT_CLASSES

    def __init__(self, markdown: str | None = None, *, turn_id: int | None = None, verdicts=None, **kwargs):
        super().__init__(markdown, open_links=False, **kwargs)
        self.turn_id = turn_id
        self.verdicts: dict[int, Verdict] = dict(verdicts or {})
        self.stale: frozenset[int] = frozenset()  # numbers whose source changed since a saved answer

    def get_block_class(self, block_name: str) -> type[MarkdownBlock]:
        return _citing(super().get_block_class(block_name))
