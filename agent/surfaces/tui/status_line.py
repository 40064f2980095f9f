"""The status line: model, speed of the last answer, index size, docs folder, what search is missing, and how far
indexing behind the prompt has got."""

from __future__ import annotations

from pathlib import Path

from textual.content import Content
from textual.widgets import Static

from rag.printable import visible

BAR = 10


def embedding_text(done: int, total: int) -> str:
    """`semantic 40% ████░░░░░░ 800/2,000`: how much of the index search can rank by meaning yet."""
    share = done / total if total else 1.0
    filled = int(BAR * share)
    return f"semantic {share:.0%} {'█' * filled}{'░' * (BAR - filled)} {done:,}/{total:,} (BM25 for the rest)"


def status_text(
    model: str | None,
    tokens_per_second: float | None,
    index_size: int | None,
    docs: Path | None,
    note: str = "",
    notice: str = "",
    embedding: tuple[int, int] | None = None,
    chunking: tuple[int, int] | None = None,
) -> Content:
    parts: list = [("smoldocs", "bold")]
    parts += ["  ", visible(model or "loading…")]
    if note:  # a server backend: the tool policy in force and what only runs in-process
        parts += ["  ", (note, "dim")]
    if tokens_per_second:
        parts += ["  ", f"{tokens_per_second:.1f} tok/s"]
    if index_size is not None:
        parts += ["  ", f"index {index_size:,} chunks"]
    if docs is not None:
        parts += ["  ", (visible(docs.name or str(docs)), "dim")]
    if chunking is not None and chunking[0] < chunking[1]:
        parts += ["  ", (f"reading files {chunking[0]:,}/{chunking[1]:,} (search covers those read)", "$warning")]
    elif embedding is not None and embedding[0] < embedding[1] and not notice:
        parts += ["  ", (embedding_text(*embedding), "$warning")]
    if notice:  # search runs without a part (MiniLM not installed): a line of its own saying how to add it
        parts += ["\n", (notice, "$warning")]
    return Content.assemble(*parts)


class StatusLine(Static):
    def __init__(self, **kwargs) -> None:
        super().__init__(status_text(None, None, None, None), **kwargs)
        self.model: str | None = None
        self.tokens_per_second: float | None = None
        self.index_size: int | None = None
        self.docs: Path | None = None
        self.note = ""
        self.notice = ""
        self.embedding: tuple[int, int] | None = None  # (chunks embedded, chunks) while embeddings fill in
        self.chunking: tuple[int, int] | None = None  # (files chunked, files) while a re-index runs

    def set(self, **values) -> None:
        for name, value in values.items():
            setattr(self, name, value)
        self.update(
            status_text(self.model, self.tokens_per_second, self.index_size, self.docs, self.note, self.notice,
                        self.embedding, self.chunking)
        )
