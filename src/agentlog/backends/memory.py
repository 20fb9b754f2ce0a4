"""An in-memory backend: the same semantics, nothing on disk.

For tests and ephemeral sessions. It keeps payloads above the blob
threshold apart and returns them unloaded, exactly as the file backend
does, so code written against one behaves the same on the other.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Any, Iterator, Sequence

import orjson

from ..errors import (
    BlobIntegrityError,
    EventNotFound,
    InvalidEvent,
    ReadOnlySession,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
)
from ..event import NIL_ID, Event, IdGenerator, check_session_id, format_timestamp
from ._registry import SharedWriters
from .base import DEFAULT_BLOB_THRESHOLD, Backend, Draft, IndexEntry, Problem, SessionStats, SessionStorage
from .files.blobs import digest_of

__all__ = ["MemoryBackend"]


class _Data:
    def __init__(self, meta: dict[str, Any]) -> None:
        self.meta = meta
        self.events: dict[str, Event] = {}
        self.order: list[str] = []
        self.children: set[str] = set()
        self.head = NIL_ID
        self.blobs: dict[str, bytes] = {}
        self.ids = IdGenerator()
        self.updated_ns = time.time_ns()
        self.lock = threading.RLock()
        self.writer_open = False
        self.sidecars: dict[str, bytes] = {}


class MemorySessionStorage(SessionStorage):
    def __init__(self, backend: "MemoryBackend", session_id: str, data: _Data, *, readonly: bool):
        self._backend = backend
        self.session_id = session_id
        self._data = data
        self.readonly = readonly
        self._closed = False
        self.warnings: list[str] = []

    def _check(self, write: bool = False) -> None:
        if self._closed:
            raise SessionClosed(self.session_id)
        if write and self.readonly:
            raise ReadOnlySession(self.session_id)

    def head(self) -> str:
        return self._data.head

    def append(self, drafts: Sequence[Draft], *, parent: str | None = None,
               branch_from: str | None = None) -> list[Event]:
        self._check(write=True)
        d = self._data
        payloads = []
        for draft in drafts:
            try:
                payloads.append((draft, orjson.dumps(draft.record)))
            except TypeError as exc:
                raise InvalidEvent(f"record is not JSON-serializable: {exc}") from None
        with d.lock:
            if parent is not None and parent != NIL_ID and parent not in d.events:
                raise EventNotFound(parent, self.session_id)
            current = parent if parent is not None else d.head
            if parent is None and current in d.children and current != NIL_ID:
                branch_from = current  # HEAD was checked out to an event with children
            out = []
            for i, (draft, payload) in enumerate(payloads):
                event_id = d.ids.next()
                ts = format_timestamp(time.time_ns())
                digest = None
                if len(payload) > self._backend.blob_threshold:
                    digest = digest_of(payload)
                    d.blobs[digest] = payload
                event = Event(event_id, current, draft.kind, draft.role, ts,
                              orjson.loads(payload), digest, branch_from if i == 0 else None)
                out.append(event)
                current = event_id
            for event in out:
                stored = event if event.digest is None else event.with_record(None)
                d.events[event.id] = stored
                d.order.append(event.id)
                d.children.add(event.parent_id)
            d.head = current
            d.updated_ns = time.time_ns()
        return out

    def append_existing(self, events: Sequence[Event],
                        source: SessionStorage | None = None) -> list[Event]:
        self._check(write=True)
        d = self._data
        with d.lock:
            floor = d.order[-1] if d.order else ""
            known: set[str] = set()
            staged = []
            for event in events:
                if event.id <= floor:
                    raise InvalidEvent(f"event {event.id} does not sort after {floor or 'the start'}")
                floor = event.id
                if (event.parent_id != NIL_ID and event.parent_id not in known
                        and event.parent_id not in d.events):
                    raise EventNotFound(event.parent_id, self.session_id)
                known.add(event.id)
                if event.digest and event.digest not in d.blobs:
                    if source is None:
                        raise InvalidEvent(f"blob {event.digest} is here nowhere and no source was given")
                    d.blobs[event.digest] = source.load_blob(event.digest)
                staged.append(event if event.digest is None else event.with_record(None))
            for event in staged:
                d.ids.observe(event.id)
                d.events[event.id] = event
                d.order.append(event.id)
                d.children.add(event.parent_id)
            if staged:
                d.head = staged[-1].id
            d.updated_ns = time.time_ns()
        return list(events)

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        self._check(write=True)
        if data is None:
            self._data.sidecars.pop(name, None)
        else:
            self._data.sidecars[name] = bytes(data)

    def read_sidecar(self, name: str) -> bytes | None:
        return self._data.sidecars.get(name)

    def sidecar_names(self) -> list[str]:
        return sorted(self._data.sidecars)

    def set_head(self, event_id: str) -> None:
        self._check(write=True)
        with self._data.lock:
            if event_id != NIL_ID and event_id not in self._data.events:
                raise EventNotFound(event_id, self.session_id)
            self._data.head = event_id

    def get(self, event_id: str) -> Event:
        self._check()
        event = self._data.events.get(event_id)
        if event is None:
            raise EventNotFound(event_id, self.session_id)
        # A copy, as a file read would give: callers cannot alter the store.
        return event if event.record is None else event.with_record(copy.deepcopy(event.record))

    def contains(self, event_id: str) -> bool:
        self._check()
        return event_id in self._data.events

    def has_children(self, event_id: str) -> bool:
        self._check()
        return event_id in self._data.children

    def entries(self) -> Iterator[IndexEntry]:
        self._check()
        with self._data.lock:
            events = [self._data.events[i] for i in self._data.order]
        for e in events:
            yield IndexEntry(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest)

    def load_blob(self, digest: str) -> bytes:
        self._check()
        data = self._data.blobs.get(digest)
        if data is None:
            raise BlobIntegrityError(f"memory:{digest}", None, f"blob {digest} is missing")
        if digest_of(data) != digest:
            raise BlobIntegrityError(f"memory:{digest}", None, "content does not match its digest")
        return data

    def event_count(self) -> int:
        return len(self._data.order)

    def read_meta(self) -> dict[str, Any]:
        return copy.deepcopy(self._data.meta)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._check(write=True)
        self._data.meta = copy.deepcopy(meta)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if not self.readonly:
            self._data.writer_open = False


class MemoryBackend(Backend):
    """Sessions in a dict. ``durability`` is accepted and means nothing here."""

    def __init__(self, *, blob_threshold: int = DEFAULT_BLOB_THRESHOLD, durability: str = "full") -> None:
        self.blob_threshold = blob_threshold
        self.durability = durability
        self._sessions: dict[str, _Data] = {}
        self._lock = threading.Lock()
        self._writers = SharedWriters()
        self.home = f"memory:{id(self):x}"

    def _data(self, session_id: str) -> _Data:
        check_session_id(session_id)
        data = self._sessions.get(session_id)
        if data is None:
            raise SessionNotFound(session_id)
        return data

    def _writer(self, session_id: str, data: _Data) -> MemorySessionStorage:
        if data.writer_open:  # pragma: no cover - the registry shares one writer
            raise SessionLocked(session_id, "this process")
        data.writer_open = True
        return MemorySessionStorage(self, session_id, data, readonly=False)

    def create(self, session_id: str, meta: dict[str, Any], *,
               events: Sequence[Event] = (), source: SessionStorage | None = None) -> SessionStorage:
        check_session_id(session_id)
        with self._lock:
            if session_id in self._sessions:
                raise SessionExists(session_id)
            data = _Data(copy.deepcopy(meta))
            if events:  # staged before it is visible, like the file backend
                staging = MemorySessionStorage(self, session_id, data, readonly=False)
                staging.append_existing(events, source=source)
            self._sessions[session_id] = data
        return self._writers.open(f"{self.home}/{session_id}", lambda: self._writer(session_id, data))

    def open(self, session_id: str, *, readonly: bool) -> SessionStorage:
        data = self._data(session_id)
        if readonly:
            return MemorySessionStorage(self, session_id, data, readonly=True)
        return self._writers.open(f"{self.home}/{session_id}", lambda: self._writer(session_id, data))

    def exists(self, session_id: str) -> bool:
        check_session_id(session_id)
        return session_id in self._sessions

    def session_ids(self) -> Iterator[str]:
        return iter(list(self._sessions))

    def read_meta(self, session_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._data(session_id).meta)

    def write_meta(self, session_id: str, meta: dict[str, Any]) -> None:
        self._data(session_id).meta = copy.deepcopy(meta)

    def stats(self, session_id: str) -> SessionStats:
        data = self._data(session_id)
        return SessionStats(len(data.order), data.updated_ns)

    def delete(self, session_id: str) -> None:
        self._data(session_id)
        if self._writers.is_open(f"{self.home}/{session_id}"):
            raise SessionLocked(session_id, "this process")
        with self._lock:
            del self._sessions[session_id]

    def verify(self, session_id: str) -> list[Problem]:
        data = self._data(session_id)
        problems = []
        for event_id in data.order:
            event = data.events[event_id]
            if event.parent_id != NIL_ID and event.parent_id not in data.events:
                problems.append(Problem(session_id, "memory", None,
                                        f"event {event_id} names a missing parent"))
            if event.digest and digest_of(data.blobs.get(event.digest, b"")) != event.digest:
                problems.append(Problem(session_id, "memory", None,
                                        f"blob {event.digest} is missing or damaged"))
        return problems
