"""Which docs a command reads: `--docs` given once or several times, `--man`, `--info`, or the settings file's
`[collections]`; and `--collection NAME`, the filter of search, ask and chat (rag.indexing.collections).
agent.config.settings_from names the sources (Settings.sources) and keeps the filter (Settings.collections)."""

from __future__ import annotations

import argparse


class DocsAction(argparse.Action):
    """--docs DIR: the first is the docs folder (`args.docs`, as always); each further one another collection."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        add_source(namespace, values)


def add_source(namespace: argparse.Namespace, source) -> bool:
    """Keep `source` as the docs (True), or, when a source was already given, as one more collection (False).
    Both attributes are there from the start: add_docs_option declares them (default None and [])."""
    if namespace.docs is None:
        namespace.docs = source
        return True
    namespace.more_docs = [*namespace.more_docs, source]
    return False


def add_collection_option(p: argparse.ArgumentParser) -> None:
    """--collection NAME (repeatable): search only these collections."""
    p.add_argument("--collection", action="append", dest="collections", metavar="NAME", default=None,
                   help="search only this collection (repeatable): a --docs folder's name, or a name from "
                   "[collections] in the settings file")
