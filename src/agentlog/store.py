"""Store: where sessions are created, opened, listed and checked."""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from .backends.base import Backend, Problem
from .backends.files import FileBackend
from .backends.memory import MemoryBackend
from .errors import (
    AgentlogError,
    CorruptionError,
    NothingToContinue,
    RecoveryWarning,
    SessionExists,
    SessionNotFound,
)
from .lifecycle import meta_with_defaults
from .event import IdGenerator, check_session_id, format_timestamp, parse_timestamp
from .session import Session

__all__ = ["SCHEMA_VERSION", "SessionInfo", "Store", "default_home"]

SCHEMA_VERSION = 1


def default_home() -> str:
    """``$AGENTLOG_HOME``, else ``$XDG_DATA_HOME/agentlog``, else ~/.local/share/agentlog."""
    env = os.environ.get("AGENTLOG_HOME")
    if env:
        return env
    xdg = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(xdg, "agentlog")


@dataclass(frozen=True)
class SessionInfo:
    """One row of a listing, built without reading any event payload."""

    id: str
    title: str | None
    name: str | None
    working_dir: str | None
    model: str | None
    created_at: str | None
    updated_at: str
    summary: str | None
    status: str
    archived: bool
    event_count: int
    meta: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)


@dataclass(frozen=True)
class BrokenSession:
    """A session directory that listing could not read, and why."""

    id: str
    reason: str


def _canonical_time(value: Any) -> bool:
    """True for agentlog's own RFC 3339 form (nanoseconds, Z), 30 characters."""
    return (isinstance(value, str) and len(value) == 30 and value[19] == "."
            and value.endswith("Z") and value[:4].isdigit())


def _now() -> str:
    return format_timestamp(time.time_ns())


class Store:
    """All sessions under one home (or one backend).

    ``Store()`` uses the embedded file backend at ``default_home()``;
    ``Store(backend=MemoryBackend())`` keeps everything in memory."""

    def __init__(self, home: str | os.PathLike | None = None, durability: str = "full", *,
                 backend: Backend | None = None, **backend_options: Any) -> None:
        if backend is None:
            backend = FileBackend(os.fspath(home) if home is not None else default_home(),
                                  durability=durability, **backend_options)
        self.backend = backend

    @classmethod
    def memory(cls, **options: Any) -> "Store":
        return cls(backend=MemoryBackend(**options))

    @property
    def home(self) -> str:
        return self.backend.home

    @property
    def durability(self) -> str:
        return self.backend.durability

    # --- sessions ----------------------------------------------------------------
    def create(self, name: str | None = None, working_dir: str | None = None,
               model: str | None = None, session_id: str | None = None, *,
               lazy: bool = False, events: Any = (), source: Any = None,
               **meta: Any) -> Session:
        """Create a session and return it open for writing.

        With ``lazy=True`` nothing is written until the first assistant
        message or ``session.persist()`` (the lazy gate): a session the
        user never used leaves no trace. Until then its events live in
        memory only.

        ``events`` (for forks and importers) are stored verbatim, ids,
        parents and times kept, blob payloads taken from ``source`` (a
        session's storage); the session appears with all of them or, after
        a crash, not at all."""
        sid = check_session_id(session_id) if session_id is not None else IdGenerator().next()
        if lazy and self.backend.exists(sid):
            raise SessionExists(sid)
        now = _now()
        record = meta_with_defaults({
            "schema": SCHEMA_VERSION,
            "id": sid,
            "name": name,
            "working_dir": os.path.abspath(working_dir) if working_dir else None,
            "model": model,
            "created_at": now,
            "updated_at": now,
        })
        record.update(meta)
        if lazy:
            buffer = MemoryBackend(blob_threshold=getattr(self.backend, "blob_threshold", 16384))
            return Session(self, buffer.create(sid, record, events=events, source=source), lazy=True)
        return self._create(sid, record, events, source)

    def _create(self, sid: str, record: dict[str, Any], events: Any = (),
                source: Any = None) -> Session:
        """Create on the backend (with initial events, atomically) and leave
        the working directory's breadcrumb."""
        session = Session(self, self.backend.create(sid, record, events=events, source=source))
        try:
            self._leave_breadcrumb(sid, record.get("working_dir"))
        except BaseException:
            session.close()
            raise
        return session

    def open(self, session_id: str, readonly: bool = False) -> Session:
        """Open a session; for writing it takes the lease (SessionLocked if held)."""
        check_session_id(session_id)
        session = Session(self, self.backend.open(session_id, readonly=readonly))
        if not readonly:
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

    # --- --continue ------------------------------------------------------------------
    def _leave_breadcrumb(self, session_id: str, working_dir: str | None) -> None:
        if working_dir:
            self.backend.put_breadcrumb(working_dir, session_id)

    def latest_for(self, working_dir: str) -> str | None:
        """The id of the latest session of ``working_dir``, if any."""
        working_dir = os.path.abspath(working_dir)
        try:
            crumb = self.backend.get_breadcrumb(working_dir)
        except CorruptionError as exc:
            # A breadcrumb is a cache of what listing can find; say it is
            # damaged, then find the session the slow way.
            warnings.warn(RecoveryWarning(f"{exc}; looking the session up by listing"), stacklevel=2)
            crumb = None
        if crumb is not None and self.backend.exists(crumb):
            return crumb
        for row in self.list(archived=True):
            if row.working_dir == working_dir:
                return row.id
        return None

    def find_moved(self, working_dir: str) -> list[SessionInfo]:
        """Sessions whose working directory no longer exists and whose last
        path component matches ``working_dir``'s: a project that was moved."""
        name = os.path.basename(os.path.abspath(working_dir))
        return [row for row in self.list(archived=True)
                if row.working_dir and not os.path.isdir(row.working_dir)
                and os.path.basename(row.working_dir) == name]

    def reroot(self, session_id: str, working_dir: str) -> None:
        """Point a session at its project's new location."""
        working_dir = os.path.abspath(working_dir)
        self.update_meta(session_id, working_dir=working_dir)
        self._leave_breadcrumb(session_id, working_dir)

    def continue_session(self, working_dir: str | None = None, *, reroot: bool = False,
                         readonly: bool = False) -> Session:
        """Open the latest session of a working directory (``--continue``).

        If none is found but a session's directory was moved here (same
        name, old path gone), ``reroot=True`` re-roots and opens it;
        otherwise NothingToContinue says which sessions could be re-rooted."""
        working_dir = os.path.abspath(working_dir or os.getcwd())
        found = self.latest_for(working_dir)
        if found is None:
            moved = self.find_moved(working_dir)
            if moved and reroot:
                self.reroot(moved[0].id, working_dir)
                found = moved[0].id
            else:
                raise NothingToContinue(working_dir, [row.id for row in moved])
        return self.open(found, readonly=readonly)

    def exists(self, session_id: str) -> bool:
        return self.backend.exists(check_session_id(session_id))

    def delete(self, session_id: str) -> None:
        self.backend.delete(check_session_id(session_id))

    def meta(self, session_id: str) -> dict[str, Any]:
        return self.backend.read_meta(check_session_id(session_id))

    # --- listing -----------------------------------------------------------------
    def info(self, session_id: str) -> SessionInfo:
        meta = meta_with_defaults(self.backend.read_meta(session_id))
        stats = self.backend.stats(session_id)
        updated = meta.get("updated_at")
        touched = format_timestamp(stats.updated_ns)
        if _canonical_time(updated):
            latest = max(updated, touched)  # same fixed format: strings order as times
        else:
            try:
                meta_ns = parse_timestamp(updated) if isinstance(updated, str) else 0
            except ValueError:
                meta_ns = 0
            latest = format_timestamp(max(meta_ns, stats.updated_ns))
        return SessionInfo(
            id=session_id,
            title=meta.get("title") or meta.get("name"),
            name=meta.get("name"),
            working_dir=meta.get("working_dir"),
            model=meta.get("model"),
            created_at=meta.get("created_at"),
            updated_at=latest,
            summary=meta.get("summary") or None,
            status=meta.get("status") or "active",
            archived=bool(meta.get("archived")),
            event_count=stats.event_count,
            meta=meta,
        )

    def list(self, *, archived: bool = False) -> list[SessionInfo]:
        """Sessions, most recently updated first; archived ones only if asked.

        Reads session.json and one stat per session, never the event logs.
        A malformed session is left out (see ``broken()``, ``fsck``)."""
        rows, _ = self.scan()
        if not archived:
            rows = [r for r in rows if not r.archived]
        return rows

    def scan(self) -> tuple[list[SessionInfo], list[BrokenSession]]:
        rows: list[SessionInfo] = []
        broken: list[BrokenSession] = []
        for sid in self.backend.session_ids():
            try:
                rows.append(self.info(sid))
            except SessionNotFound:
                continue  # deleted between listing the directory and reading it
            except AgentlogError as exc:
                broken.append(BrokenSession(sid, str(exc)))
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows, broken

    def broken(self) -> list[BrokenSession]:
        return self.scan()[1]

    # --- checking ----------------------------------------------------------------
    def fsck(self, session_id: str | None = None) -> list[Problem]:
        """Verify one session or all; returns every problem found (changes nothing)."""
        ids = ([check_session_id(session_id)] if session_id is not None
               else sorted(self.backend.session_ids()))
        problems: list[Problem] = []
        for sid in ids:
            if not self.backend.exists(sid):
                raise SessionNotFound(sid)
            try:
                problems += self.backend.verify(sid)
            except CorruptionError as exc:
                problems.append(Problem(sid, exc.path, exc.offset, exc.reason))
        return problems

    def repair(self, session_id: str) -> list[str]:
        """Quarantine damaged bytes and rebuild derived files (explicit; see fsck)."""
        repair = getattr(self.backend, "repair", None)
        if repair is None:
            return []
        return repair(check_session_id(session_id))

    def __repr__(self) -> str:
        return f"<Store {self.home} durability={self.durability}>"
