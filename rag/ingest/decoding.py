"""Bytes of a file to text: whether they are text at all, and how they decode (never an error)."""

from __future__ import annotations

SNIFF_BYTES = 8192  # how much of a file decides whether it is text, as git does
MAX_CONTROL_SHARE = 0.10  # text has tabs and newlines, rarely other control bytes

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CONTROL_BYTES = bytes(b for b in [*range(32), 127] if b not in b"\t\n\r\f\v\b\x1b")
_OTHER_BYTES = bytes(b for b in range(256) if b not in _CONTROL_BYTES)


def decode_text(data: bytes) -> str:
    """UTF-8 (UTF-16 when a BOM says so) with bad bytes replaced (never an error), no BOM, newlines as \\n."""
    encoding = "utf-16" if data.startswith(_UTF16_BOMS) else "utf-8"
    text = data.decode(encoding, errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def looks_binary(head: bytes) -> bool:
    """True when the first bytes of a file are not text: any NUL, or over 10% control characters."""
    head = head[:SNIFF_BYTES]
    if b"\0" in head:
        return True
    controls = len(head.translate(None, _OTHER_BYTES))
    return bool(head) and controls / len(head) > MAX_CONTROL_SHARE


def sniffed(head: bytes) -> bytes:
    """The head as UTF-8 for the binary test: UTF-16 text (by its BOM) is half NUL bytes."""
    if not head.startswith(_UTF16_BOMS):
        return head
    return head[: len(head) // 2 * 2].decode("utf-16", errors="replace").encode("utf-8")
