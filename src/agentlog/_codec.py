"""The byte format of chunk lines (see docs/format.md; the index is binary: index.py).

A line is one JSON object whose last member is ``"crc":"<8 hex>"``, the
CRC-32 of the object's bytes as if that member were absent. The line stays
plain JSON (``jq`` reads it) while a complete line with a flipped byte is
detected rather than trusted.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

__all__ = ["LineError", "decode_line", "encode_line"]

_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"  8 hex  "}


class LineError(ValueError):
    """A complete line that is not a valid framed record (the reason)."""


def encode_line(obj: dict[str, Any]) -> bytes:
    body = orjson.dumps(obj)
    return body[:-1] + b',"crc":"%08x"}\n' % zlib.crc32(body)


def decode_line(line: bytes | memoryview) -> dict[str, Any]:
    """Decode one complete line (with or without its newline).

    Raises LineError saying what is wrong; never returns unchecked data."""
    raw = bytes(line)
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    raw = raw.rstrip(b" ")
    if len(raw) < _SUFFIX_LEN + 2 or raw[:1] != b"{":
        raise LineError("not a framed record")
    if raw[-_SUFFIX_LEN:-10] != _CRC_PREFIX or raw[-2:] != b'"}':
        raise LineError("checksum field missing")
    try:
        want = int(raw[-10:-2], 16)
    except ValueError:
        raise LineError("checksum field is not hex") from None
    got = zlib.crc32(b"}", zlib.crc32(memoryview(raw)[: len(raw) - _SUFFIX_LEN]))
    if got != want:
        raise LineError(f"checksum mismatch (stored {want:08x}, computed {got:08x})")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"checksum matches but JSON does not parse: {exc}") from None
    if not isinstance(obj, dict):
        raise LineError("record is not a JSON object")
    del obj["crc"]
    return obj
