"""An in-memory backend: the seam's guarantees, nothing on disk (tests, scratch, the lazy gate's buffer).

It keeps what the core hands it (payloads as JSON bytes), so every read
returns a fresh copy, as a file read would.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import BlobIntegrityError, EventNotFound, HeadConflict, SessionExists, SessionNotFound
from ..event import NIL_ID, Event, check_session_id, digest_of
from .base import (
    Backend,
    Commit,
    IndexEntry,
    Problem,
    SessionStats,
    SessionStorage,
    StagedEvent,
    Ticket,
    check_durability,
)
from .checks import (
    check_rows,
)

__all__ = ["MemoryBackend"]

_NAMED: dict[str, MemoryBackend] = {}  # memory:NAME -> the one store of that name in this process
_NAMED_LOCK = threading.Lock()


def _as_stored(meta: dict[str, Any]) -> dict[str, Any]:
    """Metadata as a backend that writes it as JSON gives it back (NaN as
    None, tuples as lists): the reference backend must not keep what the
    others cannot."""
    stored: dict[str, Any] = orjson.loads(orjson.dumps(meta))
    return stored


@dataclass
class _Data:
    meta: dict[str, Any]
    events: dict[str, StagedEvent] = field(default_factory=dict)  # in append order
    parents: set[str] = field(default_factory=set)
    blobs: dict[str, bytes] = field(default_factory=dict)
    sidecars: dict[str, bytes] = field(default_factory=dict)
    head: str = NIL_ID
    updated_ns: int = field(default_factory=time.time_ns)
    lock: threading.Lock = field(default_factory=threading.Lock)
    deleted: bool = False  # the store deleted it; handles still open read what they hold

    def apply(self, session_id: str, commit: Commit) -> None:
        blobs = {d: b if isinstance(b, bytes) else b.source.get_blob(d) for d, b in commit.blobs.items()}
        with self.lock:
            if self.head != commit.expected_head:
                raise HeadConflict(session_id, commit.expected_head, self.head)
            self.blobs.update(blobs)
            self.events.update((e.id, e) for e in commit.events)
            self.parents.update(e.parent_id for e in commit.events)
            self.head, self.updated_ns = commit.head, time.time_ns()


class MemorySessionStorage(SessionStorage):
    def __init__(self, session_id: str, data: _Data, *, readonly: bool) -> None:
        self.session_id, self.readonly, self.warnings, self._data = session_id, readonly, [], data

    def commit(self, commit: Commit) -> Ticket:
        try:
            self._data.apply(self.session_id, commit)
        except HeadConflict as exc:
            return Ticket(exc)
        return Ticket.done()

    def head(self) -> str:
        return self._data.head

    def last_id(self) -> str:
        return next(reversed(self._data.events), "")

    def get(self, event_id: str) -> Event:
        if (staged := self._data.events.get(event_id)) is None:
            raise EventNotFound(event_id, self.session_id)
        return staged.to_event()

    def contains(self, event_id: str) -> bool:
        return event_id in self._data.events

    def has_children(self, event_id: str) -> bool:
        return event_id in self._data.parents

    def entries(self) -> Iterator[IndexEntry]:
        with self._data.lock:  # a snapshot: a commit may come while the caller iterates
            events = list(self._data.events.values())
        return iter(
            [IndexEntry(e.id, e.parent_id, e.branch_from, e.kind, e.role, e.timestamp, e.digest) for e in events]
        )

    def event_count(self) -> int:
        return len(self._data.events)

    def get_blob(self, digest: str) -> bytes:
        if (data := self._data.blobs.get(digest)) is None or digest_of(data) != digest:
            raise BlobIntegrityError(f"memory:{digest}", None, f"blob {digest} is missing or damaged")
        return data

    def read_meta(self) -> dict[str, Any]:
        self._exists()
        return copy.deepcopy(self._data.meta)

    def _exists(self) -> None:
        """As the other backends do for a session deleted under a handle."""
        if self._data.deleted:
            raise SessionNotFound(self.session_id)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._data.meta = _as_stored(meta)

    def set_updated_ns(self, updated_ns: int) -> None:
        self._data.updated_ns = updated_ns

    def read_sidecar(self, name: str) -> bytes | None:
        return self._data.sidecars.get(name)

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        if data is None:
            self._data.sidecars.pop(name, None)
        else:
            self._data.sidecars[name] = bytes(data)

    def sidecar_names(self) -> list[str]:
        return sorted(self._data.sidecars)

    def refresh(self) -> None:
        """Readers share the writer's data: there is nothing to catch up,
        unless the session is gone."""
        self._exists()

    def close(self) -> None:
        """Nothing is held: a memory session has no lease beyond the core's."""


class MemoryBackend(Backend):
    """Sessions in a dict. ``durability`` is checked as everywhere (a typo
    found in tests, not in production) and means nothing here."""

    def __init__(self, *, durability: str = "full") -> None:
        check_durability(durability)
        self.durability, self.url = durability, f"memory:{id(self):x}"
        self._sessions: dict[str, _Data] = {}
        self._breadcrumbs: dict[str, str] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_url(cls, url: str, *, durability: str = "full", **options: Any) -> MemoryBackend:
        """``memory:`` is a new, empty store each time; ``memory:NAME`` the one store of
        that name in this process (so successive in-process CLI calls share it)."""
        if not (name := url.partition(":")[2]):
            return cls(durability=durability, **options)
        with _NAMED_LOCK:
            if (backend := _NAMED.get(name)) is None:
                backend = _NAMED[name] = cls(durability=durability, **options)
                backend.url = f"memory:{name}"
            return backend

    def _data(self, session_id: str) -> _Data:
        if (data := self._sessions.get(check_session_id(session_id))) is None:
            raise SessionNotFound(session_id)
        return data

    def create(self, session_id: str, meta: dict[str, Any], initial: Commit | None = None) -> SessionStorage:
        data = _Data(_as_stored(meta))
        if initial is not None:
            data.apply(session_id, initial)  # staged before it is visible
        with self._lock:
            if check_session_id(session_id) in self._sessions:
                raise SessionExists(session_id)
            self._sessions[session_id] = data
        return MemorySessionStorage(session_id, data, readonly=False)

    def open(self, session_id: str, *, readonly: bool) -> SessionStorage:
        return MemorySessionStorage(session_id, self._data(session_id), readonly=readonly)

    def exists(self, session_id: str) -> bool:
        return check_session_id(session_id) in self._sessions

    def session_ids(self) -> Iterator[str]:
        return iter(list(self._sessions))

    def read_meta(self, session_id: str) -> dict[str, Any]:
        return copy.deepcopy(self._data(session_id).meta)

    def stats(self, session_id: str) -> SessionStats:
        data = self._data(session_id)
        return SessionStats(len(data.events), data.updated_ns)

    def delete(self, session_id: str) -> None:
        data = self._data(session_id)
        with self._lock:
            del self._sessions[session_id]
        data.deleted = True

    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        self._breadcrumbs[working_dir] = check_session_id(session_id)

    def get_breadcrumb(self, working_dir: str) -> str | None:
        return self._breadcrumbs.get(working_dir)

    def verify(self, session_id: str) -> list[Problem]:
        return check_rows(self, MemorySessionStorage(session_id, self._data(session_id), readonly=True), "memory")

    def repair(self, session_id: str) -> list[str]:
        self._data(session_id)
        return []  # memory holds only what the core handed it: nothing a disk damaged
