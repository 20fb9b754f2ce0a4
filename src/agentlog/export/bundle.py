"""The bundle: one JSONL file that carries a whole session between stores.

    line 1    {"agentlog_bundle": 1, "session": {metadata}, "exported_at": ...,
               "events": N, "head": id, "redactions": {type: count}}
    line 2..  {"event": {id, parent_id, branch_from, kind, role, timestamp,
               record, digest}}          every event, every branch, in log order
    last      {"end": {"events": N, "head": id}}

A payload kept in a blob travels as its ``record``, with the blob's
``digest``: importing checks that the record's JSON bytes hash to it, so
such a payload altered in transit is refused rather than imported. A
record small enough to be kept inline carries no digest, and is checked
only as any record is (valid JSON, no integer beyond 64 bits). A redacted
bundle carries no digests (its records are no longer the blobs' bytes).
The trailer line makes a truncated bundle an error, not a shorter session.

Importing keeps every id, parent, time and HEAD. The whole bundle is
checked before anything is written (each event valid, ids increasing,
each parent an earlier event of the bundle, times RFC 3339 UTC, HEAD one
of its events): a bundle that is not consistent is refused whole, with
the line and event, and leaves nothing behind. A second pass then writes
it in atomic batches, so memory is bounded by a batch, not the bundle;
a crash part-way leaves the session's start, and importing the bundle
again completes it. It is idempotent: a
session that already holds the bundle's events (and perhaps more,
appended since) is left as it is, and a session holding the start of
them gets only the rest.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, Protocol

import orjson

from .._json import big_integer
from .._json import dumps as dumps_json
from ..backends.base import IndexEntry
from ..errors import BundleError, CorruptionError, InvalidMeta, SessionNotFound, StreamedDeltaError
from ..event import NIL_ID, Event, check_kind, digest_of, is_event_id, parse_timestamp, stored_record_problem
from ..lifecycle import check_meta
from ..session import Session
from ..store import Store
from .redact import Redactor

__all__ = ["BUNDLE_VERSION", "BundleError", "BundleImportReport", "import_bundle", "write_bundle"]

BUNDLE_VERSION = 1
Progress = Callable[[int, int], None]
#: Metadata that describes the session itself and travels with it; the
#: rest (``schema``, ``id``) is the store's to write.
_LOCAL_META = frozenset({"schema", "id"})
#: RFC 3339 in UTC, as docs/format.md asks of an event's time (up to
#: nanoseconds; agentlog writes all nine digits, older writers fewer).
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z\Z")


class Sink(Protocol):
    """Where a bundle is written: any binary stream."""

    def write(self, data: bytes, /) -> int: ...


@dataclass(frozen=True, slots=True)
class BundleImportReport:
    session_id: str
    #: "created", "extended" or "unchanged".
    outcome: str
    events_added: int
    events_total: int
    head: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "outcome": self.outcome,
            "events_added": self.events_added,
            "events_total": self.events_total,
            "head": self.head,
        }


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _line(value: Any) -> bytes:
    return dumps_json(value) + b"\n"


def write_bundle(
    session: Session, out: Sink, *, redactor: Redactor | None = None, progress: Progress | None = None
) -> int:
    """Write ``session`` as a bundle to ``out``; returns the event count."""
    entries = session.entries()
    meta = {**session.meta, "id": session.id}  # the id it is stored under, whatever the file says
    if redactor is not None:
        meta = redactor.meta(meta)
    head = session.head
    out.write(
        _line(
            {
                "agentlog_bundle": BUNDLE_VERSION,
                "session": meta,
                "exported_at": _now(),
                "events": len(entries),
                "head": head,
            }
        )
    )
    for n, stored in enumerate(_stored(session, entries)):
        event = _resolved(session, stored)
        doc = event.to_dict()
        if redactor is not None:
            doc["record"] = redactor.value(doc["record"])
            doc["digest"] = None
        out.write(_line({"event": doc}))
        if progress is not None:
            progress(n + 1, len(entries))
    out.write(_line({"end": {"events": len(entries), "head": head}}))
    return len(entries)


def _stored(session: Session, entries: list[IndexEntry]) -> Iterator[Event]:
    """The event of each entry, the log read in bulk (``Session.events``);
    a damaged record stops the bundle, saying how to go on. A bundle
    claims to be a faithful copy (it is imported back as the session), so
    it never stands in a marker for lost bytes the way a Markdown or HTML
    export does."""
    events: Iterator[Event] | None = session.events()
    for entry in entries:
        try:
            stored = next(events, None) if events is not None else None
            if stored is None or stored.id != entry.id:
                # Not what the entries listed (the log changed since): this and
                # every later event are read alone, so each error names its own.
                events = None
                stored = session.event(entry.id)
        except CorruptionError as exc:
            # The record itself is damaged: no export format can show it.
            raise CorruptionError(
                exc.path,
                exc.offset,
                f"{exc.reason}; it is the record of event {entry.id}, and a bundle is a faithful copy, "
                f"so the export was stopped: run 'agentlog fsck --repair {session.id}' first (it keeps every "
                "intact event, with a tombstone in the damaged one's place)",
            ) from None
        yield stored


def _resolved(session: Session, stored: Event) -> Event:
    """The event with its payload; a payload that cannot be read stops the
    bundle, as a damaged record does (``_stored``)."""
    try:
        return session.resolve(stored)
    except CorruptionError as exc:
        raise CorruptionError(
            exc.path,
            exc.offset,
            f"{exc.reason}; it is the payload of event {stored.id}, and a bundle is a faithful copy, "
            f"so the export was stopped: 'agentlog fsck {session.id}' says whether repair can bring it "
            "back (a payload it names as lost stays lost); export --format md or html mark it instead",
        ) from None


@dataclass(slots=True)
class _Bundle:
    """What the checking pass keeps of a bundle: its header's facts and
    every event without its record (ids, parents, kinds, times)."""

    meta: dict[str, Any]
    head: str
    events: list[Event] = field(default_factory=list)


def _open(path: str | os.PathLike[str]) -> tuple[IO[bytes], int]:
    try:
        size = os.path.getsize(path)
        return open(path, "rb"), size
    except OSError as exc:
        raise BundleError(f"cannot read bundle {path}: {exc.strerror or exc}") from None


def _scan(f: IO[bytes], path: str | os.PathLike[str], bundle: _Bundle | None = None) -> Iterator[Event | _Bundle]:
    """Every check of a bundle, in one pass: first the ``_Bundle`` of its
    header, then each event, checked on its own and against those before
    it, then (after the last) the end line's check. With ``bundle`` (the
    first pass's), it must be the same bundle: the file was not changed
    between the two passes."""
    lines = _numbered(f, path)
    header = next(lines, None)
    if header is None or not isinstance(header[1], dict) or "agentlog_bundle" not in header[1]:
        raise BundleError(f"{path} is not an agentlog bundle (no bundle header on line 1)")
    version = header[1]["agentlog_bundle"]
    if type(version) is not int or version != BUNDLE_VERSION:  # true == 1 in Python
        raise BundleError(
            f"{path}: bundle version {version!r} is not supported (this agentlog reads version {BUNDLE_VERSION})"
        )
    meta = header[1].get("session")
    if not isinstance(meta, dict) or not isinstance(meta.get("id"), str):
        raise BundleError(f"{path}:1: the header has no session metadata with an id")
    this = _Bundle(meta=meta, head=str(header[1].get("head") or NIL_ID))
    yield this
    seen = {NIL_ID}  # the ids of the events read so far (a parent must be one)
    last = ""
    count = 0
    end: dict[str, Any] | None = None
    for number, doc in lines:
        if end is not None:
            raise BundleError(f"{path}:{number}: data after the end line")
        if isinstance(doc, dict) and isinstance(doc.get("end"), dict):
            end = doc["end"]
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("event"), dict):
            raise BundleError(f"{path}:{number}: expected an event line")
        event = _event(last, doc["event"], f"{path}:{number}", seen)
        if bundle is not None and (
            count >= len(bundle.events)
            or not _same(bundle.events[count], event)
            or bundle.events[count].digest != event.digest
        ):
            raise BundleError(f"{path}:{number}: the bundle changed while it was imported")
        last = event.id
        count += 1
        yield event
    if bundle is not None and count != len(bundle.events):
        was = len(bundle.events)
        raise BundleError(f"{path}: the bundle changed while it was imported (it held {was} events, now {count})")
    if end is None:
        raise BundleError(f"{path} is truncated: it has no end line ({count} events read)")
    if end.get("events") != count or end.get("head", this.head) != this.head:
        raise BundleError(
            f"{path}: the end line says {end.get('events')} events and head "
            f"{end.get('head')}, the bundle holds {count} and {this.head}"
        )
    if this.head not in seen:
        raise BundleError(f"{path}:1: the head {this.head} is not an event of the bundle")


def _check(path: str | os.PathLike[str], progress: Progress | None) -> _Bundle:
    """The first pass: check the whole bundle, keeping no record. (Progress
    counts both passes: this one is the first half.)"""
    f, size = _open(path)
    with f:
        scan = _scan(f, path)
        bundle = next(scan)
        assert isinstance(bundle, _Bundle)
        for event in scan:
            assert isinstance(event, Event)
            bundle.events.append(event.with_record(None))
            if progress is not None:
                progress(f.tell(), 2 * size)
    return bundle


def _batches(
    path: str | os.PathLike[str], bundle: _Bundle, skip: int, progress: Progress | None
) -> Iterator[list[Event]]:
    """The second pass: the events after the first ``skip``, records and
    all, in batches of at most ``_BATCH_EVENTS`` events and about
    ``_BATCH_BYTES`` of the file, each checked again as it is read."""
    f, total = _open(path)
    with f:
        scan = _scan(f, path, bundle)
        header = next(scan)
        assert isinstance(header, _Bundle)
        if header.meta != bundle.meta or header.head != bundle.head:
            raise BundleError(f"{path}:1: the bundle changed while it was imported")
        batch: list[Event] = []
        start = f.tell()
        for n, event in enumerate(scan):
            assert isinstance(event, Event)
            if n < skip:
                start = f.tell()
                continue
            batch.append(event)
            # The bytes of the file the batch was read from: its records'
            # size, near enough, without encoding each one again.
            if len(batch) >= _BATCH_EVENTS or f.tell() - start >= _BATCH_BYTES:
                yield batch
                batch, start = [], f.tell()
                if progress is not None:
                    progress(total + f.tell(), 2 * total)
        if batch:
            yield batch
        if progress is not None:
            progress(2 * total, 2 * total)


#: A bundle is written in batches of at most this many events, or about
#: this many bytes of the file: memory stays bounded whatever its size.
_BATCH_EVENTS = 2000
_BATCH_BYTES = 2 << 20


def _numbered(f: IO[bytes], path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    for number, raw in enumerate(f, 1):
        if not raw.strip():
            continue
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise BundleError(f"{path}:{number}: not JSON: {exc}") from None
        big = big_integer(raw)
        if big is not None:
            # orjson read it as a rounded float: refused, as append refuses it.
            raise BundleError(f"{path}:{number}: an integer beyond 64 bits, {big}, cannot be stored exactly")
        yield number, doc


def _event(last: str, doc: dict[str, Any], where: str, seen: set[str]) -> Event:
    """The event on one line, checked on its own and against the events
    before it (``seen``: their ids, which this adds to); BundleError if not."""
    try:
        event = Event(
            id=doc["id"],
            parent_id=doc["parent_id"],
            kind=doc["kind"],
            role=doc.get("role"),
            timestamp=doc["timestamp"],
            record=doc.get("record"),
            digest=doc.get("digest"),
            branch_from=doc.get("branch_from"),
        )
    except KeyError as exc:
        raise BundleError(f"{where}: the event has no {exc.args[0]!r}") from None
    fields = {k: getattr(event, k) for k in ("id", "parent_id", "branch_from", "kind", "role", "timestamp")}
    problem = stored_record_problem({**fields, "digest": event.digest})
    if problem:
        name = f"event {event.id}" if is_event_id(event.id) else "the event"
        raise BundleError(f"{where}: {name} {problem.removeprefix('event record ')}")
    try:
        check_kind(event.kind)
    except StreamedDeltaError as exc:
        raise BundleError(f"{where}: event {event.id}: {exc}") from None
    if not _valid_time(event.timestamp):
        raise BundleError(
            f"{where}: event {event.id} has the timestamp {event.timestamp!r}, "
            "not an RFC 3339 UTC time (2026-08-25T17:21:22.454897183Z)"
        )
    if event.id <= last:
        raise BundleError(f"{where}: event {event.id} does not sort after the event before it ({last})")
    if event.parent_id not in seen:
        why = "not an earlier event of the bundle"
        if event.parent_id >= event.id:
            why = "not before it (a link forward: its path would loop)"
        raise BundleError(f"{where}: event {event.id} names the parent {event.parent_id}, which is {why}")
    seen.add(event.id)
    try:
        data = orjson.dumps(event.record)  # what the store will write (orjson reads deeper than it writes)
    except TypeError as exc:
        raise BundleError(f"{where}: the record of event {event.id} cannot be stored: {exc}") from None
    if event.digest is None:
        return event
    actual = digest_of(data)
    if actual != event.digest:
        raise BundleError(
            f"{where}: the record of event {event.id} does not match its digest {event.digest} (the bundle was altered)"
        )
    return event  # loaded: the store splits it into a blob again by its own threshold


def _valid_time(text: str) -> bool:
    if not _TIMESTAMP.match(text):
        return False
    try:
        parse_timestamp(text)  # a real date and time: no month 13, no 25 o'clock
    except ValueError:
        return False
    return True


def _same(a: Any, b: Any) -> bool:
    keys = ("id", "parent_id", "kind", "role", "timestamp", "branch_from")
    return all(getattr(a, k) == getattr(b, k) for k in keys)


def import_bundle(
    store: Store, path: str | os.PathLike[str], *, progress: Progress | None = None
) -> BundleImportReport:
    """Recreate the session in the bundle at ``path`` (ids kept); idempotent.

    Two passes over the file: the first checks all of it and keeps no
    record, so a bundle that does not hold together writes nothing; the
    second writes the events in batches (each one atomic), reading and
    checking them again. Memory stays bounded by a batch, whatever the
    bundle's size. A crash during the second pass leaves the session's
    start, which importing the bundle again completes."""
    bundle = _check(path, progress)
    sid = bundle.meta["id"]
    try:
        # Checked before anything is written, and said of the header's line.
        check_meta({k: v for k, v in bundle.meta.items() if k not in _LOCAL_META})
    except InvalidMeta as exc:
        raise BundleError(f"{path}:1: {exc}") from None
    try:
        session = store.open(sid)
    except SessionNotFound:
        return _create(store, path, bundle, progress)
    with session:
        entries = session.entries()
        for have, new in zip(entries, bundle.events, strict=False):
            if not _same(have, new):
                raise BundleError(
                    f"session {sid} already exists and differs from the bundle at event {new.id}; not imported"
                )
        if len(entries) >= len(bundle.events):
            # Every event of the bundle is here (the session may have grown
            # since it was exported): nothing to add, and HEAD is the
            # session's own now, not moved back to where the bundle left it.
            if progress is not None:
                progress(1, 1)  # no second pass to report: the work is done
            return BundleImportReport(sid, "unchanged", 0, len(entries), session.head)
        for batch in _batches(path, bundle, len(entries), progress):
            session.import_events(batch)  # records are loaded: no blob source needed
        if session.head != bundle.head:
            session.checkout(bundle.head)  # an event of the bundle (checked): cannot be refused
        # The bundle is the newer state, so its metadata follows, as its HEAD
        # does and as `copy` does (a title or label set since the first
        # transfer was left behind); the session's own id and schema stay.
        with session._timeline.meta_lock:  # as update_meta: another handle may change it meanwhile
            stored = session.storage.read_meta()
            followed = {**stored, **{k: v for k, v in bundle.meta.items() if k not in _LOCAL_META}}
            if followed != stored:
                session.storage.write_meta(followed)
        _keep_date(session, bundle)
        added = len(bundle.events) - len(entries)
        return BundleImportReport(sid, "extended", added, len(bundle.events), session.head)


def _keep_date(session: Session, bundle: _Bundle) -> None:
    """Date the session as its source was dated when exported, not by the
    import (the last write): ``ls`` orders it, and ``prune`` ages it, by its
    own history, as a copy between stores keeps it (copying.py)."""
    updated = bundle.meta.get("updated_at")
    try:
        updated_ns = parse_timestamp(updated) if isinstance(updated, str) else None
    except ValueError:
        updated_ns = None  # a hand-edited header: the import's own date stands
    if updated_ns is not None:
        session.storage.set_updated_ns(updated_ns)


def _create(
    store: Store, path: str | os.PathLike[str], bundle: _Bundle, progress: Progress | None
) -> BundleImportReport:
    meta = {k: v for k, v in bundle.meta.items() if k not in _LOCAL_META}
    name, working_dir, model = meta.pop("name", None), meta.pop("working_dir", None), meta.pop("model", None)
    batches = _batches(path, bundle, 0, progress)
    with store.create(
        name=name,
        working_dir=working_dir,
        model=model,
        session_id=bundle.meta["id"],
        events=next(batches, []),
        meta=meta,  # not **meta: a field named "lazy" or "events" is metadata, not an option
    ) as session:
        for batch in batches:
            session.import_events(batch)
        if bundle.events and session.head != bundle.head:
            session.checkout(bundle.head)  # an event of the bundle (checked): cannot be refused
        _keep_date(session, bundle)
        return BundleImportReport(session.id, "created", len(bundle.events), len(bundle.events), session.head)
