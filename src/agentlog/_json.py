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
from typing import Any

import orjson

__all__ = ["dumps"]

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
