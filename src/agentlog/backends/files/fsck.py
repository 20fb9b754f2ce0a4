"""fsck for the file backend: verify everything, and the explicit repair.

``verify_session`` reads every byte a session stores and changes nothing.
``repair_session`` is the only code that removes bytes from a chunk: it
moves each damaged record into ``chunks/<n>.jsonl.quarantine`` (never
deleting it), writes a tombstone in the place of each damaged event
record whose id and parent it can recover (tombstone.py), so that every
intact event keeps its path and HEAD stays, rewrites the chunk (temp file,
sync, rename), then lets the next open rebuild the index and HEAD from
the log. Before any of that it rewrites a session.json that fails its
check without the fields at fault, the old one kept beside it
(``meta.repair_meta_file``).
"""

from __future__ import annotations

import bisect
import itertools
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..._codec import LineError, decode_line, encode_line
from ..._fs import OsFs
from ..._lease import writer_is_live
from ...errors import CorruptionError, StorageError
from ...event import NIL_ID, digest_of, format_timestamp, is_event_id, stored_record_problem
from ..base import Commit, Problem, SessionStorage
from .blobs import BlobStore
from .chunklog import ChunkLog, Line
from .index import ENTRY_SIZE, HEADER_SIZE, Index, IndexDamaged, NamesBehind, acknowledged_end_of
from .layout import Layout, chunk_name, parse_chunk_name
from .meta import meta_file_problems, repair_meta_file
from .tombstone import fits, index_entries_by_location, neighbour_txn, recover, tombstone_line

_STAMP_OK = re.compile(r"[ !#-\[\]-~]{1,40}\Z")  # what stored_record_problem accepts

Report = Callable[..., None]

__all__ = ["repair_session", "verify_session"]


@dataclass
class _Bad:
    chunk: int
    offset: int
    length: int
    reason: str
    #: for a checkout refused because no event before it has the id it
    #: names: that id (repair keeps the checkout if a tombstone gets the id)
    target: str | None = None


@dataclass
class _Scan:
    """What a full read of the log found."""

    events: dict[str, dict[str, Any]]  # id -> record (+ _loc)
    order: list[str]
    head: str
    bad: list[_Bad]
    torn: _Bad | None  # a torn tail the next writer open cuts off
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


def _scan_log(log: ChunkLog) -> _Scan:
    events: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    bad: list[_Bad] = []
    refused: set[str] = set()
    torn = None
    head = NIL_ID
    last = len(log.numbers) - 1
    pending: list[tuple[dict[str, Any], Any]] = []

    def flush_pending(reason: str) -> None:
        for _rec, line in pending:
            bad.append(_Bad(line.chunk, line.offset, line.length, reason))
        pending.clear()

    def apply(rec: dict[str, Any], line: Any) -> None:
        nonlocal head
        if "op" in rec:
            target = rec.get("head")
            if rec.get("op") != "checkout" or not is_event_id(target):
                bad.append(_Bad(line.chunk, line.offset, line.length, "unknown record"))
            elif target != NIL_ID and target not in events:
                bad.append(
                    _Bad(
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
            bad.append(_Bad(line.chunk, line.offset, line.length, problem))
            return
        why = f"event id {rec['id']} does not increase" if order and rec["id"] <= order[-1] else _late_parent(rec)
        if why:
            bad.append(_Bad(line.chunk, line.offset, line.length, why))
            refused.add(rec["id"])
            return
        rec["_loc"] = (line.chunk, line.offset, line.length)
        events[rec["id"]] = rec
        order.append(rec["id"])
        head = rec["id"]

    after_damage = False
    for line in log.scan(0, 0):
        if not line.complete:
            item = _Bad(line.chunk, line.offset, line.length, "torn record")
            if line.chunk == last:
                torn = item
            else:
                bad.append(
                    _Bad(
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
            bad.append(_Bad(line.chunk, line.offset, line.length, str(exc)))
            after_damage = True  # the members after it belong to the batch it broke
            continue
        txn = rec.get("txn")
        if txn is not None and not (
            isinstance(txn, list)
            and len(txn) == 2
            and isinstance(txn[0], int)
            and isinstance(txn[1], int)
            and 0 <= txn[0] < txn[1]
        ):
            flush_pending("batch broken by a damaged member")
            bad.append(_Bad(line.chunk, line.offset, line.length, "malformed batch marker"))
            continue
        if pending and (txn is None or txn[0] != len(pending)):
            flush_pending("batch is missing members")
        after_damage = after_damage and txn is not None and txn[0] > 0
        if txn is not None:
            if txn[0] != len(pending):
                why = "batch broken by a damaged member" if after_damage else "batch member out of order"
                bad.append(_Bad(line.chunk, line.offset, line.length, why))
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
        torn = _Bad(first.chunk, first.offset, span + (torn.length if torn else 0), "batch cut short by a crash")
        pending.clear()
    return _Scan(events, order, head, bad, torn, refused, torn_batch)


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
        scan = _scan_log(log)
        _report_bad(log, scan.bad, add)
        acknowledged = acknowledged_end_of(fs, layout.index(session_id))
        if scan.torn is not None and _cut_after_ack(scan.torn, acknowledged):
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
                if quarantined:
                    # Only repair removes a record whole; a damaged record's own
                    # id may be unreadable, so any quarantine explains the gap.
                    add(
                        log.path(chunk),
                        offset,
                        f"event {event_id} follows {parent}, which is "
                        "not in the log: fsck --repair quarantined a record; this branch "
                        "now starts here",
                        "warning",
                        repairable=False,
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


def _report_bad(log: ChunkLog, bads: list[_Bad], add: Report) -> None:
    """One problem per damaged place: a run of adjacent lines condemned for
    one reason (the members of a batch that one damaged record broke, say)
    is one problem, not one per line."""
    run: list[_Bad] = []

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


def _cut_after_ack(torn: _Bad, acknowledged: tuple[int, int] | None) -> bool:
    """True if a torn tail starts before where the index vouches the log
    reached: damage, not a crash (a crash cannot take synced bytes)."""
    return acknowledged is not None and (torn.chunk, torn.offset) < acknowledged


_KEPT_MEMBER = "an intact member of an acknowledged batch cut short, written back in its place"


def _keep_cut_batch(scan: _Scan, plan: dict[tuple[int, int], bytes]) -> list[_Bad]:
    """The lines of an acknowledged batch cut short at the end of the log,
    for repair: each intact member is set aside and written back in place
    with its marker renumbered into a whole batch of the members that are
    left (``plan``), so that none of them is lost; a torn last record is
    set aside."""
    assert scan.torn is not None
    members = scan.torn_batch
    out = []
    for i, (rec, line) in enumerate(members):
        plan[(line.chunk, line.offset)] = encode_line({**rec, "txn": [i, len(members)]})
        out.append(_Bad(line.chunk, line.offset, line.length, _KEPT_MEMBER))
    end = members[-1][1].offset + members[-1][1].length if members else scan.torn.offset
    rest = scan.torn.offset + scan.torn.length - end
    if rest > 0:
        out.append(_Bad(scan.torn.chunk, end, rest, "torn record"))
    return out


def _quarantined_bytes(fs: OsFs, log: ChunkLog) -> bytes:
    """Everything repair moved aside, to recognise parents it took away."""
    return b"".join(
        fs.read_file(os.path.join(log.dir, name))
        for name in sorted(fs.listdir(log.dir))
        if name.endswith(".quarantine")
    )


def _intact_head(scan: _Scan) -> str:
    """HEAD if its ancestry is whole, else the newest event whose ancestry is."""
    intact: set[str] = {NIL_ID}
    for event_id in scan.order:
        if scan.events[event_id]["parent_id"] in intact:
            intact.add(event_id)
    if scan.head in intact:
        return scan.head
    return next((e for e in reversed(scan.order) if e in intact), NIL_ID)


def _verify_index(fs: OsFs, path: str, legacy: str, scan: _Scan, add: Report, live: bool) -> None:
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


def _verify_index_entries(index: Index, data: bytes, path: str, scan: _Scan, add: Report, live: bool) -> None:
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


def _verify_head(fs: OsFs, path: str, scan: _Scan, add: Report) -> None:
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


def _verify_blobs(fs: OsFs, blobs: BlobStore, scan: _Scan, add: Report) -> None:
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
            add(exc.path, None, f"{exc.reason} (event {event_id})")
    for name in fs.listdir(blobs.dir):
        if name.startswith(".tmp-"):
            add(os.path.join(blobs.dir, name), None, "leftover temporary blob", "warning")


def repair_session(
    fs: OsFs,
    layout: Layout,
    session_id: str,
    chunk_size: int,
    open_writer: Callable[[], SessionStorage],
) -> list[str]:
    """Quarantine damaged records, then let a writer rebuild index and HEAD.
    The caller holds the session's lease; ``open_writer`` opens its storage.

    A damaged event record whose id and parent can be recovered
    (tombstone.py) is replaced by a tombstone in the same place, so every
    intact event after it keeps its path and HEAD stays."""
    actions = repair_meta_file(fs, layout.meta(session_id), session_id)
    actions += _restore_layout(fs, layout, session_id)
    log = ChunkLog(fs, layout.chunks(session_id), chunk_size=chunk_size, durable=True, writable=True)
    try:
        scan = _scan_log(log)
        sizes = {n: log.size(n) for n in log.numbers}  # before repair appends anything
        entries = index_entries_by_location(fs, layout.index(session_id))
        scan.bad = _split_merged(_merge_split(scan.bad, entries), entries, log)
        by_chunk: dict[int, list[_Bad]] = {}
        planned = _plan_tombstones(entries, log, scan)
        plan = planned.lines
        if plan:
            # A checkout of an event whose line is damaged named an event
            # that was there: the tombstone written in that line's place
            # holds its id, so the checkout stands and HEAD stays. The scan
            # after the tombstones are written checks it again.
            scan.bad = [b for b in scan.bad if b.target is None or b.target not in planned.ids]
        # A torn tail too: a writer's open would cut it off, but repair
        # never deletes (and damage can look like a torn tail). Where the
        # index shows it acknowledged, its intact records stay.
        torn = [scan.torn] if scan.torn else []
        if scan.torn is not None and _cut_after_ack(scan.torn, acknowledged_end_of(fs, layout.index(session_id))):
            torn = _keep_cut_batch(scan, plan)
            where = f"{log.path(scan.torn.chunk)}@{scan.torn.offset}"
            if scan.torn_batch:
                actions.append(
                    f"kept the {len(scan.torn_batch)} intact records of an acknowledged batch cut short at {where}, "
                    f"written back in place as a whole batch of {len(scan.torn_batch)} (their bytes as they were, "
                    f"and the torn rest, are in {log.path(scan.torn.chunk)}.quarantine)"
                )
            else:  # one acknowledged record cut short: nothing of it is whole
                actions.append(
                    f"moved the acknowledged record cut short at {where} to "
                    f"{log.path(scan.torn.chunk)}.quarantine (no part of it was whole)"
                )
        for b in scan.bad + torn:
            by_chunk.setdefault(b.chunk, []).append(b)
        already_cut = _cut_before(scan, planned)
        rewrites: dict[int, _Rewrite] = {}
        for chunk, bads in sorted(by_chunk.items()):
            done, rewrites[chunk] = _quarantine(fs, log, chunk, bads, plan)
            actions += done
        if plan:
            # A tombstone or a kept batch member that still does not fit (a
            # recovered id out of order, a batch still short) is found by the
            # same scan an open runs, and quarantined the old way.
            log.close()
            log = ChunkLog(fs, layout.chunks(session_id), chunk_size=chunk_size, durable=True, writable=True)
            again: dict[int, list[_Bad]] = {}
            rescan = _scan_log(log)
            # A kept batch still short at the end of the log reads as a torn
            # tail: quarantined too, or the writer's open would cut it off.
            for b in rescan.bad + ([rescan.torn] if rescan.torn else []):
                again.setdefault(b.chunk, []).append(b)
            for chunk, bads in sorted(again.items()):
                unchanged = _Rewrite([(0, 0, 1 << 62)], set())  # a chunk the first pass left alone
                actions += _quarantine(fs, log, chunk, bads, {}, rewrites.get(chunk, unchanged))[0]
        blobs = BlobStore(fs, layout.blobs(session_id), durable=True)
        # Leftovers of blob writes a crash interrupted; never named by an
        # event (the rename comes first), so removing them loses nothing.
        for name in blobs.clean_temporaries():
            actions.append(f"removed {os.path.join(blobs.dir, name)}: an unfinished blob write")
        for event_id in scan.order:
            digest = scan.events[event_id].get("digest")
            if not digest:
                continue
            path = blobs.path(digest)
            if fs.exists(path) and digest_of(fs.read_file(path)) != digest:
                fs.rename(path, path + ".quarantine")
                actions.append(f"moved {path} to {path}.quarantine (content does not match its digest)")
    finally:
        log.close()
    for index in (layout.index(session_id), layout.legacy_index(session_id)):
        if fs.exists(index):
            # Always: the index is derived, and fsck can find it wrong (a
            # damaged entry, a wrong location) while every chunk is whole.
            fs.unlink(index)
            actions.append(f"removed {os.path.basename(index)}; rebuilt from the chunks on open")
    storage = open_writer()
    try:
        if actions:
            log = ChunkLog(fs, layout.chunks(session_id), chunk_size=chunk_size, durable=False, writable=False)
            try:
                final = _scan_log(log)
            finally:
                log.close()
            head = _intact_head(final)
            if head != storage.head():
                # A quarantined event cut HEAD's path; keep the newest whole
                # path active. Nothing is rewritten: a checkout is appended.
                storage.commit(Commit((), head, storage.head())).wait()
                actions.append(
                    f"moved HEAD to {head}: the path to the old HEAD ran through a record quarantined or lost"
                )
            actions += _unreachable_report(final, already_cut)
            actions += _lost_report(entries, sizes, final)
    finally:
        storage.close()
    return actions


def _lost_report(entries: dict[tuple[int, int, int], dict[str, Any]], sizes: dict[int, int], scan: _Scan) -> list[str]:
    """Name the events the old index knew (intact entries, by their own
    checksums) framed past the end of what the log holds: a chunk deleted or
    cut short by hand or by a disk (damaged bytes still there are reported
    as quarantined instead). Removing the index would otherwise forget them
    without a word, and fsck would then find nothing to say."""
    lost = sorted(
        {
            e["id"]
            for (chunk, offset, length), e in entries.items()
            # wholly past the end: a record partly still there is a torn
            # tail, which repair quarantines and reports as such
            if is_event_id(e.get("id")) and offset >= sizes.get(chunk, 0)
        }
        - set(scan.events)
    )
    if not lost:
        return []
    return [
        f"{len(lost)} events the index knew are in no chunk any more (their records are lost, "
        f"not quarantined): {', '.join(lost)}"
    ]


def _restore_layout(fs: OsFs, layout: Layout, session_id: str) -> list[str]:
    """Recreate what a power loss can take from a session created under
    ``durability="off"`` (nothing synced): its directories, an empty first chunk."""
    actions = []
    for path in (layout.chunks(session_id), layout.blobs(session_id)):
        if not fs.exists(path):
            fs.mkdir(path)
            fs.fsync_dir(os.path.dirname(path))
            actions.append(f"recreated the missing directory {path}")
    chunks = layout.chunks(session_id)
    numbers = sorted(n for n in map(parse_chunk_name, fs.listdir(chunks)) if n is not None)
    if not numbers:
        path = os.path.join(chunks, chunk_name(0))
        fs.close(fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        fs.fsync_dir(chunks)
        actions.append(f"created the missing first chunk {path} (empty)")
        return actions
    # A chunk missing between others (deleted, or under "off" a power loss
    # kept a later chunk's directory entry and not this one's) makes every
    # open refuse the session. An empty chunk in its place lets the log be
    # read again; what it held is named by the index (_lost_report) and the
    # events cut from the root by _unreachable_report.
    gaps = sorted(set(range(numbers[-1] + 1)) - set(numbers))
    for number in gaps:
        path = os.path.join(chunks, chunk_name(number))
        fs.close(fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
        actions.append(f"created the missing chunk {path} (empty): the records it held are lost")
    if gaps:
        fs.fsync_dir(chunks)
    return actions


_KEEP = b""  # plan value: an intact batch member stays where it is


@dataclass
class _Plan:
    """What repair will write in place of the bad lines."""

    #: (chunk, offset) of a bad line -> its tombstone line, or _KEEP for an
    #: intact member of a batch that a tombstone makes whole again
    lines: dict[tuple[int, int], bytes]
    #: the ids the bad lines are known to hold (tombstones, intact members of
    #: condemned batches, kept or not)
    ids: set[str]
    #: (id before, id after) in log order around each damaged line: what it
    #: held (one record, or more when a lost newline merged lines) sorts between
    slots: list[tuple[str, str | None]]


def _merge_split(bads: list[_Bad], entries: dict[tuple[int, int, int], dict[str, Any]]) -> list[_Bad]:
    """A byte turned into a newline splits one record into two lines: bad
    lines that together span exactly what one index entry frames are one
    damaged record again."""
    bads = sorted(bads, key=lambda b: (b.chunk, b.offset))
    spans = {(c, o): n for c, o, n in entries}
    out: list[_Bad] = []
    i = 0
    while i < len(bads):
        b = bads[i]
        want = spans.get((b.chunk, b.offset))
        j, end = i, b.offset + b.length
        if want is not None:
            while (
                end < b.offset + want
                and j + 1 < len(bads)
                and (bads[j + 1].chunk, bads[j + 1].offset) == (b.chunk, end)
            ):
                j += 1
                end += bads[j].length
        if want is not None and j > i and end == b.offset + want:
            out.append(_Bad(b.chunk, b.offset, end - b.offset, b.reason + " (a newline inside the record)"))
        else:
            out.append(b)
            j = i
        i = j + 1
    return out


def _split_merged(bads: list[_Bad], entries: dict[tuple[int, int, int], dict[str, Any]], log: ChunkLog) -> list[_Bad]:
    """A lost newline merges two records into one line: a bad line that holds,
    at the very offset the index gives, the start of a record the index
    frames (``{"id":"<its id>"``) is cut there; so is a line that does not
    decode at every index entry that frames a record wholly inside it (a
    range of zeros). The pieces are planned one by one (an intact record
    among them is kept as it is)."""
    starts: dict[int, list[tuple[int, str, int]]] = {}
    for (c, o, n), e in entries.items():
        if isinstance(e.get("id"), str):
            starts.setdefault(c, []).append((o, e["id"], n))
    for found in starts.values():
        found.sort()
    out: list[_Bad] = []
    for b in bads:
        found = starts.get(b.chunk, [])
        # ("~" sorts after any id: entries that start strictly inside the line)
        lo = bisect.bisect_right(found, (b.offset, "~"))
        inside = found[lo : bisect.bisect_left(found, (b.offset + b.length, ""), lo)]
        if not inside:
            out.append(b)
            continue
        data = log.read(b.chunk, b.offset, b.length)
        end = b.offset + b.length
        # A range of zeros (a lost page: the most common damage a disk
        # leaves) wipes newlines and record starts alike, so the start of a
        # record is often unreadable too. Where the line is no record at all
        # (it does not decode) and an intact index entry frames a record
        # wholly inside it, the index is believed: it was written from those
        # very bytes. A line that decodes is never cut this way (a whole
        # record moved by a swap may hold another's frame).
        framed = not _decodes(data)
        cuts, why = [b.offset], " (records merged: a newline lost)"
        for o, i, n in inside:
            if data[o - b.offset :].startswith(b'{"id":"' + i.encode() + b'"'):
                cuts.append(o)
            elif framed and o + n <= end:
                cuts.append(o)
                why = " (records merged: their newlines lost; cut where the index frames each)"
        cuts.append(end)
        if len(cuts) == 2:
            out.append(b)
            continue
        for start, stop in itertools.pairwise(cuts):
            out.append(_Bad(b.chunk, start, stop - start, b.reason + why))
    return out


def _decodes(data: bytes) -> bool:
    try:
        decode_line(data)
    except LineError:
        return False
    return True


def _plan_tombstones(entries: dict[tuple[int, int, int], dict[str, Any]], log: ChunkLog, scan: _Scan) -> _Plan:
    """A tombstone for each damaged event line whose identity is recovered
    and fits; the intact members of batches those make whole are kept."""
    bads = sorted(scan.bad, key=lambda b: (b.chunk, b.offset))
    # Every intact event in log order: those the scan applied, and the intact
    # members of batches a damaged member condemned (kept if a tombstone
    # makes their batch whole).
    intact: dict[tuple[int, int], dict[str, Any]] = {scan.events[e]["_loc"][:2]: scan.events[e] for e in scan.order}
    damaged: list[tuple[_Bad, bytes]] = []
    keep: list[tuple[int, int]] = []
    for b in bads:
        data = log.read(b.chunk, b.offset, b.length)
        try:
            rec: dict[str, Any] | None = decode_line(data)
        except LineError:
            rec = None
        if rec is not None and "op" not in rec and stored_record_problem(rec) is None:
            intact[(b.chunk, b.offset)] = rec
            keep.append((b.chunk, b.offset))
        else:
            damaged.append((b, data))
    locs = sorted(intact)
    ids = [intact[loc]["id"] for loc in locs]
    present = set(ids)
    missing = {r["parent_id"] for r in intact.values()} - present - {NIL_ID}
    plan: dict[tuple[int, int], bytes] = {}
    planned: set[str] = set()
    lines_of: dict[int, list[Line]] = {}
    found = [
        (b, recover(data.rstrip(b"\n"), entry))
        for (b, data), entry in zip(damaged, _index_entries_for(entries, damaged, locs, ids, present), strict=True)
    ]
    # Ids some record names as its parent but no line holds: the intact
    # events' parents, and the parents read from other damaged lines.
    missing |= {r.parent_id for _, r in found if r is not None} - present - {NIL_ID}
    slots: list[tuple[str, str | None]] = []
    txn_ends: dict[tuple[int, int], list[int]] = {}  # (chunk, end) of a tombstone -> its batch marker
    for b, recovered in found:
        i = bisect.bisect_left(locs, (b.chunk, b.offset))
        before = ids[i - 1] if i else ""
        after = ids[i] if i < len(ids) else None
        slots.append((before, after))
        if recovered is None:
            continue
        # The batch marker comes from the intact lines around it: a flipped
        # digit in the damaged marker itself would still look like one.
        prev_rec, next_rec = _around(log, lines_of, b)
        if prev_rec is None and (b.chunk, b.offset) in txn_ends:
            prev_rec = {"txn": txn_ends[(b.chunk, b.offset)]}  # the tombstone just before it
        if prev_rec is not None or next_rec is not None:
            # Where a neighbour is unknown too (damaged) and the other says
            # nothing, the marker read from the damaged bytes stands.
            said = neighbour_txn(prev_rec, next_rec)
            if said is not None or (prev_rec is not None and next_rec is not None):
                recovered.txn = said
        if recovered.source != "index" and recovered.id not in missing:
            # A damaged id can still look like an id: the missing id that
            # sorts here and is nearest to it (a flipped byte or two; ids
            # written close together share most characters) is the one,
            # when exactly one is nearest.
            near = sorted(
                (sum(x != y for x, y in zip(m, recovered.id, strict=True)), m)
                for m in missing
                if m > before and (after is None or m < after)
            )
            if near and near[0][0] <= 2 and (len(near) == 1 or near[1][0] > near[0][0]):
                recovered.id = near[0][1]
        known = set(ids[:i]) | planned  # a parent comes before its child
        if recovered.id in planned or not fits(recovered, before, after, known):
            continue  # (a second damaged copy of one record: the first has the tombstone)
        stamp = recovered.timestamp
        if stamp is None or not _STAMP_OK.match(stamp):
            stamp = intact[locs[i - 1]]["timestamp"] if i else format_timestamp(time.time_ns())
        where = {
            "file": chunk_name(b.chunk) + ".quarantine",
            "from": chunk_name(b.chunk),
            "offset": b.offset,
            "length": b.length,
            "reason": b.reason,
        }
        plan[(b.chunk, b.offset)] = tombstone_line(recovered, stamp, where)
        if recovered.txn is not None:
            txn_ends[(b.chunk, b.offset + b.length)] = recovered.txn
        planned.add(recovered.id)
        missing.discard(recovered.id)  # found: no second damaged line may take it
    for at in keep:
        # Kept even without a tombstone (damage inserted between members);
        # a batch still short is found by the second scan and quarantined.
        plan[at] = _KEEP
    return _Plan(plan, planned | {intact[at]["id"] for at in keep}, slots)


def _index_entries_for(
    entries: dict[tuple[int, int, int], dict[str, Any]],
    damaged: list[tuple[_Bad, bytes]],
    locs: list[tuple[int, int]],
    ids: list[str],
    present: set[str],
) -> list[dict[str, Any] | None]:
    """The index entry of each damaged line: the one that frames it exactly,
    else by order: the entries for ids no line holds that sort between the
    same two intact lines, when there are exactly as many as damaged lines
    there (damage that changed a length shifts every later offset)."""
    out: list[dict[str, Any] | None] = [entries.get((b.chunk, b.offset, b.length)) for b, _ in damaged]
    slots: dict[int, list[int]] = {}
    for k, (b, _) in enumerate(damaged):
        slots.setdefault(bisect.bisect_left(locs, (b.chunk, b.offset)), []).append(k)
    by_id = sorted((e["id"], e) for e in entries.values() if is_event_id(e.get("id")) and e["id"] not in present)
    for i, members in slots.items():
        if all(out[k] is not None for k in members):
            continue
        lo, hi = ids[i - 1] if i else "", ids[i] if i < len(ids) else None
        candidates = [e for eid, e in by_id if eid > lo and (hi is None or eid < hi)]
        if len(candidates) == len(members) and all(
            out[k] is None or out[k] is e for k, e in zip(members, candidates, strict=True)
        ):
            for k, e in zip(members, candidates, strict=True):
                out[k] = e
    return out


def _cut_before(scan: _Scan, plan: _Plan) -> set[str]:
    """Intact events already cut from the root before this repair: their
    ancestry names an id that no line holds, not even a damaged one (an
    earlier repair took it). A missing id that sorts where a damaged line
    sits may be that line's: its loss is this repair's."""
    present = set(scan.order) | plan.ids | {NIL_ID}
    ok: set[str] = set()
    cut: set[str] = set()
    for event_id in scan.order:
        parent = scan.events[event_id]["parent_id"]
        if parent in cut:
            cut.add(event_id)
        elif (
            parent in ok
            or parent in present
            or any(parent > lo and (hi is None or parent < hi) for lo, hi in plan.slots)
        ):
            ok.add(event_id)
        else:
            cut.add(event_id)
    return cut


def _around(
    log: ChunkLog, lines_of: dict[int, list[Line]], b: _Bad
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The decoded lines just before and just after a bad one (None if damaged).
    A bad one may span several lines (a record split by a new newline):
    its neighbours are the lines that end where it starts and start where
    it ends."""
    if b.chunk not in lines_of:  # scan() runs on to later chunks: stop at this one's end
        lines_of[b.chunk] = list(itertools.takewhile(lambda ln: ln.chunk == b.chunk, log.scan(b.chunk, 0)))
    lines = lines_of[b.chunk]
    before = next((ln for ln in lines if ln.offset + ln.length == b.offset), None)
    after = next((ln for ln in lines if ln.offset == b.offset + b.length), None)

    def decoded(ln: Line | None) -> dict[str, Any] | None:
        if ln is None or not ln.complete:
            return None
        try:
            return decode_line(ln.data)
        except LineError:
            return None  # a damaged neighbour says nothing

    return decoded(before), decoded(after)


def _unreachable_report(scan: _Scan, already_cut: set[str]) -> list[str]:
    """Name every intact event whose path to the root this repair cut (a
    damaged record whose id could not be recovered), and apart from them
    those that were cut before it. ``scan``: the log as repair left it (a
    checkout repair appends moves no event)."""
    intact: set[str] = {NIL_ID}
    cut: list[str] = []
    for event_id in scan.order:
        if scan.events[event_id]["parent_id"] in intact:
            intact.add(event_id)
        else:
            cut.append(event_id)
    now = [e for e in cut if e not in already_cut]
    before = [e for e in cut if e in already_cut]
    out = []
    if now:
        out.append(
            f"{len(now)} intact events are no longer reachable from the root "
            f"(a damaged record's id could not be recovered): {', '.join(now)}"
        )
    if before:
        out.append(
            f"{len(before)} intact events were already unreachable from the root "
            f"(a parent no line of the log holds): {', '.join(before)}"
        )
    return out


def _lines_of(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, line) of each line in ``data``, newlines kept."""
    out, pos = [], 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        out.append((pos, data[pos:end]))
        pos = end
    return out


@dataclass
class _Rewrite:
    """Where each byte of a chunk repair rewrote came from."""

    #: (new offset, offset in the chunk as repair found it, length) of each
    #: run of bytes kept, in order
    kept: list[tuple[int, int, int]]
    #: the tombstone lines repair wrote (not the user's bytes)
    written: set[bytes]

    def origin(self, offset: int) -> int | None:
        """The offset a kept byte had before the rewrite (None: repair wrote it)."""
        i = bisect.bisect_right(self.kept, (offset, 1 << 62, 0)) - 1
        if i >= 0:
            new, old, length = self.kept[i]
            if offset < new + length:
                return old + offset - new
        return None


def _quarantine(
    fs: OsFs,
    log: ChunkLog,
    chunk: int,
    bads: list[_Bad],
    plan: dict[tuple[int, int], bytes],
    before: _Rewrite | None = None,
) -> tuple[list[str], _Rewrite]:
    """Move ``bads`` out of the chunk (tombstones or kept members in their
    place, per ``plan``). ``before``: the chunk is repair's own rewrite (a
    second pass); a tombstone it wrote that does not fit is dropped (the
    damaged bytes it stood for are in quarantine already), and the user's
    bytes are quarantined under the offsets they had when repair began."""
    path = log.path(chunk)
    data = fs.read_file(path)
    keep = bytearray()
    rewrite = _Rewrite([], set())
    qpath = path + ".quarantine"
    qfd = fs.open(qpath, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    actions = []

    def copy(start: int, end: int) -> None:
        if end > start:
            rewrite.kept.append((len(keep), start, end - start))
            keep.extend(data[start:end])

    if before is not None:  # one line at a time: a span may hold tombstones and the user's lines
        bads = [
            _Bad(b.chunk, b.offset + start, len(line), b.reason)
            for b in bads
            for start, line in _lines_of(data[b.offset : b.offset + b.length])
        ]
    try:
        pos = 0
        for b in sorted(bads, key=lambda b: b.offset):
            copy(pos, b.offset)
            pos = b.offset + b.length
            damaged = data[b.offset : b.offset + b.length]
            instead = plan.get((chunk, b.offset))
            if instead == _KEEP:
                copy(b.offset, pos)  # an intact batch member: its batch is whole again
                continue
            if before is not None and damaged in before.written and before.origin(b.offset) is None:
                event_id = orjson.loads(damaged)["id"]
                actions.append(f"took back the tombstone for event {event_id}: it does not fit the log around it")
                continue
            offset = b.offset if before is None else before.origin(b.offset)
            header = orjson.dumps(
                {
                    "quarantined_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "from": os.path.basename(path),
                    "offset": offset,
                    "length": len(damaged),
                    "reason": b.reason,
                }
            )
            fs.write(qfd, header + b"\n" + damaged + b"\n", qpath)
            if b.reason == _KEPT_MEMBER and instead:  # one line for the whole batch: repair_session says it
                keep += instead
                rewrite.written.add(instead)
                continue
            actions.append(f"moved {len(damaged)} bytes at {path}@{offset} to {qpath}: {b.reason}")
            if instead:
                keep += instead
                rewrite.written.add(instead)
                event_id = orjson.loads(instead)["id"]
                actions.append(f"wrote a tombstone for event {event_id} in its place: its children keep their path")
        copy(pos, len(data))
        fs.fsync(qfd, qpath)
    finally:
        fs.close(qfd)
    fs.fsync_dir(os.path.dirname(path))
    fs.write_atomic(path, bytes(keep), durable=True)
    return actions, rewrite
