"""Reading format version 1's index (``index.jsonl``) for a reader.

A writer that opens a version-1 session builds ``index.bin`` from the log
and removes this file (index.py). A reader must not write, and must not
take the writer's lease either (a writer opening at that moment would be
refused), yet should not have to read a whole log to open a session no
writer has touched since the upgrade. So it reads the old index as it is:
512-byte JSON lines, each with its CRC, sorted by id, the id at a fixed
place, through the same interface as ``Index``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..._codec import LineError, decode_line
from ..._fs import OsFs
from .index import Entry, Index, IndexDamaged

__all__ = ["LegacyIndex"]

#: Bytes per line of a version-1 index, newline included.
WIDTH = 512
_ID_AT = 7  # {"id":"<36 characters>"


class LegacyIndex(Index):
    """A version-1 index, read-only. Anything it cannot vouch for raises
    IndexDamaged, and the reader then derives the index from the log."""

    def __init__(self, fs: OsFs, path: str) -> None:
        self.fs = fs
        self.path = path
        self.writable = False
        self.broken = False
        self.tail = {}
        self.reset_reason = None
        self._last_pos = 0
        self._fd = fs.open(path, os.O_RDONLY)
        size = fs.size(self._fd, path)
        self.count, self.torn_bytes = divmod(size, WIDTH)

    @property
    def synced_entries(self) -> bool:
        return False  # version 1 has no mark: its entries vouch for nothing

    def _id_at(self, i: int) -> bytes:
        return self.fs.pread(self._fd, 36, i * WIDTH + _ID_AT, self.path)

    def _key(self, event_id: str) -> bytes:
        return event_id.encode()

    def entry_at(self, i: int) -> Entry:
        line = self.fs.pread(self._fd, WIDTH, i * WIDTH, self.path)
        try:
            if len(line) != WIDTH or not line.endswith(b"\n"):
                raise LineError("index line has the wrong width")
            return _entry(decode_line(line))
        except LineError as exc:
            raise IndexDamaged(f"{self.path} line {i}: {exc}") from None

    def __iter__(self) -> Iterator[Entry]:
        for i in range(self.count):
            yield self.entry_at(i)
        yield from list(self.tail.values())

    def has_child(self, parent_id: str) -> bool:
        if any(e.parent_id == parent_id for e in self.tail.values()):
            return True
        start = self.position(parent_id) or 0
        return any(self.entry_at(i).parent_id == parent_id for i in range(start, self.count))


def _entry(obj: dict[str, Any]) -> Entry:
    """An Entry from a version-1 line, or LineError if a field is not as
    version 1 wrote it (the CRC proves the bytes, not the writer)."""
    loc = obj.get("location")
    fields = (obj.get("id"), obj.get("parent_id"), obj.get("kind"), obj.get("timestamp"))
    if not (isinstance(loc, dict) and all(isinstance(f, str) for f in fields)):
        raise LineError("index line lacks a field")
    place = [v for v in (loc.get("chunk"), loc.get("offset"), loc.get("length")) if type(v) is int and 0 <= v < 1 << 48]
    if len(place) != 3:
        raise LineError("index line has a malformed location")
    chunk, offset, length = place
    role, branch, digest = obj.get("role"), obj.get("branch_from"), obj.get("digest")
    if not all(v is None or isinstance(v, str) for v in (role, branch, digest)):
        raise LineError("index line has a malformed field")
    return Entry(
        obj["id"], obj["parent_id"], chunk, offset, length, obj["kind"], role, obj["timestamp"], branch, digest
    )
