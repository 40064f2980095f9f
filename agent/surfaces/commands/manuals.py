"""`--man [SECTIONS]` and `--info`: this machine's man pages and info manuals as the docs to search."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

DEFAULT_INFOPATH = ("/usr/local/share/info", "/usr/share/info")


class ManAction(argparse.Action):
    """--man: the docs become the man trees of `manpath` (of some sections), with an index of their own
    (agent.config.settings_from names it)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from rag.errors import DocsNotFound
        from rag.ingest.man_pages import man_source

        try:
            source = man_source(values or None)
        except DocsNotFound as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        from agent.surfaces.commands.docs_sources import add_source

        add_source(namespace, source)  # the docs, or one more collection after a --docs (agent.config's sources)


class InfoAction(argparse.Action):
    """--info: the docs become the info folder ($INFOPATH or /usr/share/info)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        folders = os.environ.get("INFOPATH", "").strip(":")
        found = [Path(f) for f in (folders.split(":") if folders else DEFAULT_INFOPATH) if Path(f).is_dir()]
        found = [f for f in found if any(f.glob("*.info*"))]
        if not found:
            raise argparse.ArgumentError(self, "no info manuals on this machine: pass --docs DIR instead")
        from agent.surfaces.commands.docs_sources import add_source

        add_source(namespace, str(found[0]))


def add_manual_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--man", metavar="SECTIONS", nargs="?", const="", action=ManAction, dest="docs",
                   help="search this machine's man pages (all of manpath), or of some sections: --man 1 or --man 1,8")
    p.add_argument("--info", nargs=0, action=InfoAction, dest="docs",
                   help="search this machine's GNU info manuals (/usr/share/info)")
