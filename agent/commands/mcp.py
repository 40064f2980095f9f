"""`smoldocs mcp`: serve search_docs, get_document, check_citations and the docs to an MCP client over stdio."""

from __future__ import annotations

import argparse
import os
import sys

# Looked up on `common` at call time, so a test that swaps in fake components reaches every command.
from agent.commands import common
from agent.commands.common import add_index_options

HELP = "serve the docs to other agents over MCP (stdio): search_docs, get_document, check_citations, resources"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)


def run(args: argparse.Namespace) -> int:
    from agent.mcp_server import FolderIndex, build_server
    from agent.mcp_transport import client_gone

    from rag.ingest.corpus import check_docs_dir

    if args.docs is not None:
        check_docs_dir(args.docs)  # a mistyped folder is one line, before seconds of model loading
    # stdout carries the protocol: everything else, including loading notices, goes to stderr.
    tokenizer = common.load_tokenizer_from_args(args)
    embedder = common.load_embedder_from_args(args)
    live = FolderIndex(args.docs, tokenizer, embedder, index_dir=args.index)
    print(f"smoldocs mcp: serving {live.root} ({len(live.index)} chunks) on stdio", file=sys.stderr, flush=True)
    try:
        build_server(live).run("stdio")
    except BaseException as exc:  # an exception group from the SDK's task groups, when the client went away
        if not client_gone(exc):
            raise
        # The reply could not be written: the client is gone, with its end of stdout. Nothing more goes there.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    busy = not live.lock.acquire(blocking=False)
    still = " (a call it left was still running)" if busy else ""
    print(f"smoldocs mcp: the client closed the connection; stopped{still}", file=sys.stderr, flush=True)
    if busy:
        # An abandoned call is still inside llama.cpp: exit now rather than wait for it, or free the models under it.
        sys.stdout.flush()
        os._exit(0)
    live.lock.release()
    return 0
