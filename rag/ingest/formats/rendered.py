"""Rendered blocks to a Layout: for formats whose text is made, not copied (HTML, man pages, info manuals).

Each block keeps the source line it starts on, so chunks of the rendered text still cite lines of the file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rag.ingest.blocks import Unit
from rag.ingest.formats import Layout


@dataclass
class Block:
    kind: str  # "heading" | "para" | "pre"
    text: str
    line: int  # 1-based source line where it starts
    level: int = 0  # headings: their level; other blocks: their depth in definition lists (0: in none)
    term: str = ""  # a paragraph that opens a definition-list item: the term it defines


def rendered_layout(blocks: Iterable[Block]) -> Layout:
    """The Layout of rendered blocks: `## Title` headings, paragraphs, fenced preformatted text, with source lines."""
    parts: list[str] = []
    units: list[Unit] = []
    sources: list[int] = []
    pos = 0
    for block in blocks:
        if parts:
            parts.append("\n\n")
            pos += 2
            sources.append(sources[-1])  # the blank line between blocks
        if block.kind == "heading":
            text = f"{'#' * block.level} {block.text}"
            units.append(Unit("heading", pos, pos + len(text), level=block.level, title=block.text))
        elif block.kind == "pre":
            fence = "~~~" if "```" in block.text else "```"
            text = f"{fence}\n{block.text}\n{fence}"
            body_start = pos + len(fence) + 1
            units.append(Unit("fence", pos, pos + len(text), level=block.level, body_start=body_start,
                              body_end=body_start + len(block.text) + 1, opener=fence, closer=fence))
        else:
            text = block.text
            units.append(Unit("para", pos, pos + len(text), level=block.level, term=block.term))
        rows = text.count("\n") + 1
        if block.kind == "pre":  # the fence lines get the block's first line and the last line of its text
            sources.extend(block.line + max(0, min(r - 1, rows - 3)) for r in range(rows))
        else:
            sources.extend([block.line] * rows)
        parts.append(text)
        pos += len(text)
    return Layout("".join(parts), tuple(units), line_sources=tuple(sources))
