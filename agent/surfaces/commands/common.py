"""Options and loaders shared by the commands that use the docs index: --docs, --model, --index."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from agent import opening
from agent.opening import Loaders, Models
from agent.surfaces.progress import ProgressBar
from agent.settings import Settings
from models.protocols import ChatModel, Embedder, Tokenizer


def add_docs_option(p: argparse.ArgumentParser) -> None:
    from agent.surfaces.commands.docs_sources import DocsAction

    p.add_argument("--docs", metavar="DIR", default=None, action=DocsAction,
                   help="folder of docs to search (default: bundled docs_corpus/); give it again for more folders, "
                   "each a collection named after its folder; man:1,8 reads man pages as --man does")
    p.set_defaults(more_docs=[])  # each --docs after the first (agent.surfaces.commands.docs_sources.add_source)
    from agent.surfaces.commands.manuals import add_manual_options

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
    p.add_argument("--queries", choices=("tuned", "base"), default=None,
                   help="the question's vectors: tuned, from the question encoders trained for finding the passage that "
                        "answers and the sentence to quote (default), or base, MiniLM's own (in-process MiniLM only)")


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
    server.add_argument("--n-ctx", metavar="N", type=positive_int, default=None,
                        help="context window when the server does not report one (default 2048)")
    server.add_argument("--connect-timeout", metavar="S", type=float, default=None, help="seconds (default 5)")
    server.add_argument("--first-token-timeout", metavar="S", type=float, default=None,
                        help="seconds to wait for the first piece of an answer (default 120)")
    server.add_argument("--token-timeout", metavar="S", type=float, default=None,
                        help="seconds to wait for each next piece once the answer began (default 60)")
    server.add_argument("--answer-timeout", metavar="S", type=float, default=None,
                        help="seconds a whole answer may take to stream (default 600)")  # fmt: skip


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1, or one clear error ("abc" included)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def add_index_options(p: argparse.ArgumentParser) -> None:
    """--docs, --store, --model, --index and --quiet: everything agent.opening reads."""
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
    """--decoding and --rerank: Settings.agent's decoding and rerank."""
    from agent.settings import DECODINGS, RERANK_DEFAULT

    p.add_argument(
        "--decoding", choices=DECODINGS, default=None,
        help="auto (default): extractive below 1B parameters, free above; free: unconstrained; guarded: free text in "
             "which only shown [n] can be written; constrained: every sentence ends with a shown [n]; extractive: no "
             "model text, only the best quotes",
    )  # fmt: skip


    p.add_argument(
        "--rerank", choices=("on", "off"), default=None,
        help="on: the trained cross-encoder picks the quotes and decides when the docs do not answer; off: the "
             "quote scorer's word and meaning features (default: settings file, else "
             + ("on" if RERANK_DEFAULT else "off") + ")",
    )  # fmt: skip


# The loaders the commands reach through this module, looked up when used: a test swaps them for fakes.
def open_chat_model(settings: Settings) -> ChatModel:
    return opening.open_chat_model(settings)


def load_tokenizer_from_args(settings: Settings) -> Tokenizer:
    return opening.load_tokenizer(settings)


def load_embedder_from_args(settings: Settings) -> Embedder | None:
    return opening.load_embedder(settings)


def open_models(settings: Settings) -> Models:
    """agent.opening.open_models through the three loaders above."""
    loaders = Loaders(
        chat=lambda s: open_chat_model(s), tokenizer=lambda s: load_tokenizer_from_args(s),
        embedder=lambda s: load_embedder_from_args(s),
    )
    return opening.open_models(settings, loaders)


def open_index_from_args(
    settings: Settings,
    models: Models | None = None,
    *,
    rebuild: bool = False,
    quiet: bool = False,
    stream: TextIO | None = None,
    must_save: bool = False,
    embed_first: str | None = None,
) -> Any:
    """agent.opening.open_docs with indexing progress on stderr (unless quiet): see there."""
    bar = ProgressBar(stream or sys.stderr, quiet=quiet or settings.quiet)
    try:
        return opening.open_docs(settings, models or open_models(settings), progress=bar, rebuild=rebuild,
                                 must_save=must_save, embed_first=embed_first)
    finally:
        bar.close()
