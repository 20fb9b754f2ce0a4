"""Copy sessions between any two stores (files, SQLite, PostgreSQL, memory).

Ids, parents, times, HEAD, blobs, metadata and sidecars (the draft,
artifacts) are preserved. A copy is
idempotent and resumable: a session already on the target with the same
first events gets only the events it lacks (a second run copies nothing),
and each batch of events lands atomically. A target whose events differ
from the source's is never overwritten: that is an error naming the
session, and the other sessions are still copied. After copying, both
sides are compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .backends.base import IndexEntry
from .errors import CopyDiverged, SessionNotFound
from .event import NIL_ID
from .session import Session
from .store import Store

__all__ = ["BATCH", "CopyDiverged", "CopyRefused", "CopyReport", "copy_sessions"]

#: Events per atomic import: bounds memory for huge sessions.
BATCH = 2000


@dataclass
class CopyReport:
    """What a copy did, per session id."""

    created: list[str] = field(default_factory=list)
    extended: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    events: int = 0
    #: Sessions left as they were on the target, and why (their events differ).
    refused: dict[str, str] = field(default_factory=dict)


class CopyRefused(CopyDiverged):
    """Raised at the end of a copy that refused sessions whose events differ
    on the target: every other session was copied; ``report`` says what was."""

    def __init__(self, report: CopyReport) -> None:
        self.report = report
        reasons = "; ".join(report.refused.values())
        super().__init__(f"{len(report.refused)} session(s) not copied: {reasons}")


def _shape(entries: Sequence[IndexEntry]) -> list[tuple[str, str, str | None, str, str | None, str, str | None]]:
    return [(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest) for e in entries]


def _difference(session_id: str, have: list[Any], want: list[Any]) -> str:
    """Why a target session is not the start of its source: where they part."""
    at = next((i for i, (a, b) in enumerate(zip(have, want, strict=False)) if a != b), min(len(have), len(want)))
    if at == len(want):
        extra = len(have) - len(want)
        where = f"the target has {extra} event(s) the source does not (first {have[at][0]})"
    elif have[at][0] != want[at][0]:
        where = f"its event #{at + 1} is {have[at][0]} on the target, {want[at][0]} in the source"
    else:
        where = f"its event {have[at][0]} (#{at + 1}) differs between the source and the target"
    return f"session {session_id!r} differs on the target: {where}; not overwritten"


def _copy_one(source: Session, target: Store, report: CopyReport, updated_ns: int) -> int:
    # One snapshot of the source, HEAD first: a writer may append while the
    # copy runs (a SQL store's reader sees it at once), and an event list
    # read before HEAD could lack the event HEAD names by then. What comes
    # after the snapshot is for the next copy.
    head = source.head
    entries = source.entries()
    meta = source.meta
    if not target.exists(source.id):
        first = [source.event(e.id) for e in entries[:BATCH]]
        first_head = head if len(entries) <= BATCH else (first[-1].id if first else NIL_ID)
        timeline = target.create_timeline(source.id, meta, first, source.storage, first_head)
        copied = Session(target, timeline)
        report.created.append(source.id)
        done = len(first)
    else:
        copied = target.open(source.id)
        have, want = _shape(copied.entries()), _shape(entries)
        if have != want[: len(have)]:
            copied.close()
            raise CopyDiverged(_difference(source.id, have, want))
        done = len(have)
        changed = done < len(entries) or copied.head != head or copied.meta != meta
        (report.extended if changed else report.unchanged).append(source.id)
    try:
        added = len(entries) - done
        while done < len(entries):
            batch = [source.event(e.id) for e in entries[done : done + BATCH]]
            copied.import_events(batch, source)
            done += len(batch)
        if copied.head != head:
            copied.checkout(head)
        if copied.meta != meta:
            copied.storage.write_meta(meta)
        # Last: every write above dated the copy now; it keeps its source's date.
        copied.storage.set_updated_ns(updated_ns)
        sidecars = _copy_sidecars(source, copied)
        if sidecars and source.id in report.unchanged:
            report.unchanged.remove(source.id)
            report.extended.append(source.id)
        if _shape(copied.entries()) != _shape(entries) or copied.head != head or copied.meta != meta:
            raise CopyDiverged(f"session {source.id!r}: the copy does not match its source after copying")
        if any(copied.read_sidecar(name) != data for name, data in sidecars.items()):
            raise CopyDiverged(f"session {source.id!r}: a sidecar of the copy does not match its source")
        return added if source.id not in report.created else len(entries)
    finally:
        copied.close()


def _copy_sidecars(source: Session, copied: Session) -> dict[str, bytes]:
    """Give the copy the source's sidecars (the draft, artifacts) where they
    differ; returns those written. A sidecar only the target has is kept:
    it was written there, and a copy adds, it never deletes."""
    written: dict[str, bytes] = {}
    for name in source.storage.sidecar_names():
        data = source.read_sidecar(name)
        if data is not None and copied.read_sidecar(name) != data:
            copied.write_sidecar(name, data)
            written[name] = data
    return written


def copy_sessions(
    source: Store,
    target: Store,
    session_ids: Sequence[str] | None = None,
    progress: Callable[[str, int], None] | None = None,
) -> CopyReport:
    """Copy ``session_ids`` (default: every session) from ``source`` to
    ``target``; ``progress(session_id, events)`` is called after each.

    A session whose events differ on the target is left as it is there and
    the copy goes on with the others (one diverged session must not stop a
    nightly copy of every other): ``CopyRefused``, naming each, is raised at
    the end, its ``report`` saying what was copied."""
    ids: Iterable[str] = session_ids if session_ids else sorted(source.backend.session_ids())
    report = CopyReport()
    for sid in ids:
        if not source.exists(sid):
            raise SessionNotFound(sid)
        with source.open(sid, readonly=True) as session:
            try:
                count = _copy_one(session, target, report, source.backend.stats(sid).updated_ns)
            except CopyDiverged as exc:
                report.refused[sid] = str(exc)  # said in the CopyRefused raised below
                for done in (report.created, report.extended, report.unchanged):
                    if sid in done:  # a copy that failed its check after copying is not "done"
                        done.remove(sid)
                count = 0
        report.events += count
        if progress is not None:
            progress(sid, count)
    if report.refused:
        raise CopyRefused(report)
    return report
