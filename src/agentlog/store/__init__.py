"""Store: where sessions are created, opened, listed and checked.

The parts, one concern a module, which ``Store`` combines: ``base`` (the
backend, the store's identity, the checks on one session), ``locations``
(where a store is when none is named), ``listing``, ``continuing`` (a
working directory's latest session: breadcrumbs), ``timelines`` (a
session's core created or opened on the backend) and ``checking`` (fsck
and repair); ``Store`` itself creates and opens sessions, re-roots and
continues them, deletes and searches."""

from __future__ import annotations

import builtins
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, Unpack

from .._writers import WRITERS
from ..backends.base import SessionStorage
from ..backends.memory import MemoryBackend
from ..errors import NothingToContinue, SessionExists
from ..event import Event, IdGenerator, check_new_session_id, check_session_id, format_timestamp
from ..lifecycle import LAZY_IDS, check_meta, meta_with_defaults
from ..search import SearchHit, SearchOptions
from ..search import search as search_sessions
from ..search.index import forget_session
from ..session import Session
from ..timeline import Timeline
from .checking import StoreChecking
from .listing import BrokenSession, SessionInfo
from .locations import default_home, default_location
from .timelines import StoreTimelines

__all__ = ["SCHEMA_VERSION", "BrokenSession", "SessionInfo", "Store", "default_home", "default_location"]

SCHEMA_VERSION = 1


def _now() -> str:
    return format_timestamp(time.time_ns())


class Store(StoreTimelines, StoreChecking):
    """All sessions of one store, named by a URL or a directory.

    ``Store()`` opens ``$AGENTLOG_STORE`` or else the file store at
    ``default_home()``; ``Store("sqlite:///path/agentlog.db")``,
    ``Store("memory:")`` or ``Store("/some/dir")`` name others, and
    ``Store(backend=...)`` takes a backend object. ``blob_threshold`` is
    the size above which a payload is kept apart as a blob (core policy,
    the same on every backend); other keywords go to the backend."""

    @classmethod
    def memory(cls, **options: Any) -> Store:
        """A store that lives in this process's memory only (tests, scratch)."""
        return cls("memory:", **options)

    # --- sessions ---------------------------------------------------------------
    def create(
        self,
        name: str | None = None,
        working_dir: str | None = None,
        model: str | None = None,
        session_id: str | None = None,
        *,
        lazy: bool = False,
        events: Sequence[Event] = (),
        source: Session | SessionStorage | None = None,
        meta: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Session:
        """Create a session and return it open for writing.

        Further metadata goes in ``fields`` (keywords) or ``meta`` (a
        mapping, for keys named like this method's own parameters, such as
        metadata copied from elsewhere); keywords win over ``meta``. It is
        checked before anything is written (``InvalidMeta``).

        With ``lazy=True`` nothing is written until the first assistant
        message or ``session.persist()`` (the lazy gate): a session the
        user never used leaves no trace. Until then its events live in
        memory only.

        ``events`` (for forks and importers) are stored verbatim, ids,
        parents and times kept, blob payloads taken from ``source`` (a
        session); the session appears with all of them or, after a crash,
        not at all."""
        sid = check_new_session_id(session_id) if session_id is not None else IdGenerator().next()
        extra = {**meta, **fields} if meta else fields
        check_meta({"name": name, "working_dir": working_dir, "model": model, **extra})
        LAZY_IDS.check(self.url, sid)  # a lazy session of this process holds it
        if lazy and self.backend.exists(sid):
            raise SessionExists(sid)
        now = _now()
        record = meta_with_defaults(
            {
                "schema": SCHEMA_VERSION,
                "id": sid,
                "name": name,
                "working_dir": os.path.abspath(working_dir) if working_dir else None,
                "model": model,
                "created_at": now,
                "updated_at": now,
            }
        )
        record.update(extra)
        storage = source.storage if isinstance(source, Session) else source
        if lazy:
            buffer = MemoryBackend().create(sid, record, self._initial(events, storage))
            session = Session(self, Timeline(buffer, blob_threshold=self.blob_threshold), lazy=True)
            try:
                LAZY_IDS.reserve(self.url, sid, session)
            except BaseException:
                session.close()
                raise
            return session
        return Session(self, self.create_timeline(sid, record, events, storage))

    def open(self, session_id: str, readonly: bool = False) -> Session:
        """Open a session; for writing it takes the lease (SessionLocked if held)."""
        check_session_id(session_id)
        if readonly:
            storage = self.backend.open(session_id, readonly=True)
            return Session(self, Timeline(storage, blob_threshold=self.blob_threshold))
        timeline = WRITERS.acquire(self.url, session_id, lambda: self._timeline(session_id))
        session = Session(self, timeline)
        try:
            self._leave_breadcrumb(session_id, session.meta.get("working_dir"))
        except BaseException:
            session.close()
            raise
        return session

    def update_meta(self, session_id: str, **changes: Any) -> dict[str, Any]:
        """Change session.json fields under the session's lease (title,
        archived, status, summary...); unknown fields are kept."""
        with self.open(session_id) as session:
            return session.update_meta(**changes)

    # --- --continue -------------------------------------------------------------
    def reroot(self, session_id: str, working_dir: str) -> None:
        """Point a session at its project's new location."""
        working_dir = os.path.abspath(working_dir)
        self.update_meta(session_id, working_dir=working_dir)
        self._leave_breadcrumb(session_id, working_dir)

    def continue_session(
        self, working_dir: str | None = None, *, reroot: bool = False, readonly: bool = False
    ) -> Session:
        """Open the latest session of a working directory (``--continue``).

        If none is found but a session's directory was moved here (same
        name, old path gone), ``reroot=True`` re-roots and opens it;
        otherwise NothingToContinue says which sessions could be re-rooted."""
        working_dir = os.path.abspath(working_dir or os.getcwd())
        found = self.latest_for(working_dir)
        if found is None:
            # An archived session is hidden from --continue, moved or not.
            moved = [row for row in self.find_moved(working_dir) if not row.archived]
            if moved and reroot:
                self.reroot(moved[0].id, working_dir)
                found = moved[0].id
            else:
                raise NothingToContinue(working_dir, [row.id for row in moved])
        return self.open(found, readonly=readonly)

    # --- deleting ---------------------------------------------------------------
    def delete(self, session_id: str) -> None:
        self._not_open_here(session_id)
        self.backend.delete(session_id)
        forget_session(self, session_id)

    # --- searching --------------------------------------------------------------
    def search(self, query: str, **options: Unpack[SearchOptions]) -> builtins.list[SearchHit]:
        """Full-text search over every session, every branch and the history
        before compactions, best first (``agentlog.search.search`` has the
        options: ``session``, ``kind``, ``role``, ``since``, ``cwd``, ``limit``)."""
        return search_sessions(self, query, **options)

    # --- lifetime ---------------------------------------------------------------
    def close(self) -> None:
        """Release the backend's connections (sessions stay stored).

        Close the sessions opened from the store first: after this, neither
        the store nor those sessions are to be used. What a use then does
        depends on the backend, which is why it is not to be relied on: an
        SQLite store refuses everything with a StorageError (its one
        connection is shut), a PostgreSQL store refuses what needs its pool,
        and file and memory stores, which hold no connection, go on working."""
        self.backend.close()

    def __repr__(self) -> str:
        return f"<Store {self.url} durability={self.durability}>"
