"""index.bin: a derived, id-sorted index of the chunk log, 64 bytes an event.

The file is a 4 KiB header, then one fixed-size binary entry per event in
log order. Event ids are time-ordered and never issued out of order within
a session, so entries are sorted by id and finding an event is a binary
search reading 16 bytes per probe. Each entry carries its own CRC-32, so a
damaged entry is detected, never believed.

An entry holds the id and parent as 16 raw bytes each, the timestamp as
nanoseconds, the record's place in the log, and the kind and role as
one-byte codes into a table of names kept in the header (a session uses a
handful). A field the entry cannot hold (a blob's digest, a timestamp in
an older writer's form, a branch point whose origin is not the parent, a
name past the table's 127 slots) sets the ``INCOMPLETE`` flag: that one
entry's fields are then read from its record, which costs one positioned
read, and lookups by id never need them.

The index is derived (invariant 2): it is written after the log's
fdatasync without a sync of its own, and on open it is checked against
the log and completed from its tail, or rebuilt when damaged. Entries
the file does not hold yet (recovered from the log's tail by a reader, or
left over by a failed write) live in a small in-memory tail.

Format version 2; version 1 was ``index.jsonl``, 512-byte JSON lines (see
docs/format.md). A writer that opens a version-1 session builds this file
from the log and removes the old one.
"""

from __future__ import annotations

import calendar
import errno
import os
import re
import struct
import time
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple

from ..._cext import speedups
from ..._fs import OsFs
from ...errors import StorageError
from ...event import format_timestamp

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

#: Version 1's index line width: its file size over this counts its events.
LEGACY_INDEX_WIDTH = 512
MAGIC = b"ALOGIDX\n"
VERSION = 2
HEADER_SIZE = 4096
ENTRY_SIZE = 64
_NAME_SLOT = 32  # kinds and roles are at most 32 characters (KIND_PATTERN)
_NAMES_AT = 32
MAX_NAMES = (HEADER_SIZE - _NAMES_AT) // _NAME_SLOT  # 127
_HEAD = struct.Struct("<8sIII")  # magic, version, number of names, CRC of the header with this field zero
#: Bytes 20-27 of the header: this mark says every entry was written after
#: the log records it frames were synced (a writer at durability "full"),
#: so the log can never lawfully end before the last entry's record: a
#: crash cannot take synced bytes. Any other value (zeros, as older builds
#: write) says nothing. Outside the header's checksum, which older builds
#: compute without these bytes; a damaged mark reads as no mark.
_SYNCED_AT = 20
_SYNCED_MARK = b"ACKSYNC1"
#: id, parent, timestamp ns, offset, length, chunk, kind code, role code, flags, (pad), CRC of the first 60 bytes
_SLOT = struct.Struct("<16s16sqQIIBBBxI")
_BODY = struct.Struct("<16s16sqQIIBBBx")  # the same without the CRC
_CRC_AT = 60
_NO_NAME = 0  # role None
_OVERFLOW = 255  # the name is only in the record

BRANCH_IS_PARENT = 1  # branch_from equals parent_id
INCOMPLETE = 2  # some field is only in the record (see the module docstring)

_SCAN_BLOCK = 1 << 20
_MAX_OFFSET = 1 << 48  # 256 TiB: larger than any chunk file
_NIL = bytes(16)
#: An event record with its place in the log: chunk, offset, length.
Placed = tuple[dict[str, Any], int, int, int]
#: ``Index._encode`` in C for the write path (None: the Python packer runs).
_index_slot = None if speedups is None else speedups.index_slot


class IndexDamaged(Exception):
    """Internal: the derived index disagrees with itself or the log; rebuild it."""


class NamesBehind(IndexDamaged):
    """Internal: an entry names a kind or role the header does not hold yet
    (a crash kept the entry's write and lost the header's): a crash state."""


class Entry(NamedTuple):
    """What the index knows of one event. When ``complete`` is False, the
    fields after ``length`` are placeholders: the record holds them."""

    id: str
    parent_id: str
    chunk: int
    offset: int
    length: int
    kind: str
    role: str | None
    timestamp: str
    branch_from: str | None
    digest: str | None
    complete: bool = True


def entry_of(rec: dict[str, Any], chunk: int, offset: int, length: int) -> Entry:
    """The entry of a verified event record at (chunk, offset, length)."""
    get = rec.get
    return Entry(
        rec["id"],
        rec["parent_id"],
        chunk,
        offset,
        length,
        rec["kind"],
        get("role"),
        rec["timestamp"],
        get("branch_from"),
        get("digest"),
    )


# --- ids and timestamps ------------------------------------------------------
def id_bytes(event_id: str) -> bytes:
    """The 16 bytes of a canonical UUID string (callers pass validated ids)."""
    return bytes.fromhex(event_id.replace("-", ""))


def _id_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


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


# --- one slot ------------------------------------------------------------------
def pack_slot(fields: tuple[Any, ...]) -> bytes:
    """64 bytes of an entry from its raw fields (``unpack_slot``'s), with its checksum."""
    body = _BODY.pack(*fields)
    return body + zlib.crc32(body).to_bytes(4, "little")


def unpack_slot(raw: bytes) -> tuple[Any, ...] | None:
    """The raw fields of one slot (id, parent, ns, offset, length, chunk,
    kind code, role code, flags), or None if its checksum fails."""
    fields = _SLOT.unpack(raw)
    if zlib.crc32(raw[:_CRC_AT]) != fields[-1]:
        return None
    return fields[:-1]


class _Names:
    """The kind and role names of the header, and their codes."""

    def __init__(self, names: list[str], synced: bool = False) -> None:
        self.names = names
        self.codes = {n: i + 1 for i, n in enumerate(names)}
        self.synced = synced  # the header's _SYNCED_MARK

    def header(self) -> bytes:
        table = b"".join(n.encode().ljust(_NAME_SLOT, b"\0") for n in self.names)
        body = table.ljust(HEADER_SIZE - _NAMES_AT, b"\0")
        crc = zlib.crc32(body, zlib.crc32(_HEAD.pack(MAGIC, VERSION, len(self.names), 0)))
        mark = _SYNCED_MARK if self.synced else b""
        return (_HEAD.pack(MAGIC, VERSION, len(self.names), crc) + mark).ljust(_NAMES_AT, b"\0") + body

    @staticmethod
    def parse(data: bytes) -> _Names | str:
        """The names of a header, or why it is not a header of this version."""
        if len(data) < HEADER_SIZE:
            return "header cut short"
        magic, version, count, crc = _HEAD.unpack_from(data)
        if magic != MAGIC:
            return "not an index file (bad magic)"
        if version != VERSION:
            return f"index version {version}, this build reads {VERSION}"
        body = data[_NAMES_AT:HEADER_SIZE]
        if count > MAX_NAMES or zlib.crc32(body, zlib.crc32(_HEAD.pack(magic, version, count, 0))) != crc:
            return "header checksum mismatch"
        names = []
        for i in range(count):
            raw = body[i * _NAME_SLOT : (i + 1) * _NAME_SLOT].rstrip(b"\0")
            try:
                names.append(raw.decode("ascii"))
            except UnicodeDecodeError:
                return "header names are not ASCII"
        return _Names(names, data[_SYNCED_AT : _SYNCED_AT + len(_SYNCED_MARK)] == _SYNCED_MARK)


def empty_index(synced: bool = False) -> bytes:
    """The bytes of an index that holds no entry yet (a new session's);
    ``synced``: marked as a writer at durability "full" keeps it."""
    return _Names([], synced).header()


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
    names = _Names.parse(data)
    if isinstance(names, str):
        return []
    out = []
    for start in range(HEADER_SIZE, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        fields = unpack_slot(data[start : start + ENTRY_SIZE])
        if fields is not None:
            try:
                out.append(_decode(fields, names))
            except IndexDamaged:
                continue  # an entry naming a kind the header lacks recovers nothing
    return out


def _decode(fields: tuple[Any, ...], names: _Names) -> Entry:
    eid, parent, ns, offset, length, chunk, kind_code, role_code, flags = fields
    if offset >= _MAX_OFFSET:  # a checksum-valid but impossible place must not become an impossible read
        raise IndexDamaged(f"entry gives offset {offset}")
    complete = not flags & INCOMPLETE
    table = names.names
    kind = role = None
    if kind_code == _OVERFLOW or role_code == _OVERFLOW:
        complete = False
    else:
        if not 0 < kind_code <= len(table) or role_code > len(table):
            raise NamesBehind(f"entry names kind {kind_code} / role {role_code}, the header holds {len(table)}")
        kind = table[kind_code - 1]
        role = table[role_code - 1] if role_code else None
    parent_id = _id_text(parent)
    return Entry(
        _id_text(eid),
        parent_id,
        chunk,
        offset,
        length,
        kind or "",
        role,
        format_timestamp(ns) if complete else "",
        parent_id if flags & BRANCH_IS_PARENT else None,
        None,
        complete,
    )


class Index:
    def __init__(self, fs: OsFs, path: str, *, writable: bool, legacy_path: str | None = None) -> None:
        self.fs = fs
        self.path = path
        self.writable = writable
        self.broken = False  # a failed write left the file behind the log
        self.tail: dict[str, Entry] = {}
        self.reset_reason: str | None = None  # why an existing file was started over
        self._last_pos = 0  # the slot found last: a walk's next step is near it
        self._names = _Names([])
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
        parsed: _Names | str = "empty file"
        if size:
            for _ in range(3):  # a reader may race the writer's header update: read again
                parsed = _Names.parse(self.fs.pread(self._fd, HEADER_SIZE, 0, self.path))
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
        (the header's mark; see ``_SYNCED_AT``)."""
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
        if max(fields[6], fields[7]) > len(self._names.names) and _OVERFLOW not in (fields[6], fields[7]):
            self._reload_names()  # the writer added a name after this reader opened
        try:
            return _decode(fields, self._names)
        except IndexDamaged as exc:
            raise type(exc)(f"{self.path} entry {i}: {exc}") from None

    def _reload_names(self) -> None:
        parsed = _Names.parse(self.fs.pread(self._fd, HEADER_SIZE, 0, self.path))
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

    # --- writing -----------------------------------------------------------
    def _code(self, name: str | None, new: list[str]) -> int:
        if name is None:
            return _NO_NAME
        code = self._names.codes.get(name)
        if code is not None:
            return code
        if len(self._names.names) + len(new) >= MAX_NAMES:
            return _OVERFLOW
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
                self._names = _Names(self._names.names + new, self._names.synced)
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
