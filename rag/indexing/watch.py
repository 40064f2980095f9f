"""Watching a docs folder with watchfiles: changes come out in batches, editors' temporary files left out.

A burst of events (a `git checkout`, an editor's save dance) arrives as one batch: watchfiles groups changes
until `step` ms pass without a new one. A folder that is deleted or unmounted is reported through `on_gone(root)`;
the watcher then waits for it to come back (checking once a second) and reports its return as a change.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Callable, Iterable

import watchfiles

from rag.ingest.corpus import SKIPPED_DIRS

# Editors' temporary, swap and backup files: vim (.swp/.swx, 4913 probe, ~ backups), emacs (.#lock, #autosave#),
# and the .tmp files of atomic saves (ours included).
TEMP_FILE_PATTERNS = (
    r"\.sw.$",
    r"~$",
    r"^\.#",
    r"^#.*#$",
    r"^4913$",
    r"\.tmp$",
    r"^\.~lock\.",
    r"\.crswap$",
    r"^\.DS_Store$",
)
_TEMP = re.compile("|".join(TEMP_FILE_PATTERNS))


def is_temp_file(path: str | os.PathLike[str]) -> bool:
    """True for an editor's temporary or swap file, whose changes never need a re-index."""
    return bool(_TEMP.search(Path(path).name))


class DocsFilter(watchfiles.DefaultFilter):
    """watchfiles' default filter, plus editors' temp files, skipped folders and the index folder itself."""

    ignore_entity_patterns = TEMP_FILE_PATTERNS
    ignore_dirs = tuple(watchfiles.DefaultFilter.ignore_dirs) + tuple(sorted(SKIPPED_DIRS))

    def __init__(self, ignore_paths: Iterable[str | os.PathLike[str]] = ()) -> None:
        super().__init__(ignore_paths=[Path(p) for p in ignore_paths])


ChangeFn = Callable[[set[str]], None]
GoneFn = Callable[[Path], None]


class FolderWatcher:
    """A thread that calls `on_change(paths)` per batch of changes under `root`; `close()` stops it."""

    def __init__(
        self,
        root: Path,
        on_change: ChangeFn,
        on_gone: GoneFn | None = None,
        ignore_paths: Iterable[str | os.PathLike[str]] = (),
        debounce_ms: int = 1600,
        step_ms: int = 200,
    ) -> None:
        self.root = Path(root)
        self.on_change = on_change
        self.on_gone = on_gone or (lambda root: None)
        self.filter = DocsFilter(ignore_paths)
        self.debounce_ms = debounce_ms
        self.step_ms = step_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set once the first watch is armed (tests wait on it)

    def start(self) -> "FolderWatcher":
        self._thread = threading.Thread(target=self._run, name="smoldocs-watch", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.root.is_dir():
                self._watch()
            if self._stop.is_set():
                return
            self.on_gone(self.root)
            while not self.root.is_dir():
                if self._stop.wait(1.0):
                    return
            self.on_change({str(self.root)})  # back: whatever changed meanwhile is re-read

    def _watch(self) -> None:
        """Watch until stopped or the folder disappears."""
        try:
            batches = watchfiles.watch(
                self.root, watch_filter=self.filter, stop_event=self._stop, debounce=self.debounce_ms,
                step=self.step_ms, rust_timeout=1000, yield_on_timeout=True, raise_interrupt=False,
                ignore_permission_denied=True,
            )
            for changes in batches:
                self.ready.set()  # the first batch (empty, on timeout) means the watch is armed
                if not self.root.is_dir():
                    return
                paths = {path for _change, path in changes}
                if paths:
                    self.on_change(paths)
        except (OSError, RuntimeError):  # the folder vanished while the watch was being set up
            return
