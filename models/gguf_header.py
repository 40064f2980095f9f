"""A GGUF's scalar metadata, read from the start of its header: what llama.cpp will need before it allocates.

`gguf.GGUFReader` parses the whole file (8 s for SmolLM2-135M's vocabulary on a busy machine); this reads key by key
and stops once it has what was asked for, which in the files llama.cpp writes comes before the tokenizer's arrays.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO, Callable

MAX_HEADER_STRING = 1 << 20  # bytes: no honest key or scalar string is longer; a hostile length is not allocated
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


class _Unreadable(Exception):
    pass


def scalar_metadata(path: Path, keep: Callable[[str], bool], enough: Callable[[dict], bool]) -> dict:
    """The scalar values of the keys `keep` accepts, read until `enough` of them are found; what was found before
    the header turned out unreadable ({} for a file that is no GGUF: llama.cpp then says what is wrong with it)."""
    found: dict = {}
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF" or _unpack(f, "<I") < 2:  # version 1 used 32-bit lengths: long gone
                return {}
            _unpack(f, "<Q")  # tensor count
            for _ in range(_unpack(f, "<Q")):
                key = _string(f).decode("utf-8", errors="replace")
                kind = _unpack(f, "<I")
                if keep(key) and kind != _ARRAY:
                    found[key] = _value(f, kind)
                    if enough(found):
                        break
                else:
                    _skip(f, kind)
    except (OSError, _Unreadable, struct.error):
        return found
    return found


def _unpack(f: BinaryIO, fmt: str):
    size = struct.calcsize(fmt)
    data = f.read(size)
    if len(data) != size:
        raise _Unreadable
    return struct.unpack(fmt, data)[0]


def _string(f: BinaryIO) -> bytes:
    n = _unpack(f, "<Q")
    if n > MAX_HEADER_STRING:
        raise _Unreadable
    data = f.read(n)
    if len(data) != n:
        raise _Unreadable
    return data


def _value(f: BinaryIO, kind: int):
    if kind == _STRING:
        return _string(f).decode("utf-8", errors="replace")
    if kind in _SCALARS:
        return _unpack(f, _SCALARS[kind])
    raise _Unreadable


def _skip(f: BinaryIO, kind: int) -> None:
    if kind != _ARRAY:
        _value(f, kind)
        return
    item, count = _unpack(f, "<I"), _unpack(f, "<Q")
    if item in _SCALARS:
        f.seek(struct.calcsize(_SCALARS[item]) * count, 1)
    elif item == _STRING:
        for _ in range(count):
            f.seek(_unpack(f, "<Q"), 1)
    else:  # arrays of arrays: no key llama.cpp writes has them
        raise _Unreadable
