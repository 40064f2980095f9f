"""`smoldocs chat` (and plain `smoldocs`): the Textual TUI over a chat session."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.settings import POLICIES

if TYPE_CHECKING:
    from rag.indexing.collections import Collections

HELP = "chat with your docs in the terminal, every citation checked (the default command)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from agent.commands.common import add_current_only_option, add_decoding_options, add_index_options

    add_index_options(p)
    add_current_only_option(p)
    add_decoding_options(p)
    p.add_argument("--tools", choices=POLICIES, default=None, help="who decides the searches (default: auto)")
    p.add_argument("--theme", default=None, help="a Textual theme, e.g. textual-light (Ctrl+P > Theme switches live)")
    p.add_argument("--clipboard", choices=("auto", "osc52"), default=None,
                   help="how Copy reaches the clipboard: auto (default): wl-copy, xclip, xsel or pbcopy; osc52: through "
                   "the terminal, e.g. over SSH")
    from agent.commands.docs_sources import add_collection_option

    add_collection_option(p)


def run(args: argparse.Namespace) -> int:
    from agent.chats import ChatStore
    from agent.tui import make_app

    app = make_app(session_factory(args), ChatStore(), theme=args.theme, clipboard=args.clipboard or "auto")
    app.run()
    return app.return_code or 0


def session_factory(args: argparse.Namespace):
    """`factory(progress=, docs=, model=)` for the app: the flags' session, or the folder or model the app's Switch
    passes (agent.tui.switching). A wrong --docs is one line here, before the screen opens; model and index errors
    show inside the app."""
    from agent.commands.common import (
        decoding_from_args, load_embedder_from_args, open_chat_model, rerank_from_args, store_from_args,
    )
    from agent.errors import UsageError
    from agent.session import open_session
    from agent.settings import AgentSettings
    from rag.ingest.corpus import check_docs_dir

    from agent.commands.docs_sources import collections_from_args

    store = store_from_args(args)
    first_docs: Path | Collections | None = check_docs_dir(args.docs) if args.docs and not store else None
    first_index, named = args.index, dict[str, str]()
    collections = collections_from_args(args) if not store else None
    if collections is not None and collections.joined:  # several sources: each checked as it opens, one notice
        first_docs, first_index = collections, None
    elif collections is not None:  # one source: as it always was, its hits named
        single = collections.items[0]
        first_docs, first_index = check_docs_dir(single.source), args.index or single.index_dir
        named = {"collection": single.name}
    settings = AgentSettings(decoding=decoding_from_args(args), rerank=rerank_from_args(args))
    loaded: dict = {}  # the chat model by path, kept across a folder switch

    def chat_model(path):
        if str(path) not in loaded:
            loaded.clear()  # one model at a time: the app closed the session that used the old one
            loaded[str(path)] = open_chat_model(argparse.Namespace(**{**vars(args), "model": path}))
        return loaded[str(path)]

    def factory(progress=None, docs=None, model=None):
        if docs is not None and store:
            raise UsageError("a shared index (--store) has no folder to switch to: restart with --docs DIR")
        if model is not None and args.base_url:
            raise UsageError("the model is the server's (--base-url): restart with another --model-name")
        folder, path = (docs if docs is not None else first_docs), (model if model is not None else args.model)
        # --index (or --man's) is the first folder's; --collection and the collection names are the first docs' too
        first: dict[str, Any] = {"only": args.collections or (), **named} if docs is None else {}
        return open_session(folder, path, tools=args.tools or "auto", progress=progress,
                            index_dir=first_index if docs is None else None,
                            settings=settings, current_only=args.current_only, open_model=lambda: chat_model(path),
                            live=True, store=store, open_embedder=lambda: load_embedder_from_args(args), **first)

    return factory
