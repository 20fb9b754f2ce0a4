"""The explicit repair of a file-backend session (``fsck --repair``).

``repair_session`` is the only code that removes bytes from a chunk: it
moves each damaged record into ``chunks/<n>.jsonl.quarantine`` (never
deleting it), writes a tombstone in the place of each damaged event
record whose id and parent it can recover (tombstone.py), so that every
intact event keeps its path and HEAD stays, rewrites the chunk (temp file,
sync, rename), then lets the next open rebuild the index and HEAD from
the log. Before any of that it rewrites a session.json that fails its
check without the fields at fault, the old one kept beside it
(``meta.repair_meta_file``).

What is damaged is what fsck's scan finds (fsck.py, ``scan_log``); what
goes in each damaged line's place is decided by repair_plan.py. This
module carries it out (quarantine, rewrite, a second scan, HEAD) and
says what it did.
"""

from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..._codec import encode_line
from ..._fs import OsFs
from ...event import NIL_ID, digest_of, is_event_id
from ..base import Commit, SessionStorage
from .blobs import LOST, BlobStore
from .chunklog import ChunkLog
from .fsck import Bad, Scan, cut_after_ack, scan_log
from .index import acknowledged_end_of
from .layout import Layout, chunk_name, parse_chunk_name
from .meta import repair_meta_file
from .repair_plan import KEEP, cut_before, merge_split, plan_tombstones, split_merged
from .tombstone import index_entries_by_location

__all__ = ["repair_session"]


_KEPT_MEMBER = "an intact member of an acknowledged batch cut short, written back in its place"


def _keep_cut_batch(scan: Scan, plan: dict[tuple[int, int], bytes]) -> list[Bad]:
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
        out.append(Bad(line.chunk, line.offset, line.length, _KEPT_MEMBER))
    end = members[-1][1].offset + members[-1][1].length if members else scan.torn.offset
    rest = scan.torn.offset + scan.torn.length - end
    if rest > 0:
        out.append(Bad(scan.torn.chunk, end, rest, "torn record"))
    return out


def _intact_head(scan: Scan) -> str:
    """HEAD if its ancestry is whole, else the newest event whose ancestry is."""
    intact: set[str] = {NIL_ID}
    for event_id in scan.order:
        if scan.events[event_id]["parent_id"] in intact:
            intact.add(event_id)
    if scan.head in intact:
        return scan.head
    return next((e for e in reversed(scan.order) if e in intact), NIL_ID)


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
        scan = scan_log(log)
        sizes = {n: log.size(n) for n in log.numbers}  # before repair appends anything
        entries = index_entries_by_location(fs, layout.index(session_id))
        scan.bad = split_merged(merge_split(scan.bad, entries), entries, log)
        by_chunk: dict[int, list[Bad]] = {}
        planned = plan_tombstones(entries, log, scan)
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
        if scan.torn is not None and cut_after_ack(scan.torn, acknowledged_end_of(fs, layout.index(session_id))):
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
        already_cut = cut_before(scan, planned)
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
            again: dict[int, list[Bad]] = {}
            rescan = scan_log(log)
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
            elif not (fs.exists(path) or fs.exists(path + ".quarantine") or fs.exists(path + LOST)):
                # Nothing to set aside: the loss is written down, so that
                # fsck names it from then on as a warning no repair clears.
                note = {
                    "lost_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "digest": digest,
                    "event": event_id,
                    "reason": "no file held the blob",
                }
                fs.write_atomic(path + LOST, orjson.dumps(note) + b"\n", durable=True)
                actions.append(
                    f"recorded {path} as lost in {path}{LOST}: no file held it, and the payload of event "
                    f"{event_id} cannot be brought back"
                )
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
                final = scan_log(log)
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


def _lost_report(entries: dict[tuple[int, int, int], dict[str, Any]], sizes: dict[int, int], scan: Scan) -> list[str]:
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


def _unreachable_report(scan: Scan, already_cut: set[str]) -> list[str]:
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
    bads: list[Bad],
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
            Bad(b.chunk, b.offset + start, len(line), b.reason)
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
            if instead == KEEP:
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
