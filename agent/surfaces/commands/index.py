"""`smoldocs index`: build or refresh the search index of a docs folder, re-embedding only files that changed."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path
from dataclasses import dataclass

from agent.surfaces.commands.common import add_index_options, open_index_from_args, open_models
from agent.opening import Models
from agent.settings import Settings
from rag.printable import one_line, visible

HELP = "build or refresh the search index of a docs folder"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_index_options(p)
    p.add_argument("--rebuild", action="store_true", help="re-chunk and re-embed every file")
    p.add_argument("--watch", action="store_true",
                   help="then keep the index fresh: re-index whenever a file of a --docs folder changes, or a "
                   "package adds or removes man pages (Ctrl+C stops)")


@dataclass(frozen=True)
class Options:
    rebuild: bool = False
    watch: bool = False


def run(settings: Settings, options: Options) -> int:
    models = open_models(settings)
    # Saving is the point of this command: a build that cannot be stored is an error (exit 2), not a notice.
    index = open_index_from_args(settings, models, rebuild=options.rebuild, must_save=True)
    report(index, verbose=True)
    if options.watch:
        watch(settings, models, index)
    return 0


def report(index, verbose: bool) -> None:
    update = index.update
    names = sorted({index.collection(d) for d in index.doc_ids}) if index.docs_dir is None else []
    where = f"{len(names)} collections ({', '.join(names)})" if names else index.docs_dir
    print(visible(f"index of {where}: {update.summary()}"), flush=True)
    for label, names in (("added", update.added), ("changed", update.changed), ("removed", update.removed)):
        if names and not update.rebuilt:
            print(f"  {label}: {', '.join(one_line(n) for n in names)}", flush=True)
    if verbose and update.skipped:
        print(visible(f"  skipped: {', '.join(f'{n} {why}' for why, n in sorted(update.skipped.items()))}"))
    if verbose:
        from rag.indexing.hybrid import HybridIndex

        parts = index.parts if isinstance(index, HybridIndex) else ()  # collections joined: each stored apart
        stored = [str(part[0]) for part in parts] or [str(update.index_dir)]
        print(visible(f"  stored in {', '.join(stored)}"), flush=True)


def watch(settings: Settings, models: Models, index) -> None:
    """Re-index after every batch of changes until Ctrl+C: each folder source through its own watcher
    (rag.indexing.watch, as the chat app does), man pages by their section folders' times, checked every second
    (rag.ingest.man_pages.man_stamp: a package install renames pages in or out)."""
    from rag.indexing.live import Watchers
    from rag.indexing.watch import FolderWatcher
    from rag.ingest.man_pages import ManSource, man_stamp

    changed = threading.Event()

    def gone(root) -> None:
        print(f"{root} is gone: watching for it to come back", flush=True)

    sources = list(settings.sources or ())
    folders = [c for c in sources if not isinstance(c.source, ManSource) and not c.problem]
    manuals = [c.source for c in sources if isinstance(c.source, ManSource)]
    folders_to_watch: list[tuple[Path, Path | None]]
    if not sources:  # one folder, as opened
        folders_to_watch = [(Path(index.docs_dir), None)]
    else:
        folders_to_watch = [(Path(c.source).expanduser().resolve(), c.index_dir) for c in folders]
    watchers = Watchers([FolderWatcher(root, lambda paths: changed.set(), on_gone=gone,
                                       ignore_paths=[where] if where else []).start()
                         for root, where in folders_to_watch])
    watchers.ready.wait(10)  # a change made once "watching" is printed must not fall before the watch is armed
    stamps = [man_stamp(m) for m in manuals]
    what = [str(root) for root, _ in folders_to_watch] + [f"man pages of {m}" for m in manuals]
    print(visible(f"watching {', '.join(what)} (Ctrl+C stops)"), flush=True)
    try:
        while True:
            if not changed.wait(1.0):
                now = [man_stamp(m) for m in manuals]
                if now == stamps:
                    continue
                stamps = now
            changed.clear()
            fresh = open_index_from_args(settings, models, quiet=True, must_save=True)
            if fresh.update.modified:
                report(fresh, verbose=False)
            fresh.close()
    except KeyboardInterrupt:
        print("stopped watching", flush=True)
    finally:
        watchers.close()
