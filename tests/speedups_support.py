"""What the tests of the C whole-path loop share (test_speedups.py,
test_review_speedups.py): the extension if it was built, line framing
that stands in for a writer that lies, and a strict comparison of events."""

from __future__ import annotations

import zlib
from typing import Any

import orjson

from agentlog.event import Event

__all__ = ["frame", "reframe", "same_event", "speedups"]

try:
    from agentlog import _speedups as speedups  # type: ignore[attr-defined]
except ImportError:  # an install without a C compiler: the Python loop runs
    speedups: Any = None


def frame(body: bytes) -> bytes:
    """``body`` (a JSON object without its checksum and closing brace), framed."""
    return body + b',"crc":"%08x"}' % zlib.crc32(b"}", zlib.crc32(body))


def reframe(line: bytes) -> bytes:
    """The line with a checksum of its present bytes (a writer that lies)."""
    return frame(line[: line.rfind(b',"crc":"')])


def same_event(a: Event, b: Event) -> bool:
    """Equal in every field, types included (``1 == True`` would hide a difference)."""
    return (
        type(a) is type(b)
        and orjson.dumps(a.to_dict(), option=orjson.OPT_NON_STR_KEYS)
        == orjson.dumps(b.to_dict(), option=orjson.OPT_NON_STR_KEYS)
        and a.extra == b.extra == {}
        and all(type(getattr(a, f)) is type(getattr(b, f)) for f in ("id", "parent_id", "kind", "role", "timestamp"))
    )
