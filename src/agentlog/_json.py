"""JSON documents that carry stored records, however deeply those nest.

orjson writes at most 254 levels of arrays and objects, and the store takes
any record orjson writes, so a record may use every one of them. Each
document that carries a record wraps it a few levels deeper (an event in
``--json`` output, an API answer, an SSE message, a bundle line), so for
such a record orjson refuses the document. ``dumps`` then falls back to the
standard library's encoder, which is bounded by Python's recursion limit
(1,000) instead: slower, and only ever taken for those documents.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["big_integer", "dumps"]

#: The start of orjson's message when a document nests too deeply for it.
_TOO_DEEP = "Recursion limit"


def dumps(document: Any, *, indent: bool = False) -> bytes:
    """``document`` as UTF-8 JSON (two-space indented with ``indent``)."""
    try:
        return orjson.dumps(document, option=orjson.OPT_INDENT_2 if indent else None)
    except orjson.JSONEncodeError as exc:
        if not str(exc).startswith(_TOO_DEEP):
            raise
    text = json.dumps(
        document,
        ensure_ascii=False,
        allow_nan=False,
        indent=2 if indent else None,
        separators=(",", ": ") if indent else (",", ":"),
    )
    return text.encode()


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what orjson reads as an int; it reads others as floats


def big_integer(data: bytes | str) -> str | None:
    """The first integer in the JSON text ``data`` (already parsed, so
    valid) outside the 64-bit range orjson reads exactly, else None.

    Scanned only when the text has a run of 19 digits somewhere (any
    integer out of range has at least that many), so it costs nothing on
    ordinary records."""
    text = data.decode() if isinstance(data, bytes) else data
    if not re.search(r"[0-9]{19}", text):
        return None
    for token in _JSON_TOKEN.finditer(text):
        number = token[0]
        if number[0] == '"' or any(c in number for c in ".eE"):
            continue
        digits = number.lstrip("-").lstrip("0") or "0"
        if len(digits) > 20 or not _INT_MIN <= int(number) <= _INT_MAX:
            return number
    return None
