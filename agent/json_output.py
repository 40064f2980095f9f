"""What `--json` prints: one object per command, carrying `schema_version`, described by agent/schemas/<command>.schema.json.

A renamed or removed key bumps SCHEMA_VERSION and is listed in docs/json-output.md; added keys do not.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 2  # 2: `ask` reads `text` (`answer` kept for this version), `search` is an object with `hits`
COMMANDS = ("ask", "search", "check", "pack", "eval")
_C1 = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")  # and bidi overrides (rag.printable)
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def versioned(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with schema_version first."""
    return {"schema_version": SCHEMA_VERSION, **data}


def dumps(data: dict[str, Any], indent: int = 2) -> str:
    """The versioned object as JSON text: non-ASCII kept, every control character (C0, DEL, C1) and bidi override
    escaped."""
    # json escapes C0 itself; DEL, C1 (0x9b is CSI on some terminals) and bidi overrides would pass through as UTF-8.
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(versioned(data), ensure_ascii=False, indent=indent))


@lru_cache(maxsize=None)
def schema(command: str) -> dict[str, Any]:
    """The JSON Schema of `command`'s output."""
    if command not in COMMANDS:
        raise ValueError(f"no JSON schema for {command!r}: choose one of {', '.join(COMMANDS)}")
    return json.loads((SCHEMA_DIR / f"{command}.schema.json").read_text(encoding="utf-8"))
