"""`smoldocs mcp`: serve search_docs, get_document, check_citations and the docs to an MCP client over stdio."""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

# Looked up on `common` at call time, so a test that swaps in fake components reaches every command.
from agent.surfaces.commands import common
from agent.surfaces.commands.common import add_index_options
from agent.surfaces.commands.docs_sources import add_collection_option
from agent.settings import Settings

HELP = "serve the docs to other agents over MCP (stdio): search_docs, get_document, check_citations, resources"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)
    add_collection_option(p)


@dataclass(frozen=True)
class Options:
    """`smoldocs mcp` has no options of its own: --docs, --man, --collection and the models are Settings."""


def run(settings: Settings, options: Options) -> int:
    from agent.surfaces.mcp_server import build_server
    from agent.surfaces.mcp_transport import claim_stdio, client_gone, serve_stdio

    from agent.opening import store_url
    from rag.ingest.corpus import check_docs_dir

    sources = settings.sources
    several = sources is not None and sources.joined
    store = store_url(settings)
    if settings.docs is not None and store is None and not several:
        check_docs_dir(settings.docs)  # a mistyped folder is one line, before anything is served
    # stdout carries the protocol: it moves to a descriptor of its own before any thread starts (see
    # agent.surfaces.mcp_transport), and fd 1 goes to stderr with every loading notice.
    wire = claim_stdio()

    folder = open_served(settings, store, "mcp", "on stdio")
    try:
        serve_stdio(build_server(folder), wire)
    except BaseException as exc:  # an exception group from the SDK's task groups, when the client went away
        if not client_gone(exc):
            raise
    busy = not folder.lock.acquire(blocking=False)
    still = " (a call it left was still running)" if busy else ""
    print(f"smoldocs mcp: the client closed the connection; stopped{still}", file=sys.stderr, flush=True)
    if busy or not folder.ready:
        # An abandoned call, or the models still loading, is inside llama.cpp: exit now rather than wait for it,
        # or free the models under it. Embeddings made since the last checkpoint are made again next time.
        sys.stdout.flush()
        os._exit(0)
    folder.close()
    folder.lock.release()
    return 0


def open_served(settings: Settings, store: str | None, command: str, where: str):
    """The docs `smoldocs mcp` and `smoldocs serve` serve: a store, opened now, or a folder whose models load and
    index opens behind the handshake (a client never waits for them to say hello)."""
    from agent.surfaces.mcp_server import FolderIndex, StoredDocs
    from agent.opening import open_docs

    models = common.open_models(settings)

    def failed(message: str) -> None:
        print(f"smoldocs {command}: error: {message}", file=sys.stderr, flush=True)

    if store is not None:  # a shared store: nothing to index here, only the query embedder to load
        tokenizer, embedder = models.tokenizer, models.embedder
        stored = StoredDocs(open_docs(settings, models), tokenizer, embedder, settings.collections)
        print(f"smoldocs {command}: serving {stored.root} ({len(stored.index)} chunks) {where}", file=sys.stderr,
              flush=True)
        return stored
    # several sources, each a collection: one that fails is a notice, the rest are served
    several = settings.sources is not None and settings.sources.joined
    served = FolderIndex(settings, models, on_failure=failed, on_notice=(lambda message: print(
        f"smoldocs {command}: {message}", file=sys.stderr, flush=True)) if several else None)
    print(f"smoldocs {command}: serving {served.root} {where} (indexing in the background)", file=sys.stderr, flush=True)
    return served
