"""Options and loaders shared by the commands that use the docs index: --docs, --model, --index."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from agent.progress import ProgressBar
from rag.hybrid import HybridIndex


def add_docs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--docs", metavar="DIR", default=None, help="folder of docs to search (default: bundled docs_corpus/)")


def add_model_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", metavar="PATH", default=None,
        help="chat GGUF to answer with and whose tokenizer measures chunks (default: $SMOLDOCS_MODEL or the packaged SmolLM2-135M)",
    )


def add_index_options(p: argparse.ArgumentParser) -> None:
    """--docs, --model, --index and --quiet: everything open_index_from_args reads."""
    add_docs_option(p)
    add_model_option(p)
    p.add_argument("--index", metavar="DIR", default=None, help="where the index lives (default: a cache folder per docs folder)")
    p.add_argument(
        "-q", "--quiet", action="store_true",
        help="no indexing progress (by default: a live line on a terminal, a line every few seconds elsewhere)",
    )


def add_current_only_option(p: argparse.ArgumentParser) -> None:
    """--current-only: leave outdated documents (archived, deprecated, superseded) out of every search."""
    p.add_argument("--current-only", action="store_true",
                   help="search only current documents: leave out archived, deprecated and superseded ones")


def add_decoding_options(p: argparse.ArgumentParser) -> None:
    """--decoding, and --constrained as its shorthand; read back with decoding_from_args."""
    from agent.settings import DECODINGS

    p.add_argument(
        "--decoding", choices=DECODINGS, default=None,
        help="free: unconstrained (default); guarded: free text in which only shown [n] can be written; "
             "constrained: every sentence ends with a shown [n]",
    )  # fmt: skip
    p.add_argument("--constrained", action="store_true", help="the same as --decoding constrained")


def decoding_from_args(args: argparse.Namespace) -> str:
    if args.constrained and args.decoding not in (None, "constrained"):
        from agent.errors import UsageError

        raise UsageError(f"--constrained contradicts --decoding {args.decoding}: give one of them")
    return "constrained" if args.constrained else (args.decoding or "free")


def load_tokenizer_from_args(args: argparse.Namespace):
    """The chat model's tokenizer named by --model (vocab only, fast)."""
    from models.tokenizer import load_tokenizer

    return load_tokenizer(getattr(args, "model", None))


def load_embedder_from_args(args: argparse.Namespace):
    """The MiniLM embedder (converted from the packaged model on first use)."""
    from models.embedder import load_embedder

    return load_embedder()


def open_index_from_args(
    args: argparse.Namespace,
    tokenizer=None,
    embedder=None,
    rebuild: bool = False,
    quiet: bool = False,
    stream: TextIO | None = None,
    must_save: bool = False,
) -> HybridIndex:
    """The ready index for --docs/--index, updated if files changed, with progress on stderr (unless quiet)."""
    from rag.index import open_index

    tokenizer = tokenizer or load_tokenizer_from_args(args)
    embedder = embedder or load_embedder_from_args(args)
    bar = ProgressBar(stream or sys.stderr, quiet=quiet or getattr(args, "quiet", False))
    try:
        return open_index(
            getattr(args, "docs", None), tokenizer, embedder,
            index_dir=getattr(args, "index", None), progress=bar, rebuild=rebuild, must_save=must_save,
            current_only=bool(getattr(args, "current_only", False)),
        )
    finally:
        bar.close()
