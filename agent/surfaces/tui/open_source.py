"""Which program opens a cited source at its line: $PAGER (`less +N`), $EDITOR (`vi +N`), `man` for a man page.

Every chunk already knows its first line in its file (Chunk.line_start: chunking records each rendered line's
source line, HTML and roff included), so nothing is searched here. A man page's line is a line of its roff, not of
what `man` shows: it opens through `man -l` at its section's heading instead (less's `+/` in $LESS). The argv is
built here and run by the app, suspended; no shell is involved, so a file or heading name is only ever an argument.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from agent.errors import UsageError
from agent.surfaces.tui.copy_text import DocsDir, source_path
from rag.ingest.formats.manuals import info_name, man_parts
from rag.printable import one_line
from rag.types import Chunk

OPENERS = ("pager", "editor")
# Programs that take `+N FILE` for "open at line N" (less, more and most as pagers; the rest are editors).
PLUS_LINE = frozenset({"less", "more", "most", "vi", "vim", "nvim", "view", "gvim", "nano", "emacs", "emacsclient",
                       "mg", "kak", "micro", "joe", "ne", "jed"})
# Programs that take `FILE:N` instead (VS Code wants --goto before it).
_LESS_SPECIAL = re.compile(r"[.^$*+?()\[\]{}|\\]")  # what less's regex reads as more than itself
COLON_LINE = {"code": ("--goto",), "codium": ("--goto",), "hx": (), "helix": (), "subl": (), "zed": ()}


@dataclass(frozen=True)
class Launch:
    """What to run, with which environment additions, and how it will show the source (for the notice)."""

    argv: tuple[str, ...]
    how: str
    env: dict[str, str] = field(default_factory=dict)


def open_source(source: Chunk, docs_dir: DocsDir, opener: str,
                env: Mapping[str, str] | None = None) -> Launch:
    """The program that shows `source` at its line; UsageError (one line) when its file cannot be opened here."""
    if opener not in OPENERS:
        raise UsageError(f"unknown opener {opener!r}: choose one of {', '.join(OPENERS)}")
    env = os.environ if env is None else env
    path = source_path(docs_dir, source.doc_id)
    if path is None:
        raise UsageError(f"{one_line(source.doc_id)} is in a shared index with no files on this machine: copy the "
                         "quote instead (c)")
    if not path.is_file():
        raise UsageError(f"{one_line(str(path))} is not there any more: re-index the docs (smoldocs index)")
    if man_parts(source.doc_id) is not None:
        return _man(path, source, env)
    if info_name(source.doc_id) is not None:
        return _info(path, source)
    if source.page_start:
        raise UsageError(f"{one_line(str(path))} is a PDF: open page {source.pages} in a PDF viewer")
    if opener == "pager":
        command = env.get("PAGER") or "less"
    else:
        command = env.get("VISUAL") or env.get("EDITOR") or "vi"
    return at_line(command, path, source.line_start)


def at_line(command: str, path: Path, line: int) -> Launch:
    """`command` (as $PAGER or $EDITOR hold it: words, maybe flags) opening `path` at `line` when it knows how."""
    words = shlex.split(command) or ["less"]
    program = Path(words[0]).name
    if program in PLUS_LINE:
        return Launch((*words, f"+{line}", str(path)), f"{program} at line {line}")
    if program in COLON_LINE:
        return Launch((*words, *COLON_LINE[program], f"{path}:{line}"), f"{program} at line {line}")
    return Launch((*words, str(path)), f"{program} (it takes no line: the source is at line {line})")


def _man(path: Path, source: Chunk, env: Mapping[str, str]) -> Launch:
    """`man -l FILE`, with less asked to start at the section's heading (man's pager reads $LESS)."""
    heading = source.heading_path[-1] if source.heading_path else ""
    if not heading:
        return Launch(("man", "-l", str(path)), "man")
    pattern = _LESS_SPECIAL.sub(lambda m: "\\" + m.group(), heading)
    less = f"{env.get('LESS', '')} +/^ *{pattern}".strip()
    return Launch(("man", "-l", str(path)), f"man at {one_line(heading)}", {"LESS": less})


def _info(path: Path, source: Chunk) -> Launch:
    """`info --file FILE --node NODE`: an info chunk's first heading is its node's name."""
    node = source.heading_path[0] if source.heading_path else ""
    argv = ("info", "--file", str(path), *(("--node", node) if node else ()))
    return Launch(argv, f"info at {one_line(node)}" if node else "info")
