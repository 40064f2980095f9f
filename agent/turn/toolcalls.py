"""Reading tool calls out of model text: `<tool_call>{json}</tool_call>` or a bare JSON object."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any  # usually a dict; left as given so the registry can report what is wrong


@dataclass(frozen=True)
class ParseFailure:
    text: str
    reason: str


def _json_objects(text: str) -> list[tuple[Any, str | None]]:
    """Every top-level JSON value that starts with `{` in `text`, or the reason the first one failed."""
    decoder = json.JSONDecoder()
    found: list[tuple[Any, str | None]] = []
    i = 0
    while (start := text.find("{", i)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            found.append((None, f"not valid JSON: {exc.msg} at character {exc.pos - start}"))
            break
        found.append((value, None))
        i = end
    return found


def _as_call(value: Any, default_tool: str | None) -> ToolCall | str:
    if not isinstance(value, dict):
        return "a tool call must be a JSON object"
    name = value.get("name") or value.get("tool")
    if "arguments" in value or "parameters" in value:
        args = value.get("arguments", value.get("parameters"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except json.JSONDecodeError:
                pass
    elif name is None and default_tool is not None:
        args, name = value, default_tool  # a bare arguments object, e.g. {"query": "..."}
    else:
        args = {k: v for k, v in value.items() if k not in ("name", "tool")}
    if not isinstance(name, str) or not name:
        return 'a tool call needs a "name"'
    return ToolCall(name=name, arguments=args)


def parse_tool_calls(text: str, default_tool: str | None = None) -> tuple[list[ToolCall], list[ParseFailure]]:
    """Calls found in `text`, and the pieces that looked like calls but could not be read."""
    tagged = _TAGGED.findall(text)
    candidates = tagged if tagged else ([text] if "{" in text else [])
    calls: list[ToolCall] = []
    failures: list[ParseFailure] = []
    for piece in candidates:
        for value, reason in _json_objects(piece):
            if reason is not None:
                failures.append(ParseFailure(piece, reason))
                continue
            call = _as_call(value, default_tool)
            if isinstance(call, str):
                failures.append(ParseFailure(piece, call))
            else:
                calls.append(call)
        if tagged and "{" not in piece:
            failures.append(ParseFailure(piece, "empty <tool_call>"))
    return calls, failures
