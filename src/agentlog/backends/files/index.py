"""index.bin, open: a derived, id-sorted index of the chunk log, 64 bytes an event.

The bytes of the file (its header, a slot, the entry a slot decodes to)
are index_format.py's; finding entries in it (the binary search by id,
iteration, the child scan) is index_lookup.py's. This module opens the
file, checks its header and writes entries.

The index is derived (invariant 2): it is written after the log's
fdatasync without a sync of its own, and on open it is checked against
the log and completed from its tail, or rebuilt when damaged. Entries
the file does not hold yet (recovered from the log's tail by a reader, or
left over by a failed write) live in a small in-memory tail.

A writer that opens a version-1 session (``index.jsonl``, see
docs/format.md) builds this file from the log and removes the old one.
"""

from __future__ import annotations

import calendar
import errno
import os
import re
import time
from typing import Any

from ..._cext import speedups
from ..._fs import OsFs
from ...errors import StorageError
from .index_format import (
    BRANCH_IS_PARENT,
    ENTRY_SIZE,
    HEADER_SIZE,
    INCOMPLETE,
    LEGACY_INDEX_WIDTH,
    MAX_NAMES,
    NO_NAME,
    OVERFLOW,
    VERSION,
    Entry,
    IndexDamaged,
    NamesBehind,
    NameTable,
    decode_slot,
    empty_index,
    entry_of,
    id_bytes,
    pack_slot,
    unpack_slot,
)
from .index_lookup import IndexLookups

# The format's names stay importable from here, where the rest of the
# backend, fsck, repair and the tests import them.
__all__ = [
    "ENTRY_SIZE",
    "HEADER_SIZE",
    "LEGACY_INDEX_WIDTH",
    "VERSION",
    "Entry",
    "Index",
    "IndexDamaged",
    "NamesBehind",
    "empty_index",
    "entry_of",
    "id_bytes",
    "pack_slot",
    "acknowledged_end_of",
    "read_intact_entries",
    "unpack_slot",
]

#: An event record with its place in the log: chunk, offset, length.
Placed = tuple[dict[str, Any], int, int, int]
#: ``Index._encode`` in C for the write path (None: the Python packer runs).
_index_slot = None if speedups is None else speedups.index_slot


# --- timestamps ---------------------------------------------------------------
_STAMP = re.compile(r"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})\.([0-9]{9})Z\Z")
_second: tuple[str, int] = ("", 0)  # the last second parsed; appends come many a second


def _canonical_ns(stamp: str) -> int | None:
    """Nanoseconds of a timestamp in the canonical form (the one
    ``format_timestamp`` writes), or None for any other form: it is then
    read from the record, exactly as written."""
    global _second
    cached = _second
    if len(stamp) == 30 and stamp[:19] == cached[0] and stamp[19] == "." and stamp[29] == "Z":
        frac = stamp[20:29]  # the common case: the same second as the last append's
        if frac.isascii() and frac.isdigit():
            ns = cached[1] * 1_000_000_000 + int(frac)
            # The same bounds as below: a cached second before 1970 or after
            # 2262 is still cached (the cache holds any round-tripping second).
            return ns if 0 <= ns < 1 << 63 else None
    m = _STAMP.match(stamp)
    if m is None:
        return None
    head, frac = m.groups()
    if cached[0] != head:
        try:
            secs = calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S"))
        except ValueError:
            return None
        # strptime takes a leap second (":60") that formats back as another
        # second: only a second that round-trips is canonical.
        if time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) != head:
            return None
        cached = _second = (head, secs)
    ns = cached[1] * 1_000_000_000 + int(frac)
    return ns if 0 <= ns < 1 << 63 else None  # else it does not fit the slot: kept in the record


def acknowledged_end_of(fs: OsFs, path: str) -> tuple[int, int] | None:
    """``Index.acknowledged_end`` of an index file, read without a writer's
    lease (fsck); None for a missing or unreadable file."""
    try:
        index = Index(fs, path, writable=False)
    except StorageError:
        return None
    try:
        return index.acknowledged_end()
    finally:
        index.close()


def read_intact_entries(fs: OsFs, path: str) -> list[Entry]:
    """Every entry of an index file that passes its own checksum (repair uses
    them to name a damaged record); a damaged or missing file yields less."""
    try:
        data = fs.read_file(path)
    except StorageError:
        return []
    names = NameTable.parse(data)
    if isinstance(names, str):
        return []
    out = []
    for start in range(HEADER_SIZE, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        fields = unpack_slot(data[start : start + ENTRY_SIZE])
        if fields is not None:
            try:
                out.append(decode_slot(fields, names))
            except IndexDamaged:
                continue  # an entry naming a kind the header lacks recovers nothing
    return out


class Index(IndexLookups):
    """The index file of one session, open for reading or (by the writer)
    writing; its lookups are ``IndexLookups``'."""

    def __init__(self, fs: OsFs, path: str, *, writable: bool, legacy_path: str | None = None) -> None:
        self.fs = fs
        self.path = path
        self.writable = writable
        self.broken = False  # a failed write left the file behind the log
        self.tail: dict[str, Entry] = {}
        self.reset_reason: str | None = None  # why an existing file was started over
        self._last_pos = 0  # the slot found last: a walk's next step is near it
        self._names = NameTable([])
        if not writable and not self.fs.exists(path):
            # A reader derives every entry from the log instead (invariant 2).
            self._fd, self.count, self.torn_bytes = -1, 0, 0
            return
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        try:
            self._fd = self.fs.open(path, flags)
            try:
                self._load_header(legacy_path)
            except BaseException:
                self.close()
                raise
        except StorageError as exc:
            if writable or exc.errno not in (errno.EACCES, errno.EPERM, errno.EISDIR):
                raise  # a writer needs its index; and an I/O error is the OS's to say
            # A reader that may not read the index (its mode, a directory in
            # its place) derives every entry from the log, as for a missing
            # one (invariant 2); fsck reports the file.
            self._fd, self.count, self.torn_bytes = -1, 0, 0

    def _load_header(self, legacy_path: str | None) -> None:
        size = self.fs.size(self._fd, self.path)
        parsed: NameTable | str = "empty file"
        if size:
            for _ in range(3):  # a reader may race the writer's header update: read again
                parsed = NameTable.parse(self.fs.pread(self._fd, HEADER_SIZE, 0, self.path))
                if not isinstance(parsed, str):
                    break
        if isinstance(parsed, str):
            if size:
                self.reset_reason = parsed
            self.count, self.torn_bytes = 0, 0
            if self.writable:
                self._start_over()
                if legacy_path is not None and self.fs.exists(legacy_path):
                    self.fs.unlink(legacy_path)  # version 1's index: this file replaces it
            else:
                self._fd, fd = -1, self._fd
                self.fs.close(fd)
            return
        self._names = parsed
        body = size - HEADER_SIZE
        self.count = body // ENTRY_SIZE
        self.torn_bytes = body - self.count * ENTRY_SIZE

    def _start_over(self) -> None:
        self._names.synced = False  # a new file vouches for nothing until a writer marks it
        self.fs.truncate(self._fd, 0, self.path)
        self.fs.pwrite(self._fd, self._names.header(), 0, self.path)

    # --- what the entries vouch for --------------------------------------------
    @property
    def synced_entries(self) -> bool:
        """True if every entry was written after its record was synced
        (the header's mark; see ``_SYNCED_AT`` in index_format.py)."""
        return self._names.synced

    def mark_synced(self, synced: bool) -> None:
        """Set or clear the header's mark. The caller sets it only once every
        record an entry frames is synced; clearing it is synced at once, so
        no entry written without a sync can reach the disk under the mark."""
        if synced == self._names.synced or not self.writable:
            return
        self._names.synced = synced
        self.fs.pwrite(self._fd, self._names.header(), 0, self.path)
        if not synced:
            self.fs.fdatasync(self._fd, self.path)

    def snapshot(self) -> bytes:
        """The whole file, for ``restore`` (a rebuild that may be refused)."""
        return self.fs.read_file(self.path)

    def restore(self, data: bytes) -> None:
        """Put back a ``snapshot`` on disk: a rebuild refused by damage must
        not erase the entries that say the damaged records were acknowledged
        (the next open and fsck --repair read them). This handle keeps the
        entries it rebuilt up to the damage, and is not written again."""
        self.fs.truncate(self._fd, 0, self.path)
        self.fs.pwrite(self._fd, data, 0, self.path)
        self.broken = True  # its count no longer matches the file: never append to it

    def acknowledged_end(self) -> tuple[int, int] | None:
        """(chunk, end) of the newest record an intact entry frames, when the
        entries vouch that their records were synced: the log cannot
        lawfully end before it (a crash does not take synced bytes).
        None when the index vouches for nothing."""
        if not self.synced_entries:
            return None
        for i in range(self.count - 1, max(self.count - 64, 0) - 1, -1):
            try:
                entry = self.entry_at(i)
            except IndexDamaged:
                continue  # a damaged entry vouches for nothing; an older one may
            return entry.chunk, entry.offset + entry.length
        return None

    # --- writing -----------------------------------------------------------
    def _code(self, name: str | None, new: list[str]) -> int:
        if name is None:
            return NO_NAME
        code = self._names.codes.get(name)
        if code is not None:
            return code
        if len(self._names.names) + len(new) >= MAX_NAMES:
            return OVERFLOW
        new.append(name)
        code = len(self._names.names) + len(new)
        self._names.codes[name] = code
        return code

    def _encode(self, e: Entry, new: list[str]) -> bytes:
        ns = _canonical_ns(e.timestamp)
        flags = 0
        if e.branch_from is not None:
            flags |= BRANCH_IS_PARENT if e.branch_from == e.parent_id else INCOMPLETE
        if e.digest is not None or ns is None:
            flags |= INCOMPLETE
        return pack_slot(
            (
                id_bytes(e.id),
                id_bytes(e.parent_id),
                ns or 0,
                e.offset,
                e.length,
                e.chunk,
                self._code(e.kind, new),
                self._code(e.role, new),
                flags,
            )
        )

    def add(self, entries: list[Entry]) -> None:
        """Record entries for events already durable in the log.

        The index is derived: if writing it fails the entries stay in
        memory and the next open completes the file from the log."""
        if not self.writable or self.broken:
            self._to_tail(entries)
            return
        new: list[str] = []
        self._put(b"".join([self._encode(e, new) for e in entries]), new, entries)

    def add_records(self, placed: list[Placed]) -> None:
        """``add`` for the write path: each event record with its chunk,
        offset and length, packed straight from the record (by the C
        extension where it can: an append's largest cost after its write)."""
        if not placed:
            return
        if _index_slot is None or not self.writable or self.broken:
            self.add([entry_of(*p) for p in placed])
            return
        codes = self._names.codes  # a name a slot adds goes in here too (``_code``)
        new: list[str] = []
        slots = []
        for rec, chunk, offset, length in placed:
            slot = _index_slot(rec, chunk, offset, length, codes)
            # None: a new name, or a field only the Python packer's rules decide.
            slots.append(self._encode(entry_of(rec, chunk, offset, length), new) if slot is None else slot)
        self._put(slots[0] if len(slots) == 1 else b"".join(slots), new, placed)

    def _put(self, data: bytes, new: list[str], entries: list[Entry] | list[Placed]) -> None:
        """Write packed entries (and first the header, if they named ``new``
        names) after the last; on failure keep them in memory instead."""
        before = HEADER_SIZE + self.count * ENTRY_SIZE
        try:
            if new:
                # The names go first: an entry whose name is not in the header
                # (a crash between the two writes) reads as damage and is rebuilt.
                self._names = NameTable(self._names.names + new, self._names.synced)
                self.fs.pwrite(self._fd, self._names.header(), 0, self.path)
            self.fs.pwrite(self._fd, data, before, self.path)
        except StorageError:
            # Stop writing the file for this handle's lifetime: a later
            # entry written after a gap would hide the gap from recovery,
            # which resumes after the file's last entry. The next open
            # completes the file from the log.
            self.broken = True
            self._to_tail([e if isinstance(e, Entry) else entry_of(*e) for e in entries])
            try:
                self.fs.truncate(self._fd, before, self.path)
            except StorageError:
                pass  # a partial entry left here is cut off on the next open
            return
        self.count += len(data) // ENTRY_SIZE

    def _to_tail(self, entries: list[Entry]) -> None:
        for e in entries:
            self.tail[e.id] = e

    def truncate_torn(self) -> None:
        """Drop a partial last entry (an index write cut short by a crash)."""
        if self.torn_bytes and self.writable:
            self.fs.truncate(self._fd, HEADER_SIZE + self.count * ENTRY_SIZE, self.path)
            self.torn_bytes = 0

    def truncate_to(self, count: int) -> None:
        self.fs.truncate(self._fd, HEADER_SIZE + count * ENTRY_SIZE, self.path)
        self.count = count
        self.torn_bytes = 0

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            self.fs.close(fd)
