"""Slash commands typed into the input: /search QUERY, /export [--drafts] [--force] [FILE], /clear, /help."""

from __future__ import annotations

from dataclasses import dataclass

from agent.errors import UsageError

COMMANDS = ("search", "export", "clear", "help")


@dataclass(frozen=True)
class Slash:
    name: str
    argument: str = ""


def parse_slash(text: str) -> Slash | None:
    """The command `text` names, None when it is a question; UsageError for an unknown or incomplete one."""
    text = text.strip()
    if not text.startswith("/") or text.startswith("//"):
        return None
    name, _, argument = text[1:].partition(" ")
    name, argument = name.lower(), argument.strip()
    if name not in COMMANDS:
        choices = ", ".join(f"/{c}" for c in COMMANDS)
        raise UsageError(f"unknown command /{name}: use one of {choices} (// sends a question starting with /)")
    if name == "search" and not argument:
        raise UsageError("/search needs a query, e.g. /search kv cache")
    return Slash(name, argument)


EXPORT_FLAGS = ("--drafts", "--force")


def export_arguments(argument: str) -> tuple[str | None, bool, bool]:
    """/export's argument as (the file or None, --drafts, --force); the flags may come before or after the file,
    whose name may hold spaces."""
    text, flags = argument.strip(), set()
    while True:
        words = text.split()
        if words and words[0] in EXPORT_FLAGS:
            flags.add(words[0])
            text = text[len(words[0]):].strip()
        elif words and words[-1] in EXPORT_FLAGS:
            flags.add(words[-1])
            text = text[: -len(words[-1])].strip()
        else:
            return text or None, "--drafts" in flags, "--force" in flags
