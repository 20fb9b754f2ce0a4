"""The byte format of chunk lines (see docs/format.md; the index is binary: index.py).

A line is one JSON object whose last member is ``"crc":"<8 hex>"``, the
CRC-32 of the object's bytes as if that member were absent. The line stays
plain JSON (``jq`` reads it) while a complete line with a flipped byte is
detected rather than trusted.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import orjson

__all__ = ["LineError", "batch_marker", "checksum_ok", "decode_line", "encode_line"]

_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"  8 hex  "}
_HEX8 = re.compile(rb"[0-9a-f]{8}")


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
    if not checksum_ok(raw):
        raise LineError(_why_not_intact(raw))
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"checksum matches but JSON does not parse: {exc}") from None
    if not isinstance(obj, dict):
        raise LineError("record is not a JSON object")
    del obj["crc"]
    return obj


def checksum_ok(line: bytes) -> bool:
    """True if a complete line (without its newline) carries the checksum
    of its own bytes: the one rule every reader applies (``decode_line``,
    the whole-path read, gc's scan).

    The checksum is compared as the text the writer writes, not parsed:
    int(..., 16) also takes "DEADBEEF", " 1234567" or "1_234567", so a
    damaged byte there (a flipped case bit, a zero turned space) would
    read as intact."""
    raw = line.rstrip(b" ")
    return (
        len(raw) >= _SUFFIX_LEN + 2
        and raw[:1] == b"{"
        and raw[-_SUFFIX_LEN:-10] == _CRC_PREFIX
        and raw[-2:] == b'"}'
        and raw[-10:-2] == b"%08x" % _crc(raw)
    )


def _crc(raw: bytes) -> int:
    """The CRC-32 of a framed line as if its checksum member were absent."""
    return zlib.crc32(b"}", zlib.crc32(memoryview(raw)[: len(raw) - _SUFFIX_LEN]))


def _why_not_intact(raw: bytes) -> str:
    """What ``checksum_ok`` refused in ``raw``, for the error message."""
    if len(raw) < _SUFFIX_LEN + 2 or raw[:1] != b"{":
        return "not a framed record"
    if raw[-_SUFFIX_LEN:-10] != _CRC_PREFIX or raw[-2:] != b'"}':
        return "checksum field missing"
    stored = raw[-10:-2]
    if _HEX8.fullmatch(stored) is None:
        return f"checksum field is not 8 lowercase hex digits: {stored!r}"
    return f"checksum mismatch (stored {stored.decode()}, computed {_crc(raw):08x})"


def batch_marker(txn: Any) -> tuple[int, int] | None:
    """A line's batch marker ``txn`` as (its place in the batch, the batch's
    size), or None if it is not one: two integers, 0 <= place < size. The
    one rule the scan, fsck and the index's resume read it by."""
    if isinstance(txn, list) and len(txn) == 2 and isinstance(txn[0], int) and isinstance(txn[1], int):
        if 0 <= txn[0] < txn[1]:
            return txn[0], txn[1]
    return None
