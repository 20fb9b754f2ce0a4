"""Byte formats of chunk lines and index lines (see docs/format.md).

A line is one JSON object whose last member is ``"crc":"<8 hex>"``, the
CRC-32 of the object's bytes as if that member were absent. The line stays
plain JSON (``jq`` reads it) while a complete line with a flipped byte is
detected rather than trusted.
"""

from __future__ import annotations

import zlib
from typing import Any

import orjson

__all__ = [
    "INDEX_WIDTH",
    "LineError",
    "decode_line",
    "encode_index_entry",
    "encode_line",
    "decode_index_entry",
]

_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"  8 hex  "}

#: Every index line is padded with spaces to exactly this many bytes
#: (newline included), so line i starts at byte i * INDEX_WIDTH and a
#: lookup by id is a binary search that parses one line.
INDEX_WIDTH = 512
#: The id of an index line sits at this fixed place: {"id":"<36 chars>"
INDEX_ID_SLICE = slice(7, 43)


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


def encode_index_entry(entry: dict[str, Any]) -> bytes:
    """Encode an index entry padded to INDEX_WIDTH; ``id`` must come first."""
    line = encode_line(entry)
    pad = INDEX_WIDTH - len(line)
    if pad < 0:  # pragma: no cover - field lengths are bounded by validation
        raise ValueError("index entry too long")
    return line[:-1] + b" " * pad + b"\n"


def decode_index_entry(line: bytes) -> dict[str, Any]:
    if len(line) != INDEX_WIDTH or line[-1:] != b"\n":
        raise LineError("index line has the wrong width")
    entry = decode_line(line)
    if not isinstance(entry.get("id"), str):
        raise LineError("index line has no id")
    return entry
