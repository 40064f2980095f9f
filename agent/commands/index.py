"""`smoldocs index`: build or refresh the search index of a docs folder, re-embedding only files that changed."""

from __future__ import annotations

import argparse
import threading

from agent.commands.common import (
    add_index_options,
    load_embedder_from_args,
    load_tokenizer_from_args,
    open_index_from_args,
)
from rag.printable import one_line, visible

HELP = "build or refresh the search index of a docs folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)
    p.add_argument("--rebuild", action="store_true", help="re-chunk and re-embed every file")
    p.add_argument("--watch", action="store_true",
                   help="then keep the index fresh: re-index whenever a file of --docs changes (Ctrl+C stops)")


def run(args: argparse.Namespace) -> int:
    tokenizer, embedder = load_tokenizer_from_args(args), load_embedder_from_args(args)
    # Saving is the point of this command: a build that cannot be stored is an error (exit 2), not a notice.
    index = open_index_from_args(args, tokenizer=tokenizer, embedder=embedder, rebuild=args.rebuild, must_save=True)
    report(index, verbose=True)
    if args.watch:
        watch(args, index, tokenizer, embedder)
    return 0


def report(index, verbose: bool) -> None:
    update = index.update
    print(visible(f"index of {index.docs_dir}: {update.summary()}"), flush=True)
    for label, names in (("added", update.added), ("changed", update.changed), ("removed", update.removed)):
        if names and not update.rebuilt:
            print(f"  {label}: {', '.join(one_line(n) for n in names)}", flush=True)
    if verbose and update.skipped:
        print(visible(f"  skipped: {', '.join(f'{n} {why}' for why, n in sorted(update.skipped.items()))}"))
    if verbose:
        print(visible(f"  stored in {update.index_dir}"), flush=True)


def watch(args: argparse.Namespace, index, tokenizer, embedder) -> None:
    """Re-index after every batch of changes (rag.indexing.watch, as the chat app does) until Ctrl+C."""
    from rag.indexing.watch import FolderWatcher

    changed = threading.Event()

    def gone(root) -> None:
        print(f"{root} is gone: watching for it to come back", flush=True)

    watcher = FolderWatcher(index.docs_dir, lambda paths: changed.set(), on_gone=gone).start()
    watcher.ready.wait(10)  # a change made once "watching" is printed must not fall before the watch is armed
    print(visible(f"watching {index.docs_dir} (Ctrl+C stops)"), flush=True)
    try:
        while True:
            if not changed.wait(1.0):
                continue
            changed.clear()
            fresh = open_index_from_args(args, tokenizer=tokenizer, embedder=embedder, quiet=True, must_save=True)
            if fresh.update.modified:
                report(fresh, verbose=False)
            fresh.close()
    except KeyboardInterrupt:
        print("stopped watching", flush=True)
    finally:
        watcher.close()
