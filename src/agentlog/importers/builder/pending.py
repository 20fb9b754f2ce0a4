"""The events a builder makes: their ids, their form until written, and
the times and source lines read off the events a session holds."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from ...event import Event, format_timestamp, parse_timestamp

__all__ = ["IdAllocator", "Pending", "source_line_of", "stamp_ns"]

_MASK48 = (1 << 48) - 1
_MASK62 = (1 << 62) - 1


class IdAllocator:
    """UUIDv7 event ids made from the source's time and a hash of where the
    line is, so importing the same file into an empty store gives the same
    ids; each id is forced above the last one, because source times can go
    backwards and a session's ids must strictly increase."""

    def __init__(self, last: int = 0) -> None:
        self.last = last

    def next(self, ts_ns: int, seed: str) -> str:
        h = int.from_bytes(hashlib.blake2b(seed.encode(), digest_size=10).digest(), "big")
        ms = (ts_ns // 1_000_000) & _MASK48
        value = ms << 80 | 0x7 << 76 | ((h >> 62) & 0xFFF) << 64 | 0b10 << 62 | (h & _MASK62)
        if value <= self.last:
            value = self.last + 1
        self.last = value
        return str(uuid.UUID(int=value))


@dataclass(slots=True)
class Pending:
    """An event built but not yet written; importers may still extend it
    (an assistant reply split over several lines is merged into one)."""

    id: str
    parent_id: str
    kind: str
    role: str | None
    ts_ns: int
    record: dict[str, Any]
    branch_from: str | None = None

    def to_event(self) -> Event:
        return Event(
            self.id,
            self.parent_id,
            self.kind,
            self.role,
            format_timestamp(self.ts_ns),
            self.record,
            None,
            self.branch_from,
        )


def source_line_of(source: dict[str, Any]) -> tuple[str, int] | None:
    """The source line an imported event was made from (None: a copy from
    another session, whose line is that session's)."""
    file, line = source.get("file"), source.get("line")
    if "copied_from" in source or not isinstance(file, str) or type(line) is not int:
        return None
    return (file, line)


def stamp_ns(text: str, default: int) -> int:
    """An event's time in nanoseconds, or ``default`` for a form this build
    cannot read: a session can hold one written by another tool through
    ``import_events``, and one odd time must not stop an import."""
    try:
        return parse_timestamp(text)
    except ValueError:
        return default
