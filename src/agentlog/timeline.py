"""The core: the one place that decides what goes on a session's timeline.

Above the seam and below ``Session``, a ``Timeline`` assigns event ids
(monotonic UUIDv7), parents (HEAD at submission, or the selected event)
and ``branch_from``; validates kinds, roles and records; splits payloads
into inline records and blobs; and frames each batch as one ``Commit``
whose HEAD moves by compare-and-swap. Backends store what it hands them.

Ordering: ids and parents are assigned, and the commit submitted, under
one lock, so commits reach the backend in the order their parents were
chosen; the wait for durability happens outside it, so threads appending
to one session share the backend's syncs (group commit).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import orjson

from ._slots import slot_constructor
from .backends.base import (
    DEFAULT_BLOB_THRESHOLD,
    BlobCopy,
    Commit,
    SessionStorage,
    StagedEvent,
    Ticket,
    split_payload,
)
from .errors import AgentlogError, CorruptionError, EventNotFound, InvalidEvent, ReadOnlySession
from .event import (
    NIL_ID,
    Event,
    IdGenerator,
    check_event_id,
    check_kind,
    check_record,
    check_role,
    format_timestamp,
    is_event_id,
    stored_record_problem,
)

__all__ = ["NewEvent", "NewEventLike", "Timeline", "as_new_event", "check_draft", "stage_existing"]

# The append path builds these without their frozen __init__ (see _slots).
_new_staged = slot_constructor(StagedEvent)
_new_commit = slot_constructor(Commit)
_new_event = slot_constructor(Event)

#: The blobs of a commit that has none (read-only, shared).
_NO_BLOBS: Mapping[str, bytes | BlobCopy] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event not yet on the timeline: the core gives it id, parent and time."""

    kind: str
    record: Any = None
    role: str | None = None


NewEventLike = NewEvent | tuple[Any, ...] | Mapping[str, Any]


#: Kinds and roles that passed their checks: an append repeats a handful
#: of them, so each is checked once per process (a set probe after that).
_GOOD_KINDS: set[str] = set()
_GOOD_ROLES: set[str] = set()
_REMEMBER = 1024  # names beyond this many are checked every time


def check_draft(kind: Any, record: Any, role: Any) -> None:
    """Validate one new event's caller-supplied parts (kind, role, record).

    Everything else on the line (id, parent, time, framing) is made by the
    core and is not checked again below it."""
    if kind.__class__ is not str or kind not in _GOOD_KINDS:
        check_kind(kind)
        if len(_GOOD_KINDS) < _REMEMBER:
            _GOOD_KINDS.add(kind)
    if role is not None and (role.__class__ is not str or role not in _GOOD_ROLES):
        check_role(role)
        if len(_GOOD_ROLES) < _REMEMBER:
            _GOOD_ROLES.add(role)
    if isinstance(record, dict):
        check_record(record)


def as_new_event(item: NewEventLike) -> NewEvent:
    """A validated NewEvent from a NewEvent, a (kind, record[, role]) tuple or a mapping."""
    kind: Any
    role: Any
    if isinstance(item, NewEvent):
        kind, record, role = item.kind, item.record, item.role
    elif isinstance(item, tuple) and len(item) in (2, 3):
        kind, record, role = item if len(item) == 3 else (*item, None)
    elif isinstance(item, Mapping):
        kind, record, role = item.get("kind"), item.get("record"), item.get("role")
    else:
        shown = type(item).__name__
        raise InvalidEvent(f"cannot make an event of {shown}: give a NewEvent, (kind, record[, role]) or a dict")
    check_draft(kind, record, role)
    return item if isinstance(item, NewEvent) else NewEvent(kind, record, role)


#: An encoded record longer than this is copied into bytes of its own size.
_COPY_OUT = 64 << 10


def _encode(record: Any) -> bytes:
    try:
        data = orjson.dumps(record)
    except TypeError as exc:
        raise InvalidEvent(f"record is not JSON-serializable: {exc}") from None
    # orjson returns its output in the buffer it grew for the worst case (a
    # 200 KB text with newlines sits in a 2 MB block): a batch of large
    # records (an import, a copy) would hold ten times their size until its
    # commit. A copy of the exact size costs a memcpy.
    return bytes(memoryview(data)) if len(data) > _COPY_OUT else data


def stage_existing(
    events: Iterable[Event], source: SessionStorage | None, threshold: int, floor: str = ""
) -> tuple[list[StagedEvent], dict[str, bytes | BlobCopy]]:
    """Frame events that keep their ids, parents and times (imports, forks,
    the lazy gate). Each must be a valid event whose id sorts after
    ``floor`` and after the one before it; a payload kept in a blob
    (``record`` None) is copied from ``source``."""
    staged: list[StagedEvent] = []
    blobs: dict[str, bytes | BlobCopy] = {}
    for event in events:
        problem = stored_record_problem(
            {
                "id": event.id,
                "parent_id": event.parent_id,
                "branch_from": event.branch_from,
                "kind": event.kind,
                "role": event.role,
                "timestamp": event.timestamp,
                "digest": event.digest,
            }
        )
        if problem:
            raise InvalidEvent(f"event {event.id!r}: {problem.removeprefix('event record has ')}")
        check_kind(event.kind)  # a streaming delta is live-only, imported or not
        if event.id <= floor:
            raise InvalidEvent(f"event {event.id} does not sort after {floor or 'the start'}")
        floor = event.id
        if event.loaded:
            payload, digest = split_payload(_encode(event.record), threshold, blobs)
        else:
            if source is None:
                raise InvalidEvent(f"blob {event.digest} is not here and no source session was given")
            payload, digest = None, event.digest
            assert digest is not None  # an unloaded event names its blob
            blobs.setdefault(digest, BlobCopy(source))
        staged.append(
            StagedEvent(
                event.id,
                event.parent_id,
                event.kind,
                event.role,
                event.timestamp,
                payload,
                digest,
                event.branch_from,
            )
        )
    return staged, blobs


class Timeline:
    """The core over one session's storage; shared by every writer handle
    of that session in a process."""

    def __init__(self, storage: SessionStorage, *, blob_threshold: int = DEFAULT_BLOB_THRESHOLD) -> None:
        self.storage = storage
        self.blob_threshold = blob_threshold
        self._lock = threading.Lock()
        #: Held by every handle of the session in this process while it
        #: changes the metadata document or a sidecar: a read-modify-write
        #: under a handle's own lock lost the other handle's update, and two
        #: writes raced on one temporary file (session.json left torn).
        self.meta_lock = threading.Lock()
        last = storage.last_id()
        if last and not is_event_id(last):
            # A hand-edited row (SQL stores keep it in a column): ids could
            # not be kept increasing after it, so nothing is written.
            raise CorruptionError(
                f"session {storage.session_id}", None, f"its newest event id {last!r} is not an event id"
            )
        self._ids = IdGenerator(last or None)
        # HEAD after every commit submitted so far (the next commit's
        # expected HEAD); the storage's HEAD catches up as commits land.
        self._tip = storage.head()
        self._last_ticket: Ticket | None = None

    @property
    def session_id(self) -> str:
        return self.storage.session_id

    def _check_writable(self) -> None:
        if self.storage.readonly:
            raise ReadOnlySession(self.session_id)

    def _drain(self) -> None:
        """Wait for every submitted commit (caller holds the lock), so that
        a read of the tree sees them; after a failure, restart from the
        storage's HEAD."""
        ticket, self._last_ticket = self._last_ticket, None
        if ticket is None:
            return
        try:
            ticket.wait()
        except AgentlogError:
            # That commit's own caller reports its failure; here it only
            # means the chain built on it is void.
            self._tip = self.storage.head()

    def _submit(self, commit: Commit) -> Ticket:
        ticket = self.storage.commit(commit)
        self._tip = commit.head
        self._last_ticket = ticket
        return ticket

    def _parent_and_branch(self, parent: str | None) -> tuple[str, str | None]:
        """The new chain's parent and ``branch_from`` (caller holds the lock).

        Following HEAD (``parent`` None, or the HEAD itself): the chain is a
        branch only if HEAD was checked out to an event that already has
        children. A selected event that has children, or the root of a
        non-empty session, is named by ``branch_from``."""
        if parent is None or parent == self._tip:
            current = self._tip
            if current == NIL_ID:
                # HEAD at the root: a new root, a branch beside the others if
                # there are any (after checkout(NIL_ID), as after select()).
                self._drain()
                return NIL_ID, NIL_ID if self._ids.last() else None
            if self._ids.is_last(current):
                return current, None  # the newest event has no children: the common case
            self._drain()  # rare: see every child, including queued ones
            current = self._tip
            return current, current if self.storage.has_children(current) else None
        self._drain()
        if parent == NIL_ID:
            return NIL_ID, NIL_ID if self._ids.last() else None
        if not self.storage.contains(parent):
            raise EventNotFound(parent, self.session_id)
        return parent, parent if self.storage.has_children(parent) else None

    def submit(
        self,
        drafts: Sequence[NewEvent],
        *,
        parent: str | None = None,
    ) -> tuple[list[Event], Commit, Ticket]:
        """Frame ``drafts`` as one chain and submit it; ``run()`` waits for it
        (outside any lock) before it is acknowledged. ``parent`` None means
        HEAD as of this submission."""
        self._check_writable()
        payloads = [_encode(d.record) for d in drafts]
        with self._lock:
            current, branch_from = self._parent_and_branch(parent)
            stamp = format_timestamp(time.time_ns())
            blobs: dict[str, bytes | BlobCopy] = {}
            staged: list[StagedEvent] = []
            events: list[tuple[Any, ...]] = []
            for i, (draft, payload) in enumerate(zip(drafts, payloads, strict=True)):
                event_id = self._ids.next()
                inline, digest = split_payload(payload, self.blob_threshold, blobs)
                first = branch_from if i == 0 else None
                staged.append(_new_staged(event_id, current, draft.kind, draft.role, stamp, inline, digest, first))
                events.append((event_id, current, draft.kind, draft.role, stamp, payload, digest, first))
                current = event_id
            commit = _new_commit(tuple(staged), current, self._tip, blobs)
            ticket = self._submit(commit)
        # The returned records are decoded copies, as every read returns them.
        made = [_new_event(i, p, k, r, t, orjson.loads(b), d, f, {}) for i, p, k, r, t, b, d, f in events]
        return made, commit, ticket

    def submit_one(
        self, kind: str, record: Any, role: str | None, *, parent: str | None = None
    ) -> tuple[list[Event], Commit, Ticket]:
        """``submit([NewEvent(kind, record, role)])`` for the one-event append,
        with nothing built twice; the caller has passed the draft through
        ``check_draft``."""
        if self.storage.readonly:
            raise ReadOnlySession(self.session_id)
        payload = _encode(record)
        if len(payload) <= self.blob_threshold:
            inline: bytes | None = payload
            digest: str | None = None
            blobs: Mapping[str, bytes | BlobCopy] = _NO_BLOBS
        else:
            some: dict[str, bytes | BlobCopy] = {}
            inline, digest = split_payload(payload, self.blob_threshold, some)
            blobs = some
        with self._lock:
            expected = self._tip
            newest = self._ids.is_last(expected) if expected != NIL_ID else not self._ids.last()
            if (parent is None or parent == expected) and newest:
                current, branch_from = expected, None  # HEAD is the newest event: no children, the common case
            else:
                current, branch_from = self._parent_and_branch(parent)
                expected = self._tip
            event_id = self._ids.next()
            stamp = format_timestamp(time.time_ns())
            staged = _new_staged(event_id, current, kind, role, stamp, inline, digest, branch_from)
            commit: Commit = _new_commit((staged,), event_id, expected, blobs)
            ticket = self.storage.commit(commit)
            self._tip = event_id
            self._last_ticket = ticket
        # The returned record is a decoded copy, as every read returns it.
        event = _new_event(event_id, current, kind, role, stamp, orjson.loads(payload), digest, branch_from, {})
        return [event], commit, ticket

    def failed(self, commit: Commit) -> None:
        """A submitted commit failed: if nothing was built on it since, the
        next commit starts again from the storage's HEAD."""
        with self._lock:
            if self._tip == commit.head:
                self._tip = self.storage.head()
                self._last_ticket = None

    def run(self, submitted: tuple[list[Event], Commit, Ticket]) -> list[Event]:
        """Wait for a submitted commit; the events once durable."""
        events, commit, ticket = submitted
        try:
            ticket.wait()
        except BaseException:
            self.failed(commit)
            raise
        return events

    def append(self, drafts: Sequence[NewEvent], *, parent: str | None = None) -> list[Event]:
        return self.run(self.submit(drafts, parent=parent))

    def checkout(self, event_id: str) -> None:
        """Move HEAD durably without appending an event."""
        self._check_writable()
        if event_id != NIL_ID:
            check_event_id(event_id)
        with self._lock:
            if event_id != NIL_ID and not self.storage.contains(event_id):
                self._drain()  # it may be in a commit still queued
                if not self.storage.contains(event_id):
                    raise EventNotFound(event_id, self.session_id)
            commit = Commit((), event_id, self._tip)
            submitted: tuple[list[Event], Commit, Ticket] = ([], commit, self._submit(commit))
        self.run(submitted)

    def import_events(self, events: Sequence[Event], source: SessionStorage | None = None) -> list[Event]:
        """Append events keeping their ids, parents and times, as one batch;
        HEAD moves to the last. Parents must be stored or come earlier."""
        self._check_writable()
        if not events:
            return []
        with self._lock:
            self._drain()  # parents may be in commits still queued
            staged, blobs = stage_existing(events, source, self.blob_threshold, self._ids.last())
            known: set[str] = set()
            for event in staged:
                if (
                    event.parent_id != NIL_ID
                    and event.parent_id not in known
                    and not self.storage.contains(event.parent_id)
                ):
                    raise EventNotFound(event.parent_id, self.session_id)
                known.add(event.id)
            commit = Commit(tuple(staged), staged[-1].id, self._tip, blobs)
            for event in staged:
                self._ids.observe(event.id)
            submitted = (list(events), commit, self._submit(commit))
        return self.run(submitted)

    def close(self) -> None:
        self.storage.close()
