"""The access log of `smoldocs serve`: one JSON object a line, who did what and how long it took.

What goes in is fixed here, field by field: a token's name (never the token), the tool, the time, the duration,
the number of hits and the outcome. No query, no answer, no document text: a line can be shared with whoever
runs the machine without leaking what the team asked or read.
"""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import TextIO

# The only fields a line can have; `record` refuses anything else, so document text cannot slip in by a new field.
FIELDS = ("time", "event", "who", "tool", "ms", "hits", "outcome", "status", "client")


class AccessLog:
    """Appends one line per event to `out` (stderr or a file), whole lines only, from any thread."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._lock = threading.Lock()

    def record(self, event: str, **fields) -> None:
        unknown = set(fields) - set(FIELDS)
        if unknown:
            raise ValueError(f"access log fields {sorted(unknown)} are not among {FIELDS}")
        line = {"time": now(), "event": event, **{k: v for k, v in fields.items() if v is not None}}
        text = json.dumps(line, ensure_ascii=True) + "\n"  # ASCII: a name cannot put a control sequence on a terminal
        with self._lock:
            self.out.write(text)
            self.out.flush()


def now() -> str:
    """UTC, to the millisecond, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def elapsed_ms(start: float) -> float:
    """Milliseconds since `start` (a time.perf_counter() value), to 0.1 ms."""
    return round((time.perf_counter() - start) * 1000, 1)
