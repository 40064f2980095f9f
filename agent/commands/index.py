"""`smoldocs index`: build or refresh the docs index, re-embedding only files that changed."""

from __future__ import annotations

import argparse

from agent.commands.common import add_index_options, open_index_from_args
from rag.printable import one_line, visible

HELP = "build or refresh the search index of a docs folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)
    p.add_argument("--rebuild", action="store_true", help="re-chunk and re-embed every file")


def run(args: argparse.Namespace) -> int:
    # Saving is the point of this command: a build that cannot be stored is an error (exit 2), not a notice.
    index = open_index_from_args(args, rebuild=args.rebuild, must_save=True)
    update = index.update
    print(visible(f"index of {index.docs_dir}: {update.summary()}"))
    for label, names in (("added", update.added), ("changed", update.changed), ("removed", update.removed)):
        if names and not update.rebuilt:
            print(f"  {label}: {', '.join(one_line(n) for n in names)}")
    if update.skipped:
        print(visible(f"  skipped: {', '.join(f'{n} {why}' for why, n in sorted(update.skipped.items()))}"))
    print(visible(f"  stored in {update.index_dir}"))
    return 0
