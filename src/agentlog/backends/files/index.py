"""index.jsonl: a derived, fixed-width, id-sorted index of the chunk log.

Line i starts at byte i * INDEX_WIDTH and ids increase line by line (event
ids are time-ordered and never issued out of order within a session), so
finding an event is a binary search that reads 36 bytes per probe and
parses one line. Entries the file does not hold yet (recovered from the
log's tail by a reader, or left over by a failed index write) live in a
small in-memory tail.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..._codec import (
    INDEX_ID_SLICE,
    INDEX_WIDTH,
    LineError,
    decode_index_entry,
    encode_index_entry,
)
from ..._fs import OsFs
from ...errors import StorageError

__all__ = ["Index", "IndexDamaged"]

_SCAN_BLOCK = 1 << 20


class IndexDamaged(Exception):
    """Internal: the derived index disagrees with itself or the log; rebuild it."""


class Index:
    def __init__(self, fs: OsFs, path: str, *, writable: bool) -> None:
        self.fs = fs
        self.path = path
        self.writable = writable
        self.broken = False  # a failed write left the file behind the log
        self.tail: dict[str, dict[str, Any]] = {}
        self._last_pos = 0  # the line found last: a walk's next step is near it
        flags = os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY
        if writable:
            flags |= os.O_CREAT
        if not writable and not self.fs.exists(path):
            # A reader derives every entry from the log instead (invariant 2).
            self._fd, self.count, self.torn_bytes = -1, 0, 0
            return
        self._fd = self.fs.open(path, flags)
        size = self.fs.size(self._fd, path)
        self.count = size // INDEX_WIDTH
        self.torn_bytes = size - self.count * INDEX_WIDTH

    # --- reading -----------------------------------------------------------
    def _id_at(self, i: int) -> bytes:
        return self.fs.pread(self._fd, 36, i * INDEX_WIDTH + INDEX_ID_SLICE.start, self.path)

    def entry_at(self, i: int) -> dict[str, Any]:
        line = self.fs.pread(self._fd, INDEX_WIDTH, i * INDEX_WIDTH, self.path)
        try:
            return decode_index_entry(line)
        except LineError as exc:
            raise IndexDamaged(f"{self.path} line {i}: {exc}") from None

    def position(self, event_id: str) -> int | None:
        """Line number of ``event_id`` in the file, by binary search.

        A path walk asks for each parent right after its child, and a
        parent usually sits on the line just before, so that line is tried
        first: one 36-byte read per step instead of a search."""
        key = event_id.encode()
        guess = self._last_pos - 1
        if 0 <= guess < self.count and self._id_at(guess) == key:
            self._last_pos = guess
            return guess
        lo, hi = 0, self.count
        probed = []
        while lo < hi:
            mid = (lo + hi) // 2
            probed.append(mid)
            if self._id_at(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.count and self._id_at(lo) == key:
            self._last_pos = lo
            return lo
        # A miss is trusted only if every line the search stepped on is
        # intact: one flipped id byte would otherwise hide an event the log
        # holds. Misses are rare, and this decodes log2(n) lines.
        for i in probed:
            self.entry_at(i)
        return None

    def lookup(self, event_id: str) -> dict[str, Any] | None:
        entry = self.tail.get(event_id)
        if entry is not None:
            return entry
        i = self.position(event_id)
        if i is None:
            return None
        entry = self.entry_at(i)
        if entry["id"] != event_id:
            raise IndexDamaged(f"{self.path} line {i}: id field disagrees with its checksum")
        return entry

    def last(self) -> dict[str, Any] | None:
        if self.tail:
            return next(reversed(self.tail.values()))
        if self.count:
            return self.entry_at(self.count - 1)
        return None

    def __len__(self) -> int:
        return self.count + len(self.tail)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        pos = 0
        end = self.count * INDEX_WIDTH
        while pos < end:
            block = self.fs.pread(self._fd, min(_SCAN_BLOCK, end - pos), pos, self.path)
            if not block:
                raise IndexDamaged(f"{self.path} shrank while being read")
            usable = len(block) - len(block) % INDEX_WIDTH
            for start in range(0, usable, INDEX_WIDTH):
                try:
                    yield decode_index_entry(block[start : start + INDEX_WIDTH])
                except LineError as exc:
                    raise IndexDamaged(f"{self.path} line {(pos + start) // INDEX_WIDTH}: {exc}") from None
            pos += usable
        yield from list(self.tail.values())

    def has_child(self, parent_id: str) -> bool:
        needle = b'"parent_id":"' + parent_id.encode() + b'"'
        if any(e["parent_id"] == parent_id for e in self.tail.values()):
            return True
        start_line = self.position(parent_id)
        pos = (start_line or 0) * INDEX_WIDTH
        end = self.count * INDEX_WIDTH
        overlap = len(needle)
        while pos < end:
            block = self.fs.pread(self._fd, min(_SCAN_BLOCK, end - pos), pos, self.path)
            if not block:
                break
            if needle in block:
                return True
            if pos + len(block) >= end:
                break
            pos += max(len(block) - overlap, 1)
        return False

    # --- writing -----------------------------------------------------------
    def add(self, entries: list[dict[str, Any]]) -> None:
        """Record entries for events already durable in the log.

        The index is derived: if writing it fails the entries stay in
        memory and the next open completes the file from the log."""
        if not self.writable or self.broken:
            self._to_tail(entries)
            return
        data = b"".join(encode_index_entry(e) for e in entries)
        before = self.count * INDEX_WIDTH
        try:
            self.fs.write(self._fd, data, self.path)
        except StorageError:
            # Stop writing the file for this handle's lifetime: a later
            # entry written after a gap would hide the gap from recovery,
            # which resumes after the file's last entry. The next open
            # completes the file from the log.
            self.broken = True
            self._to_tail(entries)
            try:
                self.fs.truncate(self._fd, before, self.path)
            except StorageError:
                pass  # a partial line left here is truncated on the next open
            return
        self.count += len(entries)

    def _to_tail(self, entries: list[dict[str, Any]]) -> None:
        for e in entries:
            self.tail[e["id"]] = e

    def truncate_torn(self) -> None:
        """Drop a partial last line (an index write cut short by a crash)."""
        if self.torn_bytes and self.writable:
            self.fs.truncate(self._fd, self.count * INDEX_WIDTH, self.path)
            self.torn_bytes = 0

    def truncate_to(self, count: int) -> None:
        self.fs.truncate(self._fd, count * INDEX_WIDTH, self.path)
        self.count = count
        self.torn_bytes = 0

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            self.fs.close(fd)
