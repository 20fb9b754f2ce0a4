"""What the SQL backends (SQLite, PostgreSQL) share below the seam: rows
made events, a path read by the recursive query and then by one range
scan, a session's events a page at a time, and metadata and listing rows
checked as they are read. Each backend keeps its own SQL; these are the
parts that do not depend on the dialect."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson

from ..errors import CorruptionError, EventNotFound, SessionNotFound
from ..event import NIL_ID, Event, make_event
from ..metafields import MetaProblem, checked_meta, document_problems, meta_problems
from .base import ListingRow, SessionStats, SessionStorage

__all__ = [
    "session_value",
    "EVENTS_PAGE",
    "SCAN_PAGE_FIRST",
    "SCAN_SKIP_BOUND",
    "WALK_FIRST",
    "event_from_row",
    "listing_row",
    "paged_events",
    "paged_scan",
    "path_by_scan",
    "path_from_rows",
    "read_path",
    "stored_meta",
]


def stored_meta(session_id: str, value: Any, where: str) -> dict[str, Any]:
    """A SQL row's session metadata, as an object, checked by the rule every
    write is held to (``metafields``): JSON text is parsed; what is not an
    object, or breaks the rule (a hand-edited row), is a CorruptionError
    naming the session and each field at fault, so one damaged row is
    reported, never a whole listing failed."""
    if isinstance(value, str | bytes):
        meta, problems = document_problems(value.encode() if isinstance(value, str) else value, session_id)
    elif isinstance(value, dict):
        meta, problems = value, meta_problems(value, session_id)
    else:
        meta, problems = None, [MetaProblem(None, f"is {type(value).__name__}, not an object")]
    return checked_meta(meta, problems, where, f"metadata of session {session_id}")


def listing_row(session_id: str, meta: Any, event_count: Any, updated_ns: Any, where: str) -> ListingRow:
    """A SQL backend's listing row; a damaged one carries its error."""
    try:
        return ListingRow(
            session_id, stored_meta(session_id, meta, where), SessionStats(int(event_count), int(updated_ns))
        )
    except CorruptionError as exc:
        return ListingRow(session_id, {}, None, exc)
    except (TypeError, ValueError) as exc:
        return ListingRow(session_id, {}, None, CorruptionError(where, None, f"counts of session {session_id}: {exc}"))


def _record_of(event_id: Any, text: Any) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise CorruptionError(f"event {event_id}", None, f"its record is not JSON: {exc}") from None


def event_from_row(row: Sequence[Any]) -> Event:
    """An event from a SQL row (id, parent_id, kind, role, timestamp, record JSON text, digest, branch_from)."""
    record = None if row[5] is None else _record_of(row[0], row[5])
    return make_event(row[0], row[1], row[2], row[3], row[4], record, row[6], row[7], {})


def path_from_rows(
    storage: SessionStorage, from_id: str, rows: Sequence[Sequence[Any]], bound: int, where: str
) -> list[Event]:
    """The events of a SQL path query, checked: more rows than the session
    holds is a loop in the parent links; none is an unknown ``from_id``."""
    if len(rows) > bound:
        raise CorruptionError(
            where,
            None,
            f"parent links loop in session {storage.session_id}, or its event count ({bound - 1}) is wrong;"
            " see agentlog fsck",
        )
    if not rows and from_id != NIL_ID:
        raise EventNotFound(from_id, storage.session_id)
    return [event_from_row(row) for row in rows]


#: A SQL backend reads the first this many events of a path by its
#: recursive query (an index lookup a step, nothing read off the path), and
#: the rest of a longer path by one range scan of the session's events,
#: newest id first (``path_by_scan``). Most reads end in the first part:
#: ``context()`` at the latest compaction, the newest page of a long session.
WALK_FIRST = 256
#: Rows of other branches the scan passes over before it leaves the rest of
#: the path to the recursive query (at least this, or the path's length):
#: a session branched mostly off the path is not read whole.
SCAN_SKIP_BOUND = 1_024
#: The scan fetches its rows a page at a time, each page twice the last,
#: so that a path which ends soon after the first part (a ``context()``
#: whose compaction is 2,000 events back in a 100,000-event session) reads
#: at most about twice what it keeps, where one query fetching every row
#: below the start read the 100,000 events' records to keep 2,000 (80 MB
#: and 0.3 s). Pages double rather than stay small because a page costs a
#: query, and on a database whose planner has no statistics yet (a table
#: never analysed) each query may sort every row below its start: a long
#: path then costs a few such queries, not hundreds.
SCAN_PAGE_FIRST = 256


def paged_scan(fetch: Callable[[str, bool, int], Sequence[Sequence[Any]]], start: str) -> Iterator[Sequence[Any]]:
    """The rows ``path_by_scan`` takes, fetched lazily: ``fetch(upto,
    inclusive, limit)`` returns up to ``limit`` of the session's events with
    ids up to ``upto`` (``inclusive``) or below it, newest id first. Each
    page goes on below the last id of the page before (keyset paging: no
    row is read twice). A row committed below that id between two pages
    (a bundle import keeps its ids) is not met, and needs no care: the
    path's next id then falls behind the scan, which hands it to the
    recursive query, as for any parent out of id order."""
    upto, inclusive, size = start, True, SCAN_PAGE_FIRST
    while True:
        rows = fetch(upto, inclusive, size)
        yield from rows
        if len(rows) < size:
            return
        upto, inclusive, size = rows[-1][0], False, size * 2


#: Rows a SQL backend's ``events()`` fetches a query at a time: memory
#: stays bounded whatever the session's size, in few round trips.
EVENTS_PAGE = 1000


def paged_events(fetch: Callable[[int], Sequence[Sequence[Any]]]) -> Iterator[Event]:
    """``SessionStorage.events()`` of a SQL backend: ``fetch(after)`` returns
    up to ``EVENTS_PAGE`` of the session's rows with ``seq`` above
    ``after`` in ``seq`` order, ``seq`` first and then the columns of
    ``event_from_row`` (keyset paging: no row is read twice)."""
    after = -1
    while True:
        rows = fetch(after)
        for row in rows:
            yield event_from_row(row[1:])
        if len(rows) < EVENTS_PAGE:
            return
        after = rows[-1][0]


def path_by_scan(
    rows: Iterable[Sequence[Any]],
    from_id: str,
    limit: int | None,
    until_kind: str | None,
    until_id: str | None,
) -> tuple[list[Event], str | None]:
    """The path from ``from_id`` taken from ``rows``, the session's events
    with ids up to ``from_id`` in descending id order (the columns of
    ``event_from_row``), and where to go on from: None once the path is
    whole (the root, ``limit``, or a stop event reached), else the id the
    scan could not find in its place.

    Why a scan: a session's ids increase as it is written (``IdGenerator``),
    so a parent's id is below its child's and one descending range scan of
    the primary key meets the whole path in order, with no lookup per step;
    rows of other branches are passed over. An id out of that order (a
    parent above its child, or missing) is left to the recursive query,
    which the caller continues with from the returned id."""
    out: list[Event] = []
    want = from_id
    build = make_event
    skipped = 0
    for row in rows:
        event_id = row[0]
        if event_id != want:
            if event_id < want:
                return out, want  # passed the place of ``want``: not in id order
            skipped += 1
            if skipped > SCAN_SKIP_BOUND and skipped > len(out):
                return out, want  # mostly other branches here: the recursive query goes on
            continue  # another branch's event
        record = None if row[5] is None else _record_of(event_id, row[5])
        out.append(build(event_id, row[1], row[2], row[3], row[4], record, row[6], row[7], {}))
        want = row[1]
        if want == NIL_ID or len(out) == limit or row[2] == until_kind or event_id == until_id:
            return out, None
    return out, want


def read_path(
    storage: SessionStorage,
    from_id: str,
    limit: int | None,
    until_kind: str | None,
    until_id: str | None,
    *,
    scan: Callable[[str], Iterable[Sequence[Any]]],
    walk: Callable[[str, int], Sequence[Sequence[Any]]],
    where: str,
) -> list[Event]:
    """``ancestors`` for a SQL backend: up to ``WALK_FIRST`` events by
    ``walk(start, limit)``, the recursive query; the rest of a longer path
    by ``scan(start)``, the session's events from ``start`` down, newest id
    first (``path_by_scan``), and by ``walk`` again wherever the scan stops
    short. Every part gives what the recursive query alone would: it stops
    where a parent is missing, and so does a path continued by it."""
    bound = storage.event_count() + 1
    first = min(limit or bound + 1, bound + 1, WALK_FIRST)
    rows = walk(from_id, first)
    events = path_from_rows(storage, from_id, rows, bound, where)
    if len(rows) < first or len(events) == limit:
        return events  # the root, a stop event, a missing parent, or the limit
    last = events[-1]
    if last.kind == until_kind or last.id == until_id or last.parent_id == NIL_ID:
        return events
    start = last.parent_id
    remaining = None if limit is None else limit - len(events)
    more, rest = path_by_scan(scan(start), start, remaining, until_kind, until_id)
    events += more
    if rest is None:
        return events
    rows = walk(rest, min(bound + 1 if remaining is None else remaining - len(more), bound + 1))
    if not rows:
        return events  # a missing parent ends the path, as the recursive query ends it
    return events + path_from_rows(storage, rest, rows, bound, where)


def session_value(row: Sequence[Any] | None, session_id: str) -> Any:
    """The one column read of a session's row. A session deleted while a
    storage of it was open (another handle, `agentlog rm`) has no row: that
    is SessionNotFound, never an empty session read as if it were whole."""
    if row is None:
        raise SessionNotFound(session_id)
    return row[0]
