"""What the TUI shows of the session's data, made safe: every string escaped by rag.printable.visible.

Documents, file names and model text reach the screen from events, hits, chunks and saved chats. Textual
writes a string's characters to the terminal as they are (it drops only BEL, BS, VT, FF and CR), so an
`ESC ] 52` in a document would write the user's clipboard. The app takes display copies at the few doors
this data comes in by; the session and the saved chat keep the text as it was.
"""

from __future__ import annotations

import copy
import dataclasses
from enum import Enum
from typing import TypeVar, cast

from rag.printable import visible

T = TypeVar("T")


def display_copy(value: T) -> T:
    """`value` with every string in it (inside dataclasses, lists, tuples and dict values) escaped for display."""
    if isinstance(value, Enum):
        return value  # a StrEnum member is compared by identity: keep it
    # A copy has its original's type (a str or dict subclass would come back as plain str or dict).
    if isinstance(value, str):
        return cast(T, visible(value))
    if isinstance(value, (list, tuple)):
        items = [display_copy(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return cast(T, {key: display_copy(item) for key, item in value.items()})
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        shown = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(shown, f.name, display_copy(getattr(value, f.name)))  # frozen ones too
        return shown
    return value
