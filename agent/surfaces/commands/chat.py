"""`smoldocs chat` (and plain `smoldocs`): the Textual TUI over a chat session."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent.settings import POLICIES, Settings

if TYPE_CHECKING:
    from rag.indexing.collections import Collections
    from rag.ingest.man_pages import ManSource

if TYPE_CHECKING:
    from rag.indexing.collections import Collections

HELP = "chat with your docs in the terminal, every citation checked (the default command)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from agent.surfaces.commands.common import add_current_only_option, add_decoding_options, add_index_options

    add_index_options(p)
    add_current_only_option(p)
    add_decoding_options(p)
    p.add_argument("--tools", choices=POLICIES, default=None, help="who decides the searches (default: auto)")
    p.add_argument("--theme", default=None, help="a Textual theme, e.g. textual-light (Ctrl+P > Theme switches live)")
    p.add_argument("--clipboard", choices=("auto", "osc52"), default=None,
                   help="how Copy reaches the clipboard: auto (default): wl-copy, xclip, xsel or pbcopy; osc52: through "
                   "the terminal, e.g. over SSH")
    from agent.surfaces.commands.docs_sources import add_collection_option

    add_collection_option(p)


@dataclass(frozen=True)
class Options:
    theme: str | None = None
    clipboard: str | None = None


def run(settings: Settings, options: Options) -> int:
    from agent.chats import ChatStore
    from agent.surfaces.tui import make_app

    app = make_app(session_factory(settings), ChatStore(), theme=options.theme, clipboard=options.clipboard or "auto")
    app.run()
    return app.return_code or 0


def session_factory(settings: Settings):
    """`factory(progress=, docs=, model=)` for the app: the settings' session, or the folder or model the app's
    Switch passes (agent.surfaces.tui.switching). A wrong --docs is one line here, before the screen opens; model and index
    errors show inside the app."""
    from agent.surfaces.commands.common import load_embedder_from_args, open_chat_model
    from agent.errors import UsageError
    from agent.opening import store_url
    from agent.session import open_session
    from rag.ingest.corpus import check_docs_dir

    store = store_url(settings)
    first_docs: Path | ManSource | Collections | None = (
        check_docs_dir(settings.docs) if settings.docs and not store else None)
    first_index, named = settings.index, ""
    sources = settings.sources if not store else None
    if sources is not None and sources.joined:  # several sources: each checked as it opens, one notice
        first_docs, first_index = sources, None
    elif sources is not None:  # one source: as it always was, its hits named
        single = sources.items[0]
        first_docs, first_index = check_docs_dir(single.source), settings.index or single.index_dir
        named = single.name
    loaded: dict = {}  # the chat model by path, kept across a folder switch

    def chat_model(path):
        if str(path) not in loaded:
            loaded.clear()  # one model at a time: the app closed the session that used the old one
            loaded[str(path)] = open_chat_model(settings.with_(model=path))
        return loaded[str(path)]

    def factory(progress=None, docs=None, model=None):
        if docs is not None and store:
            raise UsageError("a shared index (--store) has no folder to switch to: restart with --docs DIR")
        if model is not None and settings.base_url:
            raise UsageError("the model is the server's (--base-url): restart with another --model-name")
        folder, path = (docs if docs is not None else first_docs), (model if model is not None else settings.model)
        # --index (or --man's) is the first folder's; --collection and the collection names are the first docs' too
        return open_session(folder, path, tools=settings.agent.policy, progress=progress,
                            index_dir=first_index if docs is None else None,
                            only=list(settings.collections) or () if docs is None else (),
                            collection=named if docs is None else "",
                            settings=settings.agent, current_only=settings.current_only,
                            open_model=lambda: chat_model(path), live=True, store=store,
                            open_embedder=lambda: load_embedder_from_args(settings))

    return factory
