"""The loading panel: what the session is loading, with a progress bar while the index is built."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.widgets import ProgressBar, Static

from agent.surfaces.tui.messages import LoadProgress

if TYPE_CHECKING:
    from rag.indexing.build import IndexProgress


STAGES = {
    "scan": ("Building the index: scanning the docs", "files"),
    "chunk": ("Building the index: chunking", "files"),
    "read": ("Building the index: reading", "pages"),
    "embed": ("Building the index: embedding", "chunks"),
    "save": ("Saving the index", ""),
    "done": ("Index ready", ""),
}


def describe_progress(progress: IndexProgress | str) -> LoadProgress:
    """A LoadProgress for one rag.indexing.build.IndexProgress (or a plain string) from the session's loader."""
    if isinstance(progress, str):
        return LoadProgress(progress)
    stage, message = progress.stage, progress.message
    if stage == "notice" or stage not in STAGES:
        return LoadProgress(message or str(stage) or "Loading…", stage=str(stage))
    label, unit = STAGES[stage]
    if stage == "read" and message:  # the pages of one long file: name it
        label = f"{label} {message}"
    done, total = progress.done, progress.total
    if total and unit:
        label = f"{label} {done}/{total} {unit}"
    elif unit:  # scanning: the total is not known yet
        label = f"{label} ({done} {unit} found)"
    if stage == "chunk" and message:
        label = f"{label}: {message}"
    return LoadProgress(label, done, total or None, stage=stage)


class LoadingPanel(Vertical):
    def compose(self) -> ComposeResult:
        yield Static("Loading the model and the index…", id="loading-label")
        yield ProgressBar(id="loading-bar", show_eta=False)

    def show(self, progress: LoadProgress) -> None:
        self.query_one("#loading-label", Static).update(Content(progress.label))  # a file name is not markup
        progress_bar = self.query_one(ProgressBar)
        if progress.total:
            progress_bar.update(total=progress.total, progress=progress.done or 0)
