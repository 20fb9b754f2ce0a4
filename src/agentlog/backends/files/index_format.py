"""The bytes of index.bin: its header, one 64-byte slot, and the entry a slot decodes to.

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

Format version 2; version 1 was ``index.jsonl``, 512-byte JSON lines (see
docs/format.md). The file itself, opened, searched and written, is
``Index`` (index.py).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, NamedTuple

from ...event import format_timestamp

__all__ = [
    "BRANCH_IS_PARENT",
    "ENTRY_SIZE",
    "HEADER_SIZE",
    "INCOMPLETE",
    "LEGACY_INDEX_WIDTH",
    "MAX_NAMES",
    "NO_NAME",
    "OVERFLOW",
    "VERSION",
    "Entry",
    "IndexDamaged",
    "NameTable",
    "NamesBehind",
    "decode_slot",
    "empty_index",
    "entry_of",
    "id_bytes",
    "pack_slot",
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
NO_NAME = 0  # role None
OVERFLOW = 255  # the name is only in the record

BRANCH_IS_PARENT = 1  # branch_from equals parent_id
INCOMPLETE = 2  # some field is only in the record (see the module docstring)

_MAX_OFFSET = 1 << 48  # 256 TiB: larger than any chunk file
_NIL = bytes(16)


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


# --- ids ----------------------------------------------------------------------
def id_bytes(event_id: str) -> bytes:
    """The 16 bytes of a canonical UUID string (callers pass validated ids)."""
    return bytes.fromhex(event_id.replace("-", ""))


def _id_text(raw: bytes) -> str:
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


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


# --- the header -----------------------------------------------------------------
class NameTable:
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
    def parse(data: bytes) -> NameTable | str:
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
        return NameTable(names, data[_SYNCED_AT : _SYNCED_AT + len(_SYNCED_MARK)] == _SYNCED_MARK)


def empty_index(synced: bool = False) -> bytes:
    """The bytes of an index that holds no entry yet (a new session's);
    ``synced``: marked as a writer at durability "full" keeps it."""
    return NameTable([], synced).header()


def decode_slot(fields: tuple[Any, ...], names: NameTable) -> Entry:
    """The entry of a slot's raw fields (``unpack_slot``'s), its kind and
    role named by ``names``; IndexDamaged if it cannot be believed."""
    eid, parent, ns, offset, length, chunk, kind_code, role_code, flags = fields
    if offset >= _MAX_OFFSET:  # a checksum-valid but impossible place must not become an impossible read
        raise IndexDamaged(f"entry gives offset {offset}")
    complete = not flags & INCOMPLETE
    table = names.names
    kind = role = None
    if kind_code == OVERFLOW or role_code == OVERFLOW:
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
