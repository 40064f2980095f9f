"""Opening what a run uses from its Settings: the models (`open_models`) and the docs to search (`open_docs`).

The CLI commands, the chat app, `smoldocs mcp` and `serve`, and `smoldocs eval` all open things here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from agent.errors import UsageError
from agent.settings import Settings
from models.protocols import ChatModel, Embedder, Tokenizer

if TYPE_CHECKING:
    from rag.indexing.build import ProgressFn

EMBED_API_KEY_ENV = "SMOLDOCS_EMBED_API_KEY"
# A one-shot search or ask over man pages chunks new pages for at most this long, then answers over the pages read
# so far (BM25 first, as the chat app does) and leaves the rest to the next run or `smoldocs index`: all of man1
# here is 17,878 pages, 189,067 chunks and over 20 minutes of chunking on 2 shared cores (docs/results.md).
ONE_SHOT_MAN_CHUNK_BUDGET = 20.0


def open_chat_model(settings: Settings) -> ChatModel:
    """The chat model: a server at base_url (checked: reachable, model served, counts exact) or a GGUF in-process."""
    if not settings.base_url:
        from models.llama_cpp.chat import load_chat_model

        return load_chat_model(settings.model, n_ctx=settings.n_ctx or 2048)
    from models.openai_server.server import open_server_model

    decoding = settings.agent.decoding
    if decoding == "guarded":
        raise UsageError("--decoding guarded needs the model's logits, in-process only: use free or constrained with --base-url")
    config = server_config(settings)
    model = open_server_model(config)
    if decoding == "quote":
        raise UsageError("--decoding quote copies under a guard that runs in-process only: use free with a server")
    if decoding == "constrained" and not model.supports_grammar:
        raise UsageError(f"--decoding constrained needs a server grammar; the {model.info.family} server at "
                         f"{config.shown_url} has none: use free")
    return model


def server_config(settings: Settings):
    """The model server's settings (agent.config checked the timeouts); needs `settings.base_url`."""
    from models.openai_server.server_api import ServerConfig

    assert settings.base_url, "server_config needs a base_url"
    return ServerConfig(
        base_url=settings.base_url, api_key=settings.api_key, model=settings.model_name, tokenizer=settings.tokenizer,
        n_ctx=settings.n_ctx, connect_timeout=settings.connect_timeout,
        first_token_timeout=settings.first_token_timeout, token_timeout=settings.token_timeout,
        answer_timeout=settings.answer_timeout,
    )


def load_tokenizer(settings: Settings) -> Tokenizer:
    """The chat model's tokenizer (vocabulary only, fast), or the served model's with a base_url."""
    if settings.base_url:
        return open_chat_model(settings).tokenizer
    from models.llama_cpp.tokenizer import load_tokenizer as load_gguf_tokenizer

    return load_gguf_tokenizer(settings.model)


def load_embedder(settings: Settings) -> Embedder | None:
    """The embeddings server of embed_url, else MiniLM in-process (converted on first use); None without MiniLM."""
    if settings.embed_url:
        from models.openai_server.server_embedder import ServerEmbedder

        return ServerEmbedder(settings.embed_url, settings.embed_model, os.environ.get(EMBED_API_KEY_ENV))
    from models.llama_cpp.embedder import optional_embedder
    from models.query_tower import attach_tuned_queries

    embedder = optional_embedder()
    attach_tuned_queries(embedder, settings.queries == "tuned")  # one embedder a process: the latest settings decide
    return embedder


@dataclass(frozen=True)
class Loaders:
    """How each model is opened from Settings; the defaults are the real ones, a test or a script passes its own."""

    chat: Callable[[Settings], ChatModel] = open_chat_model
    tokenizer: Callable[[Settings], Tokenizer] = load_tokenizer
    embedder: Callable[[Settings], Embedder | None] = load_embedder


class Models:
    """The models of one run, each opened on first use and then kept: a command that only searches never loads the
    chat model, and one that reads a store never loads a tokenizer."""

    def __init__(self, settings: Settings, loaders: Loaders | None = None) -> None:
        self.settings = settings
        self.loaders = loaders or Loaders()

    @cached_property
    def chat(self) -> ChatModel:
        return self.loaders.chat(self.settings)

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The chat model's own tokenizer once that is open (the counts must match the model's), else a lighter one."""
        return self.chat.tokenizer if "chat" in self.__dict__ else self.loaders.tokenizer(self.settings)

    @cached_property
    def embedder(self) -> Embedder | None:
        return self.loaders.embedder(self.settings)


def open_models(settings: Settings, loaders: Loaders | None = None) -> Models:
    """The models `settings` name, opened lazily (see Models)."""
    return Models(settings, loaders)


def store_url(settings: Settings) -> str | None:
    """The store's PostgreSQL URL, checked; None when the docs are a folder's."""
    from models.redaction import redact_url
    from rag.postgres.schema import is_store_url

    store = settings.store
    if not store:
        return None
    if not is_store_url(store):
        raise UsageError(f"--store {redact_url(store)!r} is not a PostgreSQL URL: write it like postgresql://user@host/dbname")
    if settings.index:
        raise UsageError("--store and --index name two different indexes: give one of them")
    return store


def docs_root(settings: Settings):
    """The docs to index: the folder named (checked), --man's pages as they are, or the bundled docs."""
    from rag.ingest.corpus import check_docs_dir, default_docs_dir

    return check_docs_dir(settings.docs if settings.docs is not None else default_docs_dir())


def open_docs(
    settings: Settings,
    models: Models,
    *,
    live: bool = False,
    watch: bool = True,
    progress: ProgressFn | None = None,
    rebuild: bool = False,
    must_save: bool = False,
    embed_first: str | None = None,
) -> Any:
    """The docs of `settings` as a retriever: the PostgreSQL store, or the index of its docs sources.

    Typed Any for now: a HybridIndex, LiveIndex or PgIndex, whose `search(mode=)`, `fusion` and `update` callers
    use but rag.types.Retriever does not declare yet (its lifecycle protocol is the backends' work).

    Several sources (`settings.sources`, rag.indexing.collections) are searched as one index, each keeping its own
    stored index; one that cannot be opened is one notice and the others answer. The `--collection` filter
    (`settings.collections`) is the caller's to apply (a chat session's Within, search's doc ids).

    `live` (the chat app, MCP): ready once BM25 is, embeddings fill in behind and, with `watch`, changed files are
    re-indexed (rag.indexing.live); the caller closes it. Otherwise up to date before this returns, embedding for at
    most `settings.embed_budget` seconds (`embed_first`'s chunks first); man pages are read for at most
    ONE_SHOT_MAN_CHUNK_BUDGET seconds, the rest left to the next run (one notice). `must_save` (`smoldocs index`): a build
    that cannot be stored is an error, and a store is first brought up to date with the docs folder.
    """
    store = store_url(settings)
    if store is not None:
        return _open_store(settings, store, models, rebuild, must_save, progress)
    sources = settings.sources
    single = sources.items[0] if sources is not None and not sources.joined else None
    if live:
        from rag.indexing.live import open_live_index

        if sources is not None and sources.joined:
            return open_live_index(sources, models.tokenizer, models.embedder, progress=progress, watch=watch,
                                   current_only=settings.current_only)
        root = check_source(single.source) if single is not None else docs_root(settings)
        return open_live_index(root, models.tokenizer, models.embedder,
                               index_dir=single.index_dir if single is not None else settings.index,
                               progress=progress, watch=watch, current_only=settings.current_only,
                               collection=single.name if single is not None else "")
    budget = _chunk_budget(settings, must_save)
    options: dict[str, Any] = dict(rebuild=rebuild, must_save=must_save, current_only=settings.current_only,
                                   embed_budget=settings.embed_budget, embed_first=embed_first, chunk_budget=budget)
    if sources is not None and sources.joined:
        from rag.indexing.collections import open_collections

        index = open_collections(sources, models.tokenizer, models.embedder, progress=progress, **options)
    else:
        from rag.indexing.build import open_index

        if single is not None:
            index = open_index(single.source, models.tokenizer, models.embedder, index_dir=single.index_dir,
                               progress=progress, collection=single.name, **options)
        else:
            index = open_index(settings.docs, models.tokenizer, models.embedder, index_dir=settings.index,
                               progress=progress, **options)
    if budget is not None and index.update is not None and index.update.pending and progress is not None:
        from rag.indexing.build import IndexProgress

        progress(IndexProgress("notice", message=unread_notice(len(index.update.pending), len(index.doc_ids), budget)))
    return index


def _chunk_budget(settings: Settings, must_save: bool) -> float | None:
    """How long a one-shot command chunks new pages: ONE_SHOT_MAN_CHUNK_BUDGET when man pages are among the
    sources; None (everything) for folders, for `smoldocs index`, and with `--embed-budget all`."""
    from rag.ingest.man_pages import ManSource

    sources: list[Any] = [c.source for c in settings.sources or ()] or [settings.docs]
    if must_save or settings.embed_budget is None or not any(isinstance(s, ManSource) for s in sources):
        return None
    return ONE_SHOT_MAN_CHUNK_BUDGET


def unread_notice(unread: int, read: int, budget: float) -> str:
    """What a one-shot search over man pages says when it answered before every page was read."""
    return (f"{unread} pages not read yet ({budget:g} s of reading spent): searching the {read} read so far; the next "
            "run reads on, and `smoldocs index` (or --embed-budget all) reads them all")


def check_source(source):
    """A folder checked to be there (--man's pages as they are)."""
    from rag.ingest.corpus import check_docs_dir

    return check_docs_dir(source)


def _open_store(settings: Settings, store: str, models: Models, rebuild: bool, must_save: bool, progress):
    """The store, read only; with `must_save`, brought up to date with the docs sources first (`smoldocs index`)."""
    from rag.postgres.search import PgIndex

    if not must_save:
        return PgIndex(store, models.embedder, current_only=settings.current_only)
    from rag.postgres.ingest import ingest

    several = settings.sources if settings.sources is not None and settings.sources.joined else None
    root = several or docs_root(settings)  # several sources: each document's id names its collection (`notes:`)
    tokenizer, embedder = models.tokenizer, models.embedder
    update = ingest(store, root, tokenizer, embedder, rebuild=rebuild, progress=progress)
    return PgIndex(store, embedder, docs_dir=None if several else cast(Path, root), update=update)


def session_docs_dir(settings: Settings, index: Any) -> Path | str | None:
    """What a chat session says it searches: the folder, or the store (its password redacted); None for several
    sources (no one folder to show or to keep exports out of)."""
    if not settings.store and settings.sources is not None and settings.sources.joined:
        return None
    return index.index_dir if settings.store else index.docs_dir
