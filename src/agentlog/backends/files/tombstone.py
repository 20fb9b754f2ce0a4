"""Tombstones: what repair writes in place of a damaged event record.

Quarantining a damaged record used to cut the timeline there: every
intact event after it lost its path to the root. A tombstone keeps it
whole. It is an ordinary event record with the damaged event's id,
parent and timestamp, kind ``tombstone``, no role, and a record saying
what was quarantined, where, and why. The id and the parent come from
the index entry that framed the damaged record (intact, by its own
checksum) or else from the damaged bytes themselves (the id and parent
sit at fixed places at the start of every event line), and are believed
only when they fit: ids well formed, the id between its neighbours in
the log, the parent an event before it. A batch member keeps its batch
marker, so the batch is whole again and its intact members stay.

Nothing here decides alone: ``repair.repair_session`` writes the result
and scans it again; whatever still does not fit is quarantined the old
way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..._codec import encode_line
from ..._fs import OsFs
from ...event import NIL_ID, is_event_id
from .index import read_intact_entries
from .lines import event_object

__all__ = [
    "TOMBSTONE_KIND",
    "Recovered",
    "fits",
    "index_entries_by_location",
    "neighbour_txn",
    "recover",
    "tombstone_line",
]

TOMBSTONE_KIND = "tombstone"

_UUID = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_HEAD = re.compile(rb'\{"id":"(' + _UUID + rb')","parent_id":"(' + _UUID + rb')"')
#: The same two ids by position alone (``{"id":"`` is 7 bytes, ``","parent_id":"``
#: 15): a damaged key or quote around intact ids does not lose them.
_HEAD_AT = re.compile(rb".{7}(" + _UUID + rb").{15}(" + _UUID + rb')"', re.DOTALL)
#: branch_from only marks a branch point (what ``tree`` draws); if its bytes
#: are damaged the tombstone goes without it rather than not at all.
_BRANCH = re.compile(rb'"branch_from":(null|"' + _UUID + rb'")')
_STAMP = re.compile(rb'"timestamp":"([0-9A-Za-z:.+-]{1,40})"')
_TXN = re.compile(rb',"txn":\[(\d{1,9}),(\d{1,9})\],"crc":"[^"]{0,16}"\}\s*\Z')


@dataclass
class Recovered:
    """What is known of a damaged event record."""

    id: str
    parent_id: str
    branch_from: str | None
    timestamp: str | None
    kind: str | None
    role: str | None
    digest: str | None
    txn: list[int] | None
    source: str  # "index" or "record bytes"


def index_entries_by_location(fs: OsFs, path: str) -> dict[tuple[int, int, int], dict[str, Any]]:
    """Intact entries of the index file (each by its own checksum), keyed by
    the (chunk, offset, length) they frame. A damaged index yields less; a
    field the index does not hold (see index_format.py) is None."""
    out: dict[tuple[int, int, int], dict[str, Any]] = {}
    for e in read_intact_entries(fs, path):
        out[(e.chunk, e.offset, e.length)] = {
            "id": e.id,
            "parent_id": e.parent_id,
            "branch_from": e.branch_from,
            "timestamp": e.timestamp or None,
            "kind": e.kind or None,
            "role": e.role,
            "digest": e.digest,
        }
    return out


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def recover(damaged: bytes, entry: dict[str, Any] | None) -> Recovered | None:
    """The damaged event's identity, or None when it cannot be trusted."""
    txn = None
    m = _TXN.search(damaged)
    if m:
        txn = [int(m.group(1)), int(m.group(2))]
    if entry is not None and is_event_id(entry.get("id")) and is_event_id(entry.get("parent_id")):
        branch = entry.get("branch_from")
        return Recovered(
            entry["id"],
            entry["parent_id"],
            branch if is_event_id(branch) else None,
            _opt_str(entry.get("timestamp")),
            _opt_str(entry.get("kind")),
            _opt_str(entry.get("role")),
            _opt_str(entry.get("digest")),
            txn,
            "index",
        )
    if damaged.startswith(b'{"op"'):
        return None
    h = _HEAD.match(damaged) or _HEAD_AT.match(damaged)
    if h is None:
        return None
    stamp = _STAMP.search(damaged)
    b = _BRANCH.match(damaged, h.end() + 1)  # absent (format 3) or damaged: no branch mark
    branch_raw = b.group(1) if b else b"null"
    return Recovered(
        h.group(1).decode(),
        h.group(2).decode(),
        None if branch_raw == b"null" else branch_raw.strip(b'"').decode(),
        stamp.group(1).decode() if stamp else None,
        None,
        None,
        None,
        txn,
        "record bytes",
    )


def tombstone_line(r: Recovered, timestamp: str, where: dict[str, Any]) -> bytes:
    """The framed log line that stands in for the damaged record."""
    record: dict[str, Any] = {
        "quarantined": where,
        "recovered_from": r.source,
        "kind": r.kind,
        "role": r.role,
    }
    if r.digest is not None:
        record["digest"] = r.digest  # the blob stays in blobs/; only the record was lost
    obj = event_object(r.id, r.parent_id, r.branch_from, TOMBSTONE_KIND, None, timestamp, record, None)
    if r.txn is not None:
        obj["txn"] = r.txn
    return encode_line(obj)


def neighbour_txn(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[int] | None:
    """The batch marker a damaged line must have had, from the lines around it."""
    for rec, step in ((before, 1), (after, -1)):
        txn = rec.get("txn") if rec is not None else None
        if isinstance(txn, list) and len(txn) == 2 and all(type(v) is int for v in txn):
            i, n = txn[0] + step, txn[1]
            if 0 <= i < n:
                return [i, n]
    return None


def fits(r: Recovered, before: str, after: str | None, known: set[str]) -> bool:
    """The recovered id sorts between its neighbours and its parent came first
    (a ``branch_from`` that names no earlier event is dropped)."""
    if not (r.id > before and (after is None or r.id < after)):
        return False
    if r.branch_from is not None and r.branch_from not in known:
        r.branch_from = None  # a damaged marker: the branch point goes unmarked, the path stays
    return r.parent_id == NIL_ID or r.parent_id in known
