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


@dataclass(frozen=True)
class Options:
    theme: str | None = None


def run(settings: Settings, options: Options) -> int:
    from agent.chats import ChatStore
    from agent.commands.common import open_models
    from agent.opening import store_url
    from agent.session import start_session
    from agent.tui import make_app
    from rag.ingest.corpus import check_docs_dir

    # A wrong --docs is a one-line error before the screen opens; model and index errors show inside the app.
    if settings.docs and not store_url(settings):
        settings = settings.with_(docs=check_docs_dir(settings.docs))

    def session_factory(progress=None):
        return start_session(settings, open_models(settings), live=True, progress=progress)

    app = make_app(session_factory, ChatStore(), theme=options.theme)
    app.run()
    return app.return_code or 0
