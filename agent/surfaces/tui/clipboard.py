"""The clipboard: a local tool (wl-copy, xclip, xsel, pbcopy), or the terminal's OSC 52 only when the user asks.

OSC 52 makes the terminal write its clipboard from a sequence the program prints: handy over SSH, but it is the
same door a hostile document would use, so it is opt-in (`clipboard = "osc52"`, `--clipboard osc52`). Whatever
the way, the text is cleaned first (rag.printable.visible) and OSC 52 carries it base64-encoded only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Callable, Mapping

from agent.errors import UsageError
from rag.printable import visible

CLIPBOARDS = ("auto", "osc52")  # auto: the first local tool found; osc52: through the terminal
TOOL_TIMEOUT = 5.0  # seconds; a clipboard tool that hangs (no display) must not hang the chat


@dataclass(frozen=True)
class Tool:
    name: str
    argv: tuple[str, ...]
    needs: str | None = None  # the environment variable that says its display is there


TOOLS = (
    Tool("wl-copy", ("wl-copy",), "WAYLAND_DISPLAY"),
    Tool("xclip", ("xclip", "-selection", "clipboard"), "DISPLAY"),
    Tool("xsel", ("xsel", "--clipboard", "--input"), "DISPLAY"),
    Tool("pbcopy", ("pbcopy",)),
)
NO_TOOL = ("no clipboard tool found (wl-copy, xclip, xsel or pbcopy): install one, or copy through the terminal "
           "with clipboard = \"osc52\" in the settings file (or --clipboard osc52)")


class ClipboardUnavailable(UsageError):
    """Nothing could take the text: one line saying what to do."""


def find_tool(env: Mapping[str, str], which: Callable[[str], str | None] = shutil.which) -> Tool | None:
    """The first tool installed whose display is there (xclip without $DISPLAY would only fail)."""
    for tool in TOOLS:
        if (tool.needs is None or env.get(tool.needs)) and which(tool.name):
            return tool
    return None


class Clipboard:
    """Copies cleaned text: `copy(text, terminal)` returns how it went, or raises ClipboardUnavailable."""

    def __init__(self, mode: str = "auto", env: Mapping[str, str] | None = None) -> None:
        if mode not in CLIPBOARDS:
            raise UsageError(f"unknown clipboard {mode!r}: choose one of {', '.join(CLIPBOARDS)}")
        self.mode = mode
        self.env = os.environ if env is None else env

    def copy(self, text: str, terminal: Callable[[str], None]) -> str:
        """Copy `text` cleaned of control sequences; `terminal(text)` writes OSC 52 (base64) and is used only in
        osc52 mode. Returns "wl-copy" or "the terminal (OSC 52)"."""
        text = visible(text)
        if self.mode == "osc52":
            terminal(text)
            return "the terminal (OSC 52)"
        tool = find_tool(self.env)
        if tool is None:
            raise ClipboardUnavailable(NO_TOOL)
        _run_tool(tool, text)
        return tool.name


def _run_tool(tool: Tool, text: str) -> None:
    # No pipes but stdin: xclip stays behind to serve the selection and would hold a stdout pipe open for ever.
    try:
        done = subprocess.run(list(tool.argv), input=text.encode(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=TOOL_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClipboardUnavailable(f"{tool.name} failed ({type(exc).__name__}): {NO_TOOL.split(': ', 1)[1]}") from None
    if done.returncode != 0:
        raise ClipboardUnavailable(f"{tool.name} failed (exit {done.returncode}): is the display reachable? "
                                   f"Or copy through the terminal with clipboard = \"osc52\"")
