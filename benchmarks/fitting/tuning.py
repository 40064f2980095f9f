"""Rewrite fitted constants in rag/tuned.py in place, keeping the file's layout, and say what changed as a diff.

Each constant is one top-level assignment there, on lines of its own; a refit replaces the assignments it names
(the values and their Fit record) and leaves every other line, comments included, as it was.
"""

from __future__ import annotations

import ast
import datetime
import difflib
import json
import runpy
from pathlib import Path
from typing import Mapping, Sequence

from rag import tuned
from benchmarks.fitting.handlabelled import RESERVED_PACKAGES
from rag.tuned import Fit

TUNED_FILE = Path(tuned.__file__)
WIDTH = 120


def literal(value: object) -> str:
    """`value` as Python source on one line: strings in double quotes, floats as repr writes them."""
    items, opening, closing = _parts(value)
    if items is None:
        return opening
    trailing = "," if isinstance(value, tuple) and not isinstance(value, Fit) and len(items) == 1 else ""
    return opening + ", ".join(items) + trailing + closing


def assignment(name: str, value: object) -> str:
    """`NAME = value` as lines of the file: one line when it fits in WIDTH, else one item a line."""
    line = f"{name} = {literal(value)}\n"
    items, opening, closing = _parts(value)
    if len(line) <= WIDTH + 1 or items is None:
        return line
    return f"{name} = {opening}\n" + "".join(f"    {item},\n" for item in items) + f"{closing}\n"


def _parts(value: object) -> tuple[list[str] | None, str, str]:
    """(items, opening, closing) of a Fit, dict or tuple; (None, the whole literal, "") of anything else."""
    if isinstance(value, Fit):
        return [f"{k}={_packed(v)}" for k, v in value._asdict().items()], "Fit(", ")"
    if isinstance(value, dict):
        return [f"{literal(k)}: {literal(v)}" for k, v in value.items()], "{", "}"
    if isinstance(value, tuple):
        return [literal(v) for v in value], "(", ")"
    if isinstance(value, str):
        return None, json.dumps(value), ""
    if isinstance(value, (bool, int)):
        return None, repr(value), ""
    if isinstance(value, float) or type(value).__module__ == "numpy":
        return None, repr(float(value)), ""  # type: ignore[arg-type]
    raise TypeError(f"rag/tuned.py holds literals only, not {type(value).__name__}")


def _packed(value: object) -> str:
    """A Fit field: a long tuple of packages wraps onto lines of its own inside the record."""
    one = literal(value)
    if not isinstance(value, tuple) or len(one) <= WIDTH - 20:
        return one
    lines, line = [], ""
    for item in (literal(v) + "," for v in value):
        if line and len(line) + len(item) + 1 > WIDTH - 8:
            lines.append(line)
            line = ""
        line = f"{line} {item}" if line else item
    lines.append(line)
    return "(\n" + "".join(f"        {part}\n" for part in lines) + "    )"


def rewritten(source: str, values: Mapping[str, object]) -> str:
    """`source` with the assignment of each name in `values` replaced; a name it does not assign is a KeyError."""
    spans = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            spans[node.targets[0].id] = (node.lineno - 1, node.end_lineno or node.lineno)
    missing = [name for name in values if name not in spans]
    if missing:
        raise KeyError(f"rag/tuned.py assigns no {', '.join(missing)}")
    lines = source.splitlines(keepends=True)
    for name in sorted(values, key=lambda n: spans[n][0], reverse=True):
        start, end = spans[name]
        lines[start:end] = [assignment(name, values[name])]
    return "".join(lines)


def read(path: Path = TUNED_FILE) -> dict[str, object]:
    """The constants and records a tuned file holds, as the modules would see them (records as rag.tuned.Fit)."""
    found = runpy.run_path(str(path))
    fit = found.get("Fit")
    return {name: Fit(*value) if fit is not None and isinstance(value, fit) else value
            for name, value in found.items() if name.isupper()}


def record(name: str, command: str, packages: Sequence[str], values: Mapping[str, object]) -> dict[str, object]:
    """`values` and the Fit record `name` saying they were fitted today by `command` on `packages`; a reserved
    package (RESERVED_PACKAGES: kept for independent checks) is a ValueError."""
    reserved = sorted(set(packages) & RESERVED_PACKAGES)
    if reserved:
        raise ValueError(f"{', '.join(reserved)} reserved for independent checks: fit on fit packages only")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    return {name: Fit(command, today, tuple(packages), tuple(values)), **values}


def rewrite(values: Mapping[str, object], path: Path = TUNED_FILE, write: bool = True) -> str:
    """Put `values` into the tuned file at `path` (unless `write` is False); the unified diff, "" when unchanged."""
    before = path.read_text(encoding="utf-8")
    after = rewritten(before, values)
    if write and after != before:
        path.write_text(after, encoding="utf-8")
    names = ("a/rag/tuned.py", "b/rag/tuned.py") if path == TUNED_FILE else (str(path), str(path))
    diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), *names)
    return "".join(diff)
