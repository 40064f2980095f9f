"""Options and loaders shared by the commands that use the docs index: --docs, --model, --index."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from agent.progress import ProgressBar
from rag.types import Retriever


def add_docs_option(p: argparse.ArgumentParser) -> None:
    from agent.commands.docs_sources import DocsAction

    p.add_argument("--docs", metavar="DIR", default=None, action=DocsAction,
                   help="folder of docs to search (default: bundled docs_corpus/); give it again for more folders, "
                   "each a collection named after its folder; man:1,8 reads man pages as --man does")
    from agent.commands.manuals import add_manual_options

    add_manual_options(p)


def add_store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store", metavar="URL", default=None,
        help="a shared index in PostgreSQL + pgvector, e.g. postgresql://reader@db/docs (prefer a password in "
        "~/.pgpass or $PGPASSWORD: a URL shows in `ps`); `index` fills it from --docs",
    )


def add_embed_options(p: argparse.ArgumentParser) -> None:
    server = p.add_argument_group("embeddings server (an OpenAI-compatible /v1/embeddings instead of MiniLM in-process)")
    server.add_argument("--embed-url", metavar="URL", default=None,
                        help="e.g. http://127.0.0.1:8081/v1 (llama-server --embedding, vLLM, Ollama, TEI); "
                        "key in $SMOLDOCS_EMBED_API_KEY")
    server.add_argument("--embed-model", metavar="NAME", default=None, help="the served embedding model (default: the only one)")


def add_model_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", metavar="PATH", default=None,
        help="chat GGUF to answer with and whose tokenizer measures chunks (default: $SMOLDOCS_MODEL or the packaged SmolLM2-135M)",
    )
    server = p.add_argument_group("model server (an OpenAI-compatible API instead of an in-process GGUF)")
    server.add_argument("--base-url", metavar="URL", default=None,
                        help="e.g. http://127.0.0.1:8080/v1 (llama-server, vLLM, Ollama; also $SMOLDOCS_BASE_URL)")
    server.add_argument("--api-key", metavar="KEY", default=None,
                        help="prefer $SMOLDOCS_API_KEY or api_key_file in config.toml: a flag shows in `ps`")
    server.add_argument("--model-name", metavar="NAME", default=None, help="the served model (default: the only one)")
    server.add_argument("--tokenizer", metavar="PATH", default=None,
                        help="a GGUF of the served model, for exact counts where the server serves no tokenizer")
    server.add_argument("--n-ctx", metavar="N", type=_positive_int, default=None,
                        help="context window when the server does not report one (default 2048)")
    server.add_argument("--connect-timeout", metavar="S", type=float, default=None, help="seconds (default 5)")
    server.add_argument("--first-token-timeout", metavar="S", type=float, default=None,
                        help="seconds to wait for the first piece of an answer (default 120)")
    server.add_argument("--token-timeout", metavar="S", type=float, default=None,
                        help="seconds to wait for each next piece once the answer began (default 60)")
    server.add_argument("--answer-timeout", metavar="S", type=float, default=None,
                        help="seconds a whole answer may take to stream (default 600)")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def open_chat_model(args: argparse.Namespace):
    """The chat model: a server at --base-url (checked: reachable, model served, counts exact) or a GGUF in-process."""
    base_url = getattr(args, "base_url", None)
    if not base_url:
        from models.llama_cpp.chat import load_chat_model

        return load_chat_model(getattr(args, "model", None), n_ctx=getattr(args, "n_ctx", None) or 2048)
    from agent.errors import UsageError
    from models.openai_server.server import open_server_model

    if getattr(args, "decoding", None) == "guarded":
        raise UsageError("--decoding guarded needs the model's logits, in-process only: use free or constrained with --base-url")
    config = server_config(args)
    model = open_server_model(config)
    if getattr(args, "decoding", None) == "quote":
        raise UsageError("--decoding quote copies under a guard that runs in-process only: use free with a server")
    if getattr(args, "decoding", None) == "constrained" and not model.supports_grammar:
        raise UsageError(f"--decoding constrained needs a server grammar; the {model.info.family} server at "
                         f"{config.shown_url} has none: use free")
    return model


def server_config(args: argparse.Namespace):
    """The model server's settings from flags already resolved by agent.config (which checked the timeouts)."""
    from models.openai_server.server_api import ServerConfig

    timeouts = {name: getattr(args, name) for name in ("connect_timeout", "first_token_timeout", "token_timeout", "answer_timeout")
                if getattr(args, name, None) is not None}
    return ServerConfig(
        base_url=args.base_url,
        api_key=getattr(args, "api_key", None),
        model=getattr(args, "model_name", None),
        tokenizer=getattr(args, "tokenizer", None),
        n_ctx=getattr(args, "n_ctx", None),
        **timeouts,
    )


def add_index_options(p: argparse.ArgumentParser) -> None:
    """--docs, --store, --model, --index and --quiet: everything open_index_from_args reads."""
    add_docs_option(p)
    add_store_option(p)
    add_model_option(p)
    add_embed_options(p)
    p.add_argument("--index", metavar="DIR", default=None, help="where the index lives (default: a cache folder per docs folder)")
    p.add_argument(
        "-q", "--quiet", action="store_true",
        help="no indexing progress (by default: a live line on a terminal, a line every few seconds elsewhere)",
    )


def add_current_only_option(p: argparse.ArgumentParser) -> None:
    """--current-only: leave outdated documents (archived, deprecated, superseded) out of every search."""
    p.add_argument("--current-only", action="store_true",
                   help="search only current documents: leave out archived, deprecated and superseded ones")


def add_embed_budget_option(p: argparse.ArgumentParser) -> None:
    """--embed-budget: how long a one-shot command embeds new chunks before answering."""
    from rag.indexing.fill import ONE_SHOT_BUDGET

    p.add_argument(
        "--embed-budget", type=_budget, default=ONE_SHOT_BUDGET, metavar="SECONDS",
        help=f"embed new chunks for at most this long, then answer: the rest rank by BM25 alone and the next run "
        f"continues (default {ONE_SHOT_BUDGET:g}; 'all' waits for every chunk)",
    )


def _budget(value: str) -> float | None:
    if value.strip().lower() == "all":
        return None
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds or 'all', got {value!r}") from None
    if not seconds >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {value}")
    return seconds


def add_decoding_options(p: argparse.ArgumentParser) -> None:
    """--decoding and --rerank; read back with decoding_from_args and rerank_from_args."""
    from agent.settings import DECODINGS, RERANK_DEFAULT

    p.add_argument(
        "--decoding", choices=DECODINGS, default=None,
        help="auto (default): extractive below 1B parameters, free above; free: unconstrained; guarded: free text in "
             "which only shown [n] can be written; constrained: every sentence ends with a shown [n]; extractive: no "
             "model text, only the best quotes",
    )


    p.add_argument(
        "--rerank", choices=("on", "off"), default=None,
        help="on: the trained cross-encoder picks the quotes and decides when the docs do not answer; off: the "
             "quote scorer's word and meaning features (default: settings file, else "
             + ("on" if RERANK_DEFAULT else "off") + ")",
    )


def decoding_from_args(args: argparse.Namespace) -> str:
    return args.decoding or "auto"


def rerank_from_args(args: argparse.Namespace) -> bool:
    """--rerank (or the settings file's `rerank`), else the default."""
    from agent.settings import RERANK_DEFAULT

    value = getattr(args, "rerank", None)
    return RERANK_DEFAULT if value is None else value == "on"


def load_tokenizer_from_args(args: argparse.Namespace):
    """The chat model's tokenizer named by --model (vocab only, fast), or the served model's with --base-url."""
    if getattr(args, "base_url", None):
        return open_chat_model(args).tokenizer
    from models.llama_cpp.tokenizer import load_tokenizer

    return load_tokenizer(getattr(args, "model", None))


def load_embedder_from_args(args: argparse.Namespace):
    """The embeddings server of --embed-url, else the MiniLM embedder (converted from the packaged model on first
    use); None if MiniLM is not installed."""
    if getattr(args, "embed_url", None):
        import os

        from models.openai_server.server_embedder import ServerEmbedder

        return ServerEmbedder(args.embed_url, getattr(args, "embed_model", None), os.environ.get("SMOLDOCS_EMBED_API_KEY"))
    from models.llama_cpp.embedder import optional_embedder

    return optional_embedder()


def open_index_from_args(
    args: argparse.Namespace,
    tokenizer=None,
    embedder=None,
    rebuild: bool = False,
    quiet: bool = False,
    stream: TextIO | None = None,
    must_save: bool = False,
    embed_budget: float | None = None,
    embed_first: str | None = None,
) -> Retriever:
    """The ready index for --docs/--index, updated if files changed, with progress on stderr (unless quiet).

    `embed_budget`/`embed_first`: see rag.indexing.build.open_index (one-shot commands answer before every chunk is embedded).
    With --store the index is the PostgreSQL store: `index` (must_save) brings it up to date with --docs first;
    every other command only reads it.
    """
    from agent.commands.docs_sources import collections_from_args
    from rag.indexing.build import open_index
    from rag.indexing.collections import open_collections

    store = store_from_args(args)
    collections = collections_from_args(args) if store is None else None
    if store is not None and not must_save:
        return open_store(store, embedder if embedder is not None else load_embedder_from_args(args),
                          current_only=bool(getattr(args, "current_only", False)))
    tokenizer = tokenizer or load_tokenizer_from_args(args)
    if embedder is None:
        embedder = load_embedder_from_args(args)
    bar = ProgressBar(stream or sys.stderr, quiet=quiet or getattr(args, "quiet", False))
    if store is not None:
        try:
            return ingest_store(store, getattr(args, "docs", None), tokenizer, embedder, rebuild=rebuild, progress=bar)
        finally:
            bar.close()
    options: dict[str, Any] = dict(rebuild=rebuild, must_save=must_save, current_only=bool(getattr(args, "current_only", False)),
                   embed_budget=embed_budget, embed_first=embed_first)
    try:
        if collections is not None and collections.joined:  # several sources, searched as one
            return open_collections(collections, tokenizer, embedder, progress=bar, **options)
        single = collections.items[0] if collections is not None else None
        return open_index(
            single.source if single else getattr(args, "docs", None), tokenizer, embedder,
            index_dir=single.index_dir if single else getattr(args, "index", None), progress=bar,
            collection=single.name if single else "", **options,
        )
    finally:
        bar.close()


def store_from_args(args: argparse.Namespace) -> str | None:
    """The --store URL (or store = ... in config.toml), checked to be a PostgreSQL URL; None without one."""
    from models.redaction import redact_url
    from rag.postgres.schema import is_store_url

    store = getattr(args, "store", None)
    if not store:
        return None
    if getattr(args, "more_docs", None):
        from agent.errors import UsageError

        raise UsageError("--store is filled from one --docs folder: give --docs once with --store")
    if not is_store_url(store):
        from agent.errors import UsageError

        raise UsageError(f"--store {redact_url(store)!r} is not a PostgreSQL URL: write it like postgresql://user@host/dbname")
    if getattr(args, "index", None):
        from agent.errors import UsageError

        raise UsageError("--store and --index name two different indexes: give one of them")
    return store


def open_store(store: str, embedder, current_only: bool = False, docs_dir=None, update=None) -> Retriever:
    """The PostgreSQL store as a retriever (rag.postgres.search.PgIndex); only reads it."""
    from rag.postgres.search import PgIndex

    return PgIndex(store, embedder, current_only=current_only, docs_dir=docs_dir, update=update)


def ingest_store(store: str, docs, tokenizer, embedder, rebuild: bool = False, progress=None):
    """Bring the store up to date with the docs folder (None: the bundled docs), then open it."""
    from rag.ingest.corpus import check_docs_dir, default_docs_dir
    from rag.postgres.ingest import ingest

    root = check_docs_dir(docs if docs is not None else default_docs_dir())
    update = ingest(store, root, tokenizer, embedder, rebuild=rebuild, progress=progress)
    return open_store(store, embedder, docs_dir=root, update=update)
