"""Whole-path reads of the file backend: ancestors in large backward blocks.

A session's active path is mostly a long contiguous run of the log: an
event's parent is usually the record written just before it. Walking it
one index probe and one positioned read per event costs about 30 µs an
event; reading the log backwards in large blocks and taking each parent
from the block costs one checksum and one decode per event.

Only the choice of where to look trusts unchecked bytes (the id sitting
at a fixed place at the start of each event line). A record is accepted
only after its checksum, its id and its fields are verified, as strictly
as a single ``get`` verifies it; anything else (a parent not in the block,
a damaged line, a record larger than a chunk) falls back to ``get``, which
owns the index rebuild and the corruption report.

The inner loop, over a run of consecutive parents, is ``_follow`` (and
``_follow_block`` over a block's bytes). Where ``agentlog._speedups`` was
built, the same loop runs in C: it checks the envelope of the writer's own
line layout in place and parses only the payload, 3.5-4x faster; any
other layout stops it, and these Python loops (which stay the reference)
take over. tests/test_speedups.py and the fuzz suite hold the two alike.
"""

from __future__ import annotations

import dataclasses
import gc
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from zlib import crc32

import orjson
from orjson import loads

from ..._cext import speedups
from ..._codec import checksum_ok
from ...errors import CorruptionError, EventNotFound
from ...event import KIND_PATTERN, NIL_ID, ROLE_PATTERN, Event, is_event_id, make_event, stored_record_problem

if TYPE_CHECKING:
    from .storage import FileSessionStorage

__all__ = ["BLOCK", "FIRST_BLOCK", "fast_record_ok", "follow", "follow_block", "make_event", "read_ancestors"]

#: Bytes read per backward step: large enough that a syscall is rare per
#: event, small enough that memory stays bounded whatever the path length.
BLOCK = 1 << 20
#: The first block of a read: a bounded read (``limit``, a context that
#: stops at a compaction near HEAD) reads little; a long one grows x4 per
#: block up to ``BLOCK``.
FIRST_BLOCK = 1 << 14

_ID_PREFIX = b'{"id":"'
_ID_END = len(_ID_PREFIX) + 36
_CRC_PREFIX = b',"crc":"'
_SUFFIX_LEN = len(_CRC_PREFIX) + 8 + 2  # ,"crc":"  8 hex  "}

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
#: id, parent id and timestamp of an event concatenated, checked in one match.
#: It accepts a subset of what ``stored_record_problem`` accepts (a test
#: holds it to that); whatever it does not accept goes to the full check.
_ID_PARENT_STAMP = re.compile(_UUID + _UUID + r"[0-9A-Za-z:.+-]{1,40}\Z")
#: The same for a parent id and a timestamp (the id was matched byte for byte).
_PARENT_STAMP = re.compile(_UUID + r"[0-9A-Za-z:.+-]{1,40}\Z")
#: (kind, role) pairs already found valid: a session uses a handful.
_GOOD_KIND_ROLE: set[tuple[str, str | None]] = set()


def fast_record_ok(rec: dict[str, Any]) -> bool:
    """True if ``rec`` is certainly a valid event record; False means "ask
    ``stored_record_problem``" (the full check), not "invalid"."""
    eid, parent, stamp = rec.get("id"), rec.get("parent_id"), rec.get("timestamp")
    if not (type(eid) is str and type(parent) is str and type(stamp) is str):
        return False
    if rec.get("branch_from") is not None or rec.get("digest") is not None or "op" in rec:
        return False
    kind, role = rec.get("kind"), rec.get("role")
    if type(kind) is not str or not (role is None or type(role) is str):
        return False
    if len(eid) != 36 or len(parent) != 36 or _ID_PARENT_STAMP.match(eid + parent + stamp) is None:
        return False
    return (kind, role) in _GOOD_KIND_ROLE or _learn(kind, role)


def _learn(kind: object, role: object) -> bool:
    """True if (kind, role) is valid; remembered so the next check is a set lookup."""
    if type(kind) is not str or not (role is None or type(role) is str):
        return False
    if KIND_PATTERN.match(kind) and (role is None or ROLE_PATTERN.match(role)):
        if len(_GOOD_KIND_ROLE) < 4096:  # bounded whatever the sessions hold
            _GOOD_KIND_ROLE.add((kind, role))
        return True
    return False


def _decode(line: bytes, want: str) -> dict[str, Any] | None:
    """The record of ``line`` (no newline) if it is the intact, valid event ``want``."""
    if not checksum_ok(line):  # the one rule decode_line applies, without its messages
        return None
    try:
        rec = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(rec) is not dict or rec.get("id") != want:
        return None
    del rec["crc"]
    if fast_record_ok(rec) or ("op" not in rec and stored_record_problem(rec) is None):
        return rec
    return None


def read_ancestors(
    storage: FileSessionStorage,
    from_id: str,
    *,
    limit: int | None,
    until_kind: str | None,
    until_id: str | None,
) -> list[Event]:
    """``from_id`` and its ancestors, newest first (see ``SessionStorage.ancestors``)."""
    if not is_event_id(from_id):
        return [storage.get(from_id)]  # get reports it (the core validates ids first)
    # A long path allocates several container objects per event and none of
    # them is garbage: the cyclic collector would scan the growing list over
    # and over (a quarter of the time at 100,000 events). Pause it for the
    # read; it resumes (if it ran before) whatever happens.
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        return _read(storage, from_id, limit, until_kind, until_id)
    finally:
        if paused:
            gc.enable()


def _read(
    storage: FileSessionStorage, from_id: str, limit: int | None, until_kind: str | None, until_id: str | None
) -> list[Event]:
    out: list[Event] = []
    append = out.append
    bound = storage.event_count() + 1
    lines: list[bytes] = []
    pos = -1  # the next line of ``lines`` to look at, going backwards
    declined = -1  # the line ``_follow`` last stopped at: it is not tried there again
    want = from_id
    size = FIRST_BLOCK
    while want != NIL_ID and (limit is None or len(out) < limit):
        if pos >= 0 and pos != declined:
            # The common case first: the parents sit line after line, back.
            budget = (bound + 1 if limit is None else limit) - len(out)
            pos, want, done = follow(lines, pos, want, out, budget, until_kind, until_id)
            if done or want == NIL_ID or (limit is not None and len(out) >= limit):
                break
            declined = pos
        event: Event | None = None
        key = want.encode()
        while pos >= 0:
            line = lines[pos]
            if line[:7] == _ID_PREFIX:  # else a checkout record, or damage a fallback will report
                found = line[7:_ID_END]
                if found == key:
                    break
                if found < key:  # ids increase along the log: the parent is not in this block
                    pos = -1
                    size = FIRST_BLOCK  # the path jumps (a branch): locality starts over
                    break
            pos -= 1
        if pos >= 0 and pos != declined:
            continue  # the wanted line, further back in this block: the fast loop tries it first
        if pos >= 0:  # declined by the fast loop (a blob, a branch point, an unusual field): the full check
            rec = _decode(lines[pos], want)
            pos -= 1
            event = None if rec is None else _event_of(rec)
        if event is None:
            block = _load(storage, want, size)
            size = min(size * 4, BLOCK)
            lines, pos, declined, rec = [], -1, -1, None
            if block is not None:
                data, floor = block
                # The fast loop takes the block's lines in place, from its
                # last (the record the index framed) back: a linear path is
                # never split into line objects at all.
                taken = len(out)
                budget = (bound + 1 if limit is None else limit) - taken
                end, nxt, done = follow_block(data, floor, len(data), want, out, budget, until_kind, until_id)
                lines = _lines(data, floor, end)  # what it left, if anything
                pos = len(lines) - 1
                if len(out) > taken:
                    if done or nxt == NIL_ID or (limit is not None and len(out) >= limit):
                        break
                    want, declined = nxt, pos
                    continue
                rec = _decode(lines[-1], want)
                pos -= 1
            # a record the full check declines is read by get(), which holds
            # every rule (and the index rebuild, and the corruption report)
            event = storage.get(want) if rec is None else _event_of(rec)
        append(event)
        if event.kind == until_kind or want == until_id:
            break
        if len(out) > bound:
            raise CorruptionError(storage.session_id, None, f"parent links loop at {want}")
        want = event.parent_id
    return out


def _follow(
    lines: list[bytes],
    pos: int,
    want: str,
    out: list[Event],
    budget: int,
    until_kind: str | None,
    until_id: str | None,
) -> tuple[int, str, bool]:
    """Take events from ``lines`` going back from ``pos`` for as long as each
    line is exactly the event wanted next (its parent's line sits just
    before it) and passes the fast check: the inner loop of a whole-path
    read, with every name it uses bound locally. Returns the next line to
    look at, the id wanted next, and whether ``until_kind``/``until_id`` ended
    the walk. Anything else (a checkout line, a branch, a blob, damage)
    returns at once, to the general loop, which handles it."""
    append = out.append
    good = _GOOD_KIND_ROLE
    stamp_ok = _PARENT_STAMP.match
    build = make_event
    prefix = _ID_PREFIX
    crc_prefix = _CRC_PREFIX
    key = want.encode()
    while pos >= 0 and budget > 0:
        line = lines[pos]
        # (a bytes slice is cheaper than a memoryview at these sizes)
        if line[7:_ID_END] != key or line[:7] != prefix or line[-18:-10] != crc_prefix:
            break
        try:
            # _codec.checksum_ok's rule, inlined: this loop runs once an event
            if b"%08x" % crc32(b"}", crc32(line[:-18])) != line[-10:-2]:
                break
            rec = loads(line)
            parent, kind, role, stamp = rec["parent_id"], rec["kind"], rec["role"], rec["timestamp"]
            record = rec["record"]  # inside the try: a line without one goes to the careful path
            # ``parent + stamp`` raises TypeError unless both are strings, and
            # the one match checks both (the length first: else a short parent
            # could borrow the stamp's first byte).
            if not (
                rec["id"] == want
                and rec.get("digest") is None  # absent since format 3, null before
                and rec.get("branch_from") is None
                and line[-2:] == b'"}'
                and "op" not in rec
                and ((kind, role) in good or _learn(kind, role))
                and len(parent) == 36
                and stamp_ok(parent + stamp)
            ):
                break
        except (ValueError, KeyError, TypeError):
            break  # bad JSON, a missing field, an unhashable kind: the careful path reports it
        append(build(want, parent, kind, role, stamp, record, None, None, {}))
        pos -= 1
        budget -= 1
        if kind == until_kind or want == until_id:
            return pos, parent, True
        want = parent
        key = parent.encode()
    return pos, want, False


def _load_speedups() -> Any:
    """The C build of ``_follow`` and ``_follow_block`` (``agentlog._speedups``,
    see ``agentlog._cext``), configured with the ``Event`` type, or None:
    then the Python loops run, the same loops, slower. Whatever the C loops
    accept, the Python loops accept too and build the same ``Event`` from
    (tests/test_speedups.py)."""
    if speedups is None:
        return None
    speedups.configure(Event, tuple(f.name for f in dataclasses.fields(Event)), loads)
    return speedups


def _event_of(rec: dict[str, Any]) -> Event:
    get = rec.get
    return make_event(
        rec["id"],
        rec["parent_id"],
        rec["kind"],
        get("role"),
        rec["timestamp"],
        get("record"),
        get("digest"),
        get("branch_from"),
        {},
    )


def _follow_block(
    data: bytes,
    floor: int,
    end: int,
    want: str,
    out: list[Event],
    budget: int,
    until_kind: str | None,
    until_id: str | None,
) -> tuple[int, str, bool]:
    """``_follow`` over the complete lines of ``data[floor:end]`` (each ending
    with a newline), from the last back. Returns where the lines it did not
    take end (``floor`` when it took them all), the id wanted next, and
    whether ``until_kind``/``until_id`` ended the walk. The C build does the
    same without making a ``bytes`` of each line."""
    lines = _lines(data, floor, end)
    pos, want, done = _follow(lines, len(lines) - 1, want, out, budget, until_kind, until_id)
    return floor + sum(len(line) + 1 for line in lines[: pos + 1]), want, done


def _lines(data: bytes, floor: int, end: int) -> list[bytes]:
    """The lines of ``data[floor:end]`` (which ends with a newline, or is
    empty), without their newlines."""
    lines = data[floor:end].split(b"\n")
    lines.pop()  # the last piece, after the final newline, is empty
    return lines


def _load(storage: FileSessionStorage, want: str, size: int) -> tuple[bytes, int] | None:
    """The log block that ends with ``want``'s record, and where its first
    complete line starts; None if the index does not frame a line there
    (``get`` then decides, and reports)."""
    entry = storage._lookup(want)
    if entry is None:
        raise EventNotFound(want, storage.session_id)
    chunk, offset, length = entry.chunk, entry.offset, entry.length
    if not (0 <= chunk < len(storage.log.numbers) and 0 < length <= storage.log.chunk_size):
        return None  # a damaged entry, or a record larger than a chunk
    end = offset + length
    start = max(0, end - max(size, length))
    data = storage.log.read(chunk, start, end - start)
    if len(data) != end - start or not data.endswith(b"\n"):
        return None
    # Unless the block starts at the chunk's first byte, the bytes before
    # its first newline may be the tail of an earlier line: not a line.
    floor = 0 if start == 0 else data.find(b"\n") + 1
    last = data.rfind(b"\n", floor, len(data) - 1) + 1  # where the block's last line starts
    if start + max(last, floor) != offset or floor == len(data):
        return None  # the index does not frame a line here
    return data, floor


_speedups = _load_speedups()
#: The inner loops a whole-path read runs: the C builds when there are.
follow: Callable[..., tuple[int, str, bool]] = _follow if _speedups is None else _speedups.follow
follow_block: Callable[..., tuple[int, str, bool]] = _follow_block if _speedups is None else _speedups.follow_block
