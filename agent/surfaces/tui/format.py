"""Small text helpers shared by the widgets."""

from __future__ import annotations


def clip(text: str, width: int) -> str:
    """`text` cut to `width` characters, ending in `…` when cut."""
    return text if len(text) <= width else text[: max(0, width - 1)].rstrip() + "…"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
