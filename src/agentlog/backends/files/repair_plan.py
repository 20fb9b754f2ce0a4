"""What repair writes in place of each damaged line (the plan, not the writing).

The damaged lines fsck's scan finds (fsck.py) are first cut again along
the frames of the old index: a byte turned into a newline splits one
record into two bad lines (``merge_split`` joins them), a lost newline
merges records into one (``split_merged`` cuts it). Then each damaged
event line whose id and parent can be recovered and fit the log around
it gets a tombstone (tombstone.py), and the intact members of a batch
that tombstone makes whole are kept (``plan_tombstones``).

Apart from repair.py, which carries the plan out, because this part only
reads and decides: it can be run, and fuzzed, on its own (the fuzzer's
``scan`` target runs the scan and this plan, nothing that writes).
"""

from __future__ import annotations

import bisect
import itertools
import re
import time
from dataclasses import dataclass
from typing import Any

from ..._codec import LineError, decode_line
from ...event import NIL_ID, format_timestamp, is_event_id, stored_record_problem
from .chunklog import ChunkLog, Line
from .fsck import Bad, Scan
from .layout import chunk_name
from .tombstone import fits, neighbour_txn, recover, tombstone_line

_STAMP_OK = re.compile(r"[ !#-\[\]-~]{1,40}\Z")  # what stored_record_problem accepts

__all__ = ["KEEP", "Plan", "cut_before", "merge_split", "plan_tombstones", "split_merged"]


KEEP = b""  # plan value: an intact batch member stays where it is


@dataclass
class Plan:
    """What repair will write in place of the bad lines."""

    #: (chunk, offset) of a bad line -> its tombstone line, or KEEP for an
    #: intact member of a batch that a tombstone makes whole again
    lines: dict[tuple[int, int], bytes]
    #: the ids the bad lines are known to hold (tombstones, intact members of
    #: condemned batches, kept or not)
    ids: set[str]
    #: (id before, id after) in log order around each damaged line: what it
    #: held (one record, or more when a lost newline merged lines) sorts between
    slots: list[tuple[str, str | None]]


def merge_split(bads: list[Bad], entries: dict[tuple[int, int, int], dict[str, Any]]) -> list[Bad]:
    """A byte turned into a newline splits one record into two lines: bad
    lines that together span exactly what one index entry frames are one
    damaged record again."""
    bads = sorted(bads, key=lambda b: (b.chunk, b.offset))
    spans = {(c, o): n for c, o, n in entries}
    out: list[Bad] = []
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
            out.append(Bad(b.chunk, b.offset, end - b.offset, b.reason + " (a newline inside the record)"))
        else:
            out.append(b)
            j = i
        i = j + 1
    return out


def split_merged(bads: list[Bad], entries: dict[tuple[int, int, int], dict[str, Any]], log: ChunkLog) -> list[Bad]:
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
    out: list[Bad] = []
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
            out.append(Bad(b.chunk, start, stop - start, b.reason + why))
    return out


def _decodes(data: bytes) -> bool:
    try:
        decode_line(data)
    except LineError:
        return False
    return True


def plan_tombstones(entries: dict[tuple[int, int, int], dict[str, Any]], log: ChunkLog, scan: Scan) -> Plan:
    """A tombstone for each damaged event line whose identity is recovered
    and fits; the intact members of batches those make whole are kept."""
    bads = sorted(scan.bad, key=lambda b: (b.chunk, b.offset))
    # Every intact event in log order: those the scan applied, and the intact
    # members of batches a damaged member condemned (kept if a tombstone
    # makes their batch whole).
    intact: dict[tuple[int, int], dict[str, Any]] = {scan.events[e]["_loc"][:2]: scan.events[e] for e in scan.order}
    damaged: list[tuple[Bad, bytes]] = []
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
        plan[at] = KEEP
    return Plan(plan, planned | {intact[at]["id"] for at in keep}, slots)


def _index_entries_for(
    entries: dict[tuple[int, int, int], dict[str, Any]],
    damaged: list[tuple[Bad, bytes]],
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


def cut_before(scan: Scan, plan: Plan) -> set[str]:
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
    log: ChunkLog, lines_of: dict[int, list[Line]], b: Bad
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
