"""fsck for the file backend: the check, which changes nothing.

``verify_session`` reads every byte a session stores and changes nothing.
The full scan of the log it runs (``scan_log``: every record checked,
a batch kept all or nothing, each damaged or refused line a ``Bad``
span with its reason) is also where the explicit repair starts
(repair.py): repair moves aside exactly what this scan condemns, so fsck
and repair cannot disagree on what is damaged. Checking and repairing
are apart because only repair writes; this module opens nothing for
writing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..._codec import LineError, batch_marker, decode_line
from ..._fs import OsFs
from ..._lease import writer_is_live
from ...errors import CorruptionError, StorageError
from ...event import NIL_ID, is_event_id, stored_record_problem
from ..base import Problem
from .blobs import LOST, BlobStore
from .chunklog import ChunkLog, Line
from .index import ENTRY_SIZE, HEADER_SIZE, Index, IndexDamaged, NamesBehind, acknowledged_end_of
from .layout import Layout
from .meta import meta_file_problems

Report = Callable[..., None]

__all__ = ["Bad", "Scan", "cut_after_ack", "scan_log", "verify_session"]


@dataclass
class Bad:
    chunk: int
    offset: int
    length: int
    reason: str
    #: for a checkout refused because no event before it has the id it
    #: names: that id (repair keeps the checkout if a tombstone gets the id)
    target: str | None = None


@dataclass
class Scan:
    """What a full read of the log found."""

    events: dict[str, dict[str, Any]]  # id -> record (+ _loc)
    order: list[str]
    head: str
    bad: list[Bad]
    torn: Bad | None  # a torn tail the next writer open cuts off
    #: ids of event records intact but refused for where they stand (an id
    #: that does not increase, a parent that does not come before): each is
    #: in ``bad``, so an event naming one as its parent is not reported again
    refused: set[str] = field(default_factory=set)
    #: the intact members of a batch cut short at the end of the log (in ``torn``)
    torn_batch: list[tuple[dict[str, Any], Line]] = field(default_factory=list)


def _late_parent(rec: dict[str, Any]) -> str | None:
    """Why an event's parent link is impossible, or None: a parent comes
    before its child in the log and ids increase in log order, so a parent
    id not below the event's own is a link forward (or to itself), and
    path walks through it loop. (``rec`` has well-formed ids.)"""
    parent = rec["parent_id"]
    if parent != NIL_ID and parent >= rec["id"]:
        return f"event {rec['id']} names parent {parent}, which does not come before it (a parent link loop)"
    return None


def scan_log(log: ChunkLog) -> Scan:
    events: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    bad: list[Bad] = []
    refused: set[str] = set()
    torn = None
    head = NIL_ID
    last = len(log.numbers) - 1
    pending: list[tuple[dict[str, Any], Any]] = []

    def flush_pending(reason: str) -> None:
        for _rec, line in pending:
            bad.append(Bad(line.chunk, line.offset, line.length, reason))
        pending.clear()

    def apply(rec: dict[str, Any], line: Any) -> None:
        nonlocal head
        if "op" in rec:
            target = rec.get("head")
            if rec.get("op") != "checkout" or not is_event_id(target):
                bad.append(Bad(line.chunk, line.offset, line.length, "unknown record"))
            elif target != NIL_ID and target not in events:
                bad.append(
                    Bad(
                        line.chunk,
                        line.offset,
                        line.length,
                        f"checkout names an event not before it: {target}",
                        target,
                    )
                )
            else:
                head = target
            return
        problem = stored_record_problem(rec)
        if problem:
            bad.append(Bad(line.chunk, line.offset, line.length, problem))
            return
        why = f"event id {rec['id']} does not increase" if order and rec["id"] <= order[-1] else _late_parent(rec)
        if why:
            bad.append(Bad(line.chunk, line.offset, line.length, why))
            refused.add(rec["id"])
            return
        rec["_loc"] = (line.chunk, line.offset, line.length)
        events[rec["id"]] = rec
        order.append(rec["id"])
        head = rec["id"]

    after_damage = False
    for line in log.scan(0, 0):
        if not line.complete:
            item = Bad(line.chunk, line.offset, line.length, "torn record")
            if line.chunk == last:
                torn = item
            else:
                bad.append(
                    Bad(
                        line.chunk,
                        line.offset,
                        line.length,
                        "record cut short before the end of a non-final chunk",
                    )
                )
            continue
        try:
            rec = decode_line(line.data)
        except LineError as exc:
            flush_pending("batch broken by a damaged member")
            bad.append(Bad(line.chunk, line.offset, line.length, str(exc)))
            after_damage = True  # the members after it belong to the batch it broke
            continue
        txn = rec.get("txn")
        if txn is not None and batch_marker(txn) is None:
            flush_pending("batch broken by a damaged member")
            bad.append(Bad(line.chunk, line.offset, line.length, "malformed batch marker"))
            continue
        if pending and (txn is None or txn[0] != len(pending)):
            flush_pending("batch is missing members")
        after_damage = after_damage and txn is not None and txn[0] > 0
        if txn is not None:
            if txn[0] != len(pending):
                why = "batch broken by a damaged member" if after_damage else "batch member out of order"
                bad.append(Bad(line.chunk, line.offset, line.length, why))
                continue
            pending.append((rec, line))
            if len(pending) == txn[1]:
                # All or nothing (invariant 6): one bad member condemns the
                # batch, or repair would keep members that cannot stand alone.
                broken, prev = None, order[-1] if order else ""
                for r, _ in pending:
                    if "op" in r:  # a commit's HEAD move rides in its batch
                        ok = r.get("op") == "checkout" and is_event_id(r.get("head"))
                        broken = None if ok else "a batch holds an unknown record"
                    else:
                        broken = stored_record_problem(r)
                        if not broken and r["id"] <= prev:
                            broken = f"event id {r['id']} does not increase"
                        broken = broken or _late_parent(r)
                        prev = r["id"]
                    if broken:
                        break
                if broken:
                    flush_pending(f"batch broken by a damaged member: {broken}")
                    continue
                for r, ln in pending:
                    apply(r, ln)
                pending.clear()
            continue
        apply(rec, line)
    torn_batch = list(pending)
    if pending:
        first = pending[0][1]
        span = sum(ln.length for _, ln in pending)
        torn = Bad(first.chunk, first.offset, span + (torn.length if torn else 0), "batch cut short by a crash")
        pending.clear()
    return Scan(events, order, head, bad, torn, refused, torn_batch)


def verify_session(fs: OsFs, layout: Layout, session_id: str) -> list[Problem]:
    problems: list[Problem] = []

    def add(path: str, offset: int | None, message: str, severity: str = "error", repairable: bool = True) -> None:
        problems.append(Problem(session_id, path, offset, message, severity, repairable))

    # An open writer keeps HEAD in memory (the file is written when it
    # closes), completes the index as it commits, and may be mid-write at
    # the log's end: what would otherwise be warnings is the writer at work.
    live = writer_is_live(layout.locks, session_id) is True
    problems += meta_file_problems(fs, layout.meta(session_id), session_id)
    try:
        log = ChunkLog(fs, layout.chunks(session_id), chunk_size=1 << 62, durable=False, writable=False)
    except (CorruptionError, StorageError) as exc:
        add(layout.chunks(session_id), None, str(exc))
        return problems
    try:
        scan = scan_log(log)
        _report_bad(log, scan.bad, add)
        acknowledged = acknowledged_end_of(fs, layout.index(session_id))
        if scan.torn is not None and cut_after_ack(scan.torn, acknowledged):
            assert acknowledged is not None  # (for the type checker)
            kept = f"keeps its {len(scan.torn_batch)} intact records" if scan.torn_batch else "sets it aside"
            add(
                log.path(scan.torn.chunk),
                scan.torn.offset,
                f"{scan.torn.reason.replace(' by a crash', '')} ({scan.torn.length} bytes), where the index shows "
                f"records acknowledged up to byte {acknowledged[1]} of chunk {acknowledged[0]}: the log was cut "
                f"short after they were synced (damage, not a crash); fsck --repair {kept}",
            )
        elif scan.torn is not None and not live:
            add(
                log.path(scan.torn.chunk),
                scan.torn.offset,
                f"{scan.torn.reason} ({scan.torn.length} bytes); the next writer cuts it off",
                "warning",
            )
        quarantined = _quarantined_bytes(fs, log)
        for event_id in scan.order:
            rec = scan.events[event_id]
            parent = rec["parent_id"]
            if parent != NIL_ID and parent not in scan.events and parent not in scan.refused:
                chunk, offset, _ = rec["_loc"]
                if quarantined and (parent.encode() in quarantined or not scan.bad):
                    # Only repair removes a record whole; a damaged record's own
                    # id may be unreadable, so any quarantine explains the gap
                    # (unless damage not yet repaired is there to explain it).
                    add(
                        log.path(chunk),
                        offset,
                        f"event {event_id} follows {parent}, which is "
                        "not in the log: fsck --repair quarantined a record; this branch "
                        "now starts here",
                        "warning",
                        repairable=False,
                    )
                elif scan.bad:
                    add(
                        log.path(chunk),
                        offset,
                        f"event {event_id} names a missing parent {parent}: a damaged record reported "
                        "here may be it (fsck --repair keeps this event reachable)",
                    )
                else:
                    add(log.path(chunk), offset, f"event {event_id} names a missing parent {parent}")
        _verify_index(fs, layout.index(session_id), layout.legacy_index(session_id), scan, add, live)
        if not live:
            _verify_head(fs, layout.head(session_id), scan, add)
        _verify_blobs(fs, BlobStore(fs, layout.blobs(session_id), durable=False), scan, add)
    finally:
        log.close()
    return problems


def _report_bad(log: ChunkLog, bads: list[Bad], add: Report) -> None:
    """One problem per damaged place: a run of adjacent lines condemned for
    one reason (the members of a batch that one damaged record broke, say)
    is one problem, not one per line."""
    run: list[Bad] = []

    def flush() -> None:
        if not run:
            return
        first = run[0]
        if len(run) == 1:
            add(log.path(first.chunk), first.offset, first.reason)
        else:
            span = sum(b.length for b in run)
            add(log.path(first.chunk), first.offset, f"{first.reason} ({len(run)} records, {span} bytes)")
        run.clear()

    for b in sorted(bads, key=lambda b: (b.chunk, b.offset)):
        last = run[-1] if run else None
        if last is not None and (last.chunk, last.offset + last.length, last.reason) != (b.chunk, b.offset, b.reason):
            flush()
        run.append(b)
    flush()


def cut_after_ack(torn: Bad, acknowledged: tuple[int, int] | None) -> bool:
    """True if a torn tail starts before where the index vouches the log
    reached: damage, not a crash (a crash cannot take synced bytes)."""
    return acknowledged is not None and (torn.chunk, torn.offset) < acknowledged


def _quarantined_bytes(fs: OsFs, log: ChunkLog) -> bytes:
    """Everything repair moved aside, to recognise parents it took away."""
    return b"".join(
        fs.read_file(os.path.join(log.dir, name))
        for name in sorted(fs.listdir(log.dir))
        if name.endswith(".quarantine")
    )


def _verify_index(fs: OsFs, path: str, legacy: str, scan: Scan, add: Report, live: bool) -> None:
    if not fs.exists(path) and fs.exists(legacy):
        add(legacy, None, "index in format version 1; the next open builds index.bin from the chunks", "warning")
        return
    try:
        data = fs.read_file(path)
    except StorageError as exc:
        add(path, None, f"index unreadable ({exc.detail}); the next writer rebuilds it", "warning")
        return
    index = Index(fs, path, writable=False)
    try:
        if index.reset_reason is not None:
            # The header is rewritten in place and never synced: a crash can tear it.
            add(path, 0, f"index header: {index.reset_reason}; the next writer rebuilds the index", "warning")
            return
        _verify_index_entries(index, data, path, scan, add, live)
    finally:
        index.close()


def _verify_index_entries(index: Index, data: bytes, path: str, scan: Scan, add: Report, live: bool) -> None:
    if index.torn_bytes and not live:
        at = HEADER_SIZE + index.count * ENTRY_SIZE
        add(path, at, "torn final index entry; the next writer cuts it off", "warning")
    for i in range(index.count):
        at = HEADER_SIZE + i * ENTRY_SIZE
        try:
            entry = index.entry_at(i)
        except NamesBehind as exc:  # the entry reached the disk, the header's new name did not
            add(path, at, f"{exc}; the next open rebuilds the index", "warning")
            continue
        except IndexDamaged as exc:
            if not data[at : at + ENTRY_SIZE].strip(b"\0"):  # size reached the disk before the data: a crash
                add(path, at, f"index entry {i} was never written (zeros); the next open rebuilds the index", "warning")
            else:
                add(path, at, str(exc))
            continue
        if i >= len(scan.order) and live:
            # Read after the log was scanned: a live writer's appends since,
            # newer than what was read, not damage. (Within what was read,
            # the writer only appends, so a disagreement there still is.)
            break
        if i >= len(scan.order) or entry.id != scan.order[i]:
            add(path, at, f"index entry {i} names {entry.id}, the log does not agree")
            return
        rec = scan.events[entry.id]
        if (entry.chunk, entry.offset, entry.length) != rec["_loc"]:
            add(path, at, f"index entry {i} gives the wrong location for {entry.id}")
        elif entry.parent_id != rec["parent_id"] or (
            entry.complete
            and (entry.kind, entry.role, entry.timestamp, entry.branch_from, entry.digest)
            != (rec["kind"], rec.get("role"), rec["timestamp"], rec.get("branch_from"), rec.get("digest"))
        ):
            add(path, at, f"index entry {i} disagrees with the record of {entry.id}")
    if index.count < len(scan.order) and not live:
        add(
            path,
            None,
            f"index lags the log by {len(scan.order) - index.count} events; the next writer completes it",
            "warning",
        )


def _verify_head(fs: OsFs, path: str, scan: Scan, add: Report) -> None:
    text: str | None
    try:
        text = fs.read_file(path).decode("ascii", "replace").strip()
    except StorageError:
        text = None  # reported below as a HEAD file that disagrees (a cache)
    if text != scan.head:
        add(
            path,
            None,
            f"HEAD file says {text!r}, the log says "
            f"{scan.head if scan.head != NIL_ID else 'none (no event of it can be read)'}; the next writer corrects it"
            " (once fsck --repair has fixed any error reported with it)",
            "warning",
        )
    if fs.exists(path + ".tmp"):
        add(path + ".tmp", None, "interrupted HEAD update; the next writer removes it", "warning")


def _verify_blobs(fs: OsFs, blobs: BlobStore, scan: Scan, add: Report) -> None:
    seen: set[str] = set()
    for event_id in scan.order:
        digest = scan.events[event_id].get("digest")
        if not digest or digest in seen:
            continue
        seen.add(digest)
        try:
            blobs.get(digest)
        except CorruptionError as exc:
            if not fs.exists(exc.path) and fs.exists(exc.path + ".quarantine"):
                # Repair set it aside (its content did not match): the payload
                # is lost and no repair brings it back. Said every run, as a
                # warning, so that a repaired session checks clean.
                add(
                    exc.path,
                    None,
                    f"blob {digest} was quarantined by fsck --repair (its content did not match its digest): "
                    f"the payload of event {event_id} is lost; the damaged bytes are in {exc.path}.quarantine",
                    "warning",
                    repairable=False,
                )
                continue
            if not fs.exists(exc.path) and fs.exists(exc.path + LOST):
                # No file held it when repair ran, which wrote that down.
                add(
                    exc.path,
                    None,
                    f"blob {digest} was missing when fsck --repair ran (noted in {exc.path}{LOST}): "
                    f"the payload of event {event_id} is lost",
                    "warning",
                    repairable=False,
                )
                continue
            add(exc.path, None, f"{exc.reason} (event {event_id})")
    for name in fs.listdir(blobs.dir):
        if name.startswith(".tmp-"):
            add(os.path.join(blobs.dir, name), None, "leftover temporary blob", "warning")
