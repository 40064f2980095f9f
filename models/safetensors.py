"""Read .safetensors bytes with numpy alone: an 8-byte header length, a JSON header, then raw tensors."""

from __future__ import annotations

import json
import struct
from typing import Mapping

import numpy as np

from models.errors import ModelNotFound

# Safetensors stores little-endian data; BF16 has no numpy dtype and is widened to float32 below.
_DTYPES: Mapping[str, str] = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_MAX_HEADER = 100 * 1024 * 1024


def read_safetensors(data: bytes | bytearray | memoryview, source: str = "safetensors data") -> dict[str, np.ndarray]:
    """Every tensor in `data`, as read-only numpy views (BF16 widened to float32); bad data raises ModelNotFound."""
    buf = memoryview(data)
    if len(buf) < 8:
        raise _bad(source, "shorter than its 8-byte header length")
    (header_len,) = struct.unpack("<Q", buf[:8])
    if header_len > min(_MAX_HEADER, len(buf) - 8):
        raise _bad(source, f"header length {header_len} does not fit in {len(buf)} bytes")
    try:
        header = json.loads(bytes(buf[8 : 8 + header_len]))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(source, f"header is not JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _bad(source, "header is not a JSON object")
    body = buf[8 + header_len :]
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        tensors[name] = _tensor(body, name, info, source)
    return tensors


def _tensor(body: memoryview, name: str, info: object, source: str) -> np.ndarray:
    try:
        if not isinstance(info, dict):
            raise TypeError
        dtype_name = info["dtype"]
        shape = [int(d) for d in info["shape"]]
        begin, end = (int(o) for o in info["data_offsets"])
    except (TypeError, KeyError, ValueError):
        raise _bad(source, f"tensor {name!r} has a malformed header entry") from None
    if dtype_name not in _DTYPES:
        raise _bad(source, f"tensor {name!r} has unsupported dtype {dtype_name}")
    dtype = np.dtype(_DTYPES[dtype_name])
    expected = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if not 0 <= begin <= end <= len(body) or end - begin != expected:
        raise _bad(source, f"tensor {name!r} bytes [{begin}, {end}) do not match shape {shape} {dtype_name}")
    array = np.frombuffer(body[begin:end], dtype=dtype).reshape(shape)
    if dtype_name == "BF16":
        array = (array.astype(np.uint32) << 16).view(np.float32)
    return array


def _bad(source: str, why: str) -> ModelNotFound:
    return ModelNotFound(f"{source} is not a valid safetensors file: {why}: reinstall the package that ships it")
