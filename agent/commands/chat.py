"""`smoldocs chat` (and plain `smoldocs`): the Textual TUI over a chat session."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from agent.settings import POLICIES, Settings

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


@dataclass(frozen=True)
class Options:
    theme: str | None = None
    clipboard: str | None = None


def run(settings: Settings, options: Options) -> int:
    from agent.chats import ChatStore
    from agent.tui import make_app

    app = make_app(session_factory(settings), ChatStore(), theme=options.theme, clipboard=options.clipboard or "auto")
    app.run()
    return app.return_code or 0


def session_factory(settings: Settings):
    """`factory(progress=, docs=, model=)` for the app: the settings' session, or the folder or model the app's
    Switch passes (agent.tui.switching). A wrong --docs is one line here, before the screen opens; model and index
    errors show inside the app."""
    from agent.commands.common import load_embedder_from_args, open_chat_model
    from agent.errors import UsageError
    from agent.opening import store_url
    from agent.session import open_session
    from rag.ingest.corpus import check_docs_dir

    store = store_url(settings)
    first_docs = check_docs_dir(settings.docs) if settings.docs and not store else None
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
        return open_session(folder, path, tools=settings.agent.policy, progress=progress,
                            index_dir=settings.index if docs is None else None,  # --index (or --man's): the first folder's
                            settings=settings.agent, current_only=settings.current_only,
                            open_model=lambda: chat_model(path), live=True, store=store,
                            open_embedder=lambda: load_embedder_from_args(settings))

    return factory
