"""Switching the docs folder or the model without quitting: what may be switched to, and the line the chat notes.

No Textual here. The session factory takes the switch as keyword arguments (`docs=`, `model=`; none at start),
so a factory that only knows `progress=` still starts the app.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.errors import UsageError
from rag.errors import DocsNotFound
from rag.ingest.corpus import check_docs_dir
from rag.printable import one_line

KINDS = {"docs": "docs folder", "model": "model"}


def checked_choice(kind: str, text: str) -> Path:
    """The folder or GGUF file `text` names, resolved; UsageError (one line, what to give instead) if unusable."""
    if kind not in KINDS:
        raise UsageError(f"unknown switch {kind!r}: choose one of {', '.join(KINDS)}")
    text = text.strip()
    if not text:
        raise UsageError(f"give the path of a {KINDS[kind]}, or Esc to keep this one")
    if kind == "docs":
        try:
            return check_docs_dir(text)
        except DocsNotFound as exc:
            raise UsageError(str(exc).replace("pass --docs DIR to", "give")) from None
    path = Path(text).expanduser()
    if not path.is_file() or path.suffix.lower() != ".gguf":
        raise UsageError(f"{one_line(str(path))} is not a .gguf file: give the path of a GGUF chat model")
    return path.resolve()


def switch_note(kind: str, value: Path, model_name: str, index_size: int) -> str:
    """The line the conversation shows where the switch happened."""
    if kind == "docs":
        return f"⇄ Switched the docs folder to {one_line(str(value))} ({index_size} chunks); the chat goes on over it."
    return f"⇄ Switched the model to {one_line(model_name)}; the chat goes on with it."


@dataclass(frozen=True)
class Switch:
    """One switch under way: what to open (`choice`, the factory's keyword arguments), what to close, what to carry."""

    kind: str
    value: Path
    choice: dict  # e.g. {"docs": Path("~/notes")}: every switch so far, this one included
    previous: dict  # the choice before, opened again if this one fails
    old: Any = None  # the session to close first: one model and one live index at a time
    history: tuple = ()  # agent.session.Turn of the chat so far, so follow-ups still resolve
    rollback: bool = False  # this is the previous choice opened again after a failed switch
