"""Finding entries in index.bin: by id, in order, and by parent.

Entries are sorted by id (ids are time-ordered and never issued out of
order within a session), so finding an event is a binary search reading
16 bytes per probe, and a path walk's next step is usually the slot next
to the last one found. ``Index`` (index.py) opens and writes the file;
``LegacyIndex`` overrides how a version-1 line is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..._fs import OsFs
from .index_format import (
    ENTRY_SIZE,
    HEADER_SIZE,
    OVERFLOW,
    Entry,
    IndexDamaged,
    NameTable,
    decode_slot,
    id_bytes,
    unpack_slot,
)

__all__ = ["IndexLookups"]

_SCAN_BLOCK = 1 << 20


class IndexLookups:
    """The reads of ``Index`` (which sets these attributes)."""

    fs: OsFs
    path: str
    count: int
    tail: dict[str, Entry]
    _fd: int
    _names: NameTable
    _last_pos: int

    # --- reading -----------------------------------------------------------
    def _slot_at(self, i: int) -> bytes:
        return self.fs.pread(self._fd, ENTRY_SIZE, HEADER_SIZE + i * ENTRY_SIZE, self.path)

    def _id_at(self, i: int) -> bytes:
        return self.fs.pread(self._fd, 16, HEADER_SIZE + i * ENTRY_SIZE, self.path)

    def _key(self, event_id: str) -> bytes:
        """What ``_id_at`` returns for ``event_id``."""
        return id_bytes(event_id)

    def _fields(self, raw: bytes, i: int) -> tuple[Any, ...]:
        if len(raw) != ENTRY_SIZE:
            raise IndexDamaged(f"{self.path} entry {i} cut short")
        fields = unpack_slot(raw)
        if fields is None:
            raise IndexDamaged(f"{self.path} entry {i}: checksum mismatch")
        return fields

    def entry_at(self, i: int) -> Entry:
        return self._entry(self._fields(self._slot_at(i), i), i)

    def _entry(self, fields: tuple[Any, ...], i: int) -> Entry:
        if max(fields[6], fields[7]) > len(self._names.names) and OVERFLOW not in (fields[6], fields[7]):
            self._reload_names()  # the writer added a name after this reader opened
        try:
            return decode_slot(fields, self._names)
        except IndexDamaged as exc:
            raise type(exc)(f"{self.path} entry {i}: {exc}") from None

    def _reload_names(self) -> None:
        parsed = NameTable.parse(self.fs.pread(self._fd, HEADER_SIZE, 0, self.path))
        if not isinstance(parsed, str) and len(parsed.names) >= len(self._names.names):
            self._names = parsed

    def position(self, event_id: str) -> int | None:
        """Slot number of ``event_id`` in the file, by binary search.

        A path walk asks for each parent right after its child, and a
        parent usually sits in the slot just before, so that slot is tried
        first: one 16-byte read per step instead of a search. A forward
        read (an export root to HEAD, the search index catching up) asks
        for the slot just after, which is tried next."""
        key = self._key(event_id)
        for guess in (self._last_pos - 1, self._last_pos + 1):
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
        # A miss is trusted only if every slot the search stepped on is
        # intact: one flipped id byte would otherwise hide an event the log
        # holds. Misses are rare, and this checks log2(n) slots.
        for i in probed:
            self.entry_at(i)
        return None

    def lookup(self, event_id: str) -> Entry | None:
        entry = self.tail.get(event_id)
        if entry is not None:
            return entry
        i = self.position(event_id)
        if i is None:
            return None
        entry = self.entry_at(i)
        if entry.id != event_id:  # pragma: no cover - the checksum covers the id
            raise IndexDamaged(f"{self.path} entry {i}: id disagrees with its checksum")
        return entry

    def last(self) -> Entry | None:
        if self.tail:
            return next(reversed(self.tail.values()))
        if self.count:
            return self.entry_at(self.count - 1)
        return None

    def __len__(self) -> int:
        return self.count + len(self.tail)

    def __iter__(self) -> Iterator[Entry]:
        pos, i = HEADER_SIZE, 0
        end = HEADER_SIZE + self.count * ENTRY_SIZE
        while pos < end:
            block = self.fs.pread(self._fd, min(_SCAN_BLOCK, end - pos), pos, self.path)
            usable = len(block) - len(block) % ENTRY_SIZE
            if not usable:
                raise IndexDamaged(f"{self.path} shrank while being read")
            for start in range(0, usable, ENTRY_SIZE):
                yield self._entry(self._fields(block[start : start + ENTRY_SIZE], i), i)
                i += 1
            pos += usable
        yield from list(self.tail.values())

    def has_child(self, parent_id: str) -> bool:
        """True if an event names ``parent_id`` as its parent. Children sort
        after their parent, so the search starts at the parent's slot."""
        if any(e.parent_id == parent_id for e in self.tail.values()):
            return True
        key = id_bytes(parent_id)
        first = self.position(parent_id) or 0
        pos = HEADER_SIZE + first * ENTRY_SIZE
        end = HEADER_SIZE + self.count * ENTRY_SIZE
        while pos < end:
            block = self.fs.pread(self._fd, min(_SCAN_BLOCK, end - pos), pos, self.path)
            if not block:
                break
            at = block.find(key)
            while at >= 0:
                if at % ENTRY_SIZE == 16:  # the parent field, not an id or a stray match
                    slot = at - 16
                    self._fields(block[slot : slot + ENTRY_SIZE], (pos - HEADER_SIZE + slot) // ENTRY_SIZE)
                    return True
                at = block.find(key, at + 1)
            pos += len(block) - len(block) % ENTRY_SIZE or len(block)
        return False
