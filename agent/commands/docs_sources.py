"""Which docs a command reads: `--docs` given once or several times, `--man`, `--info`, or the settings file's
`[collections]`; and `--collection NAME`, the filter of search, ask and chat (rag.indexing.collections)."""

from __future__ import annotations

import argparse
from typing import Any

from rag.indexing.collections import Collections, collections_of


class DocsAction(argparse.Action):
    """--docs DIR: the first is the docs folder (`args.docs`, as always); each further one another collection."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        add_source(namespace, values)


def add_source(namespace: argparse.Namespace, source) -> bool:
    """Keep `source` as the docs (True), or, when a source was already given, as one more collection (False)."""
    if getattr(namespace, "docs", None) is None:
        namespace.docs = source
        return True
    namespace.more_docs = [*getattr(namespace, "more_docs", []), source]
    return False


def add_collection_option(p: argparse.ArgumentParser) -> None:
    """--collection NAME (repeatable): search only these collections."""
    p.add_argument("--collection", action="append", dest="collections", metavar="NAME", default=None,
                   help="search only this collection (repeatable): a --docs folder's name, or a name from "
                   "[collections] in the settings file")


def collections_from_args(args: argparse.Namespace) -> Collections:
    """Every source the command reads, named: the --docs flags (and --man, --info) in order; without them the
    settings file's `docs` and `[collections]`; without those the bundled docs."""
    from rag.ingest.corpus import default_docs_dir

    more = list(getattr(args, "more_docs", None) or ())
    docs = getattr(args, "docs", None)
    from_flag = str(getattr(args, "settings_sources", {}).get("docs", "flag")).startswith("flag") or bool(more)
    named: list[tuple[str | None, Any]] = [(None, docs)] if docs is not None else []
    named += [(None, d) for d in more]
    if not from_flag or docs is None:
        named += list(_file_collections(args).items())
    if not named:
        named = [(None, default_docs_dir())]
    return collections_of(named, index_dir=_index_given(args, len(named)))


def _file_collections(args: argparse.Namespace) -> dict[str, str]:
    effective = getattr(args, "effective_settings", None)
    return dict(effective.values.get("collections", {})) if effective is not None else {}


def _index_given(args: argparse.Namespace, count: int):
    """--index as the user gave it: `--man` fills it in with its own cache folder, which is one source's."""
    index = getattr(args, "index", None)
    if index is not None and count > 1 and index == getattr(args, "man_index", None):
        return None
    return index
