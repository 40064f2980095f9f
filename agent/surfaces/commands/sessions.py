"""The chat session of a one-shot command (`ask`, `eval`), opened with indexing progress on stderr."""

from __future__ import annotations

import sys

from agent.surfaces.progress import ProgressBar
from agent.session import ChatSession, start_session
from agent.settings import AgentSettings, Settings


def open_cli_session(
    settings: Settings, question: str | None = None, quiet: bool = False, agent: AgentSettings | None = None
) -> ChatSession:
    """The chat model, the embedder and the index of `settings`, the chunks `question` needs embedded first."""
    from agent.surfaces.commands.common import open_models

    bar = ProgressBar(sys.stderr, quiet=quiet or settings.quiet)
    try:
        return start_session(settings, open_models(settings), progress=bar, embed_first=question, agent=agent)
    finally:
        bar.close()
