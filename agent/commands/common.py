"""Options and loaders shared by the commands that use the docs index: --docs, --model, --index."""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from rag.index import IndexProgress
from rag.hybrid import HybridIndex


def add_docs_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--docs", metavar="DIR", default=None, help="folder of docs to search (default: bundled docs_corpus/)")


def add_model_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model", metavar="PATH", default=None,
        help="chat GGUF to answer with and whose tokenizer measures chunks (default: $SMOLDOCS_MODEL or the packaged SmolLM2-135M)",
    )


def add_index_options(p: argparse.ArgumentParser) -> None:
    """--docs, --model and --index: everything open_index_from_args reads."""
    add_docs_option(p)
    add_model_option(p)
    p.add_argument("--index", metavar="DIR", default=None, help="where the index lives (default: a cache folder per docs folder)")


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
    """The ready index for --docs/--index, updated if files changed, with a progress bar on stderr."""
    from rag.index import open_index

    tokenizer = tokenizer or load_tokenizer_from_args(args)
    embedder = embedder or load_embedder_from_args(args)
    bar = ProgressBar(stream or sys.stderr, quiet=quiet)
    try:
        return open_index(
            getattr(args, "docs", None), tokenizer, embedder,
            index_dir=getattr(args, "index", None), progress=bar, rebuild=rebuild, must_save=must_save,
            current_only=bool(getattr(args, "current_only", False)),
        )
    finally:
        bar.close()


class ProgressBar:
    """Renders IndexProgress events: a live line on a terminal, only notices otherwise."""

    WIDTH = 24
    LABELS = {"scan": "scanning", "chunk": "chunking", "embed": "embedding", "save": "saving"}
    UNITS = {"scan": "files", "chunk": "files", "embed": "chunks", "save": "index"}

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.stream = stream
        self.quiet = quiet
        self.live = hasattr(stream, "isatty") and stream.isatty()
        self._drawn = False
        self._last = 0.0

    def __call__(self, event: IndexProgress) -> None:
        if event.stage == "notice":
            self._clear()
            print(f"smoldocs: {event.message}", file=self.stream, flush=True)
            return
        if self.quiet or not self.live or event.stage not in self.LABELS:
            return
        now = time.monotonic()
        if event.done < event.total and now - self._last < 0.05:
            return  # a terminal does not need more than ~20 redraws a second
        self._last = now
        self.stream.write("\r\033[K" + self.line(event))
        self.stream.flush()
        self._drawn = True

    def line(self, event: IndexProgress) -> str:
        """One progress line, e.g. `embedding [######......] 120/294 chunks  85 chunks/s`."""
        filled = int(self.WIDTH * event.done / event.total) if event.total else self.WIDTH
        bar = "#" * filled + "." * (self.WIDTH - filled)
        unit = self.UNITS[event.stage]
        rate = f"  {event.rate:.0f} {unit}/s" if event.rate else ""
        return f"{self.LABELS[event.stage]:<9} [{bar}] {event.done}/{event.total} {unit}{rate}"

    def close(self) -> None:
        self._clear()

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._drawn = False
