"""What ``fsck`` checks in a backend's sessions, shared by the backends
that keep rows (SQLite, PostgreSQL, memory), and the link checks every
backend runs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import NamedTuple

from ..errors import AgentlogError, CorruptionError
from ..event import KIND_PATTERN, NIL_ID, ROLE_PATTERN, parse_timestamp
from .base import Backend, Problem, SessionStorage

__all__ = ["check_links", "check_rows"]


def check_rows(backend: Backend, storage: SessionStorage, where: str) -> list[Problem]:
    """What fsck finds in a backend that keeps rows (SQLite, PostgreSQL,
    memory), reading every one: metadata that is not an object, a count
    that disagrees with the events held, an event whose kind, role or time
    is malformed or whose record cannot be read, parent links that loop,
    and what ``check_links`` finds. Each is named with its session and
    event; one damaged row never hides the others; none is repairable."""
    sid, problems = storage.session_id, []

    def add(message: str) -> None:
        problems.append(Problem(sid, where, None, message))

    try:
        backend.read_meta(sid)
    except CorruptionError as exc:
        add(exc.reason)
    # The count and the newest id are read before and after the events: a
    # writer in another process may commit in between (each commit moves
    # events, count and newest id together), so what the events show must
    # lie between the two readings, and equal them when nothing moved.
    before = _count_and_newest(backend, storage, add)
    try:
        entries = list(storage.entries())
    except (CorruptionError, ValueError, TypeError) as exc:  # a row the backend cannot even list
        add(f"its events cannot be listed: {getattr(exc, 'reason', exc)}")
        return problems
    after = _count_and_newest(backend, storage, lambda _: None)  # said once, above
    newest = max((e.id for e in entries), default="")
    if before.events is not None and after.events is not None and not before.events <= len(entries) <= after.events:
        add(f"its event count says {before.events}, and it holds {len(entries)} events")
    if before.newest is not None and after.newest is not None and not before.newest <= newest <= after.newest:
        add(f"its newest event id is kept as {before.newest!r}, and the newest it holds is {newest!r}")
    parents: dict[str, str] = {}
    for entry in entries:
        parents[entry.id] = entry.parent_id
        if not KIND_PATTERN.match(entry.kind):
            add(f"event {entry.id} has a malformed kind {entry.kind!r}")
        if entry.role is not None and not ROLE_PATTERN.match(entry.role):
            add(f"event {entry.id} has a malformed role {entry.role!r}")
        try:
            parse_timestamp(entry.timestamp)
        except (ValueError, TypeError):
            add(f"event {entry.id} has a malformed time {entry.timestamp!r}")
        if entry.digest is None:  # a blob's record is read and checked by check_links
            try:
                storage.get(entry.id)
            except CorruptionError as exc:
                add(f"{exc.reason} (event {entry.id})")
    for event_id in _in_loops(parents):
        add(f"event {event_id}'s parent links loop: no path from it reaches the root")
    # Not repairable: these backends' repair does nothing (SQLite's journal
    # and PostgreSQL's WAL recover a crash; damage beyond is theirs to
    # report), and `fsck --repair` must not claim a repair it cannot make.
    return [replace(p, repairable=False) for p in problems + check_links(storage, where)]


class _Kept(NamedTuple):
    events: int | None  # None: it could not be read (said once)
    newest: str | None


def _count_and_newest(backend: Backend, storage: SessionStorage, add: Callable[[str], None]) -> _Kept:
    """The event count and newest id a session's own row keeps."""
    count: int | None = None
    newest: str | None = None
    try:
        count = backend.stats(storage.session_id).event_count
    except (AgentlogError, ValueError, TypeError) as exc:
        add(f"its event count cannot be read: {exc}")
    try:
        newest = storage.last_id()
    except (AgentlogError, ValueError, TypeError) as exc:
        add(f"its newest event id cannot be read: {exc}")
    return _Kept(count, newest)


def _in_loops(parents: Mapping[str, str]) -> list[str]:
    """The events whose parent links come back to themselves (one named per
    loop). A walk ends at the root, at a missing parent (check_links names
    it), at an event an earlier walk went through, or on its own track."""
    walked: set[str] = {NIL_ID}
    found: list[str] = []
    for start in parents:
        track: set[str] = set()
        at = start
        while at not in walked and at in parents and at not in track:
            track.add(at)
            at = parents[at]
        if at in track:
            found.append(at)
        walked |= track
    return found


def check_links(storage: SessionStorage, where: str) -> list[Problem]:
    """What fsck finds in any backend: HEAD or a parent naming a missing
    event, a blob missing or not matching its digest."""
    sid, problems = storage.session_id, []
    head = storage.head()
    if head != NIL_ID and not storage.contains(head):
        problems.append(Problem(sid, where, None, f"HEAD names a missing event {head}"))
    for entry in storage.entries():
        if entry.parent_id != NIL_ID and not storage.contains(entry.parent_id):
            problems.append(Problem(sid, where, None, f"event {entry.id} names a missing parent"))
        if entry.digest:
            try:
                storage.get_blob(entry.digest)
            except CorruptionError as exc:
                problems.append(Problem(sid, where, None, f"{exc.reason} (event {entry.id})"))
    return problems
