"""Store: where sessions are created, opened, listed and checked."""

from __future__ import annotations

import builtins
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Unpack

from ._writers import WRITERS
from .backends.base import (
    DEFAULT_BLOB_THRESHOLD,
    MAX_BLOB_THRESHOLD,
    Backend,
    Commit,
    Problem,
    SessionStats,
    SessionStorage,
)
from .backends.memory import MemoryBackend
from .backends.registry import open_backend
from .errors import (
    CorruptionError,
    InvalidEvent,
    InvalidOption,
    NothingToContinue,
    RecoveryWarning,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StorageError,
)
from .event import (
    NIL_ID,
    Event,
    IdGenerator,
    check_new_session_id,
    check_session_id,
    format_timestamp,
    parse_timestamp,
)
from .lifecycle import LAZY_IDS, check_meta, meta_with_defaults
from .search import SearchHit, SearchOptions
from .search import search as search_sessions
from .session import Session
from .timeline import Timeline, stage_existing

__all__ = ["SCHEMA_VERSION", "BrokenSession", "SessionInfo", "Store", "default_home", "default_location"]

SCHEMA_VERSION = 1


def default_location() -> str:
    """``$AGENTLOG_STORE`` (a store URL), else ``default_home()``."""
    return os.environ.get("AGENTLOG_STORE") or default_home()


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
    return (
        isinstance(value, str) and len(value) == 30 and value[19] == "." and value.endswith("Z") and value[:4].isdigit()
    )


def _now() -> str:
    return format_timestamp(time.time_ns())


def _text(value: Any) -> str | None:
    """A text field of session.json as ``SessionInfo`` types it: the API
    refuses other types (``check_meta``), but the file can be edited by
    hand, and one odd value must not break every listing."""
    return value if isinstance(value, str) else None


def _info(session_id: str, stored: dict[str, Any], stats: SessionStats) -> SessionInfo:
    """One listing row. Listing builds one per session (10,000 in a large
    store), so the row is filled in directly: the frozen dataclass's
    ``__init__`` stores each field through ``object.__setattr__``, which
    was a quarter of this function's time."""
    meta = meta_with_defaults(stored)
    get = meta.get
    updated = get("updated_at")
    touched = format_timestamp(stats.updated_ns)
    if isinstance(updated, str) and _canonical_time(updated):
        latest = max(updated, touched)  # same fixed format: strings order as times
    else:
        try:
            meta_ns = parse_timestamp(updated) if isinstance(updated, str) else 0
        except ValueError:
            meta_ns = 0
        latest = format_timestamp(max(meta_ns, stats.updated_ns))
    name = _text(get("name"))
    info = _new_info(SessionInfo)
    info.__dict__.update(
        id=session_id,
        title=_text(get("title")) or name,
        name=name,
        working_dir=_text(get("working_dir")),
        model=_text(get("model")),
        created_at=_text(get("created_at")),
        updated_at=latest,
        summary=_text(get("summary")) or None,
        status=_text(get("status")) or "active",
        archived=get("archived") is True,
        event_count=stats.event_count,
        meta=meta,
    )
    return info


_new_info = object.__new__


class Store:
    """All sessions of one store, named by a URL or a directory.

    ``Store()`` opens ``$AGENTLOG_STORE`` or else the file store at
    ``default_home()``; ``Store("sqlite:///path/agentlog.db")``,
    ``Store("memory:")`` or ``Store("/some/dir")`` name others, and
    ``Store(backend=...)`` takes a backend object. ``blob_threshold`` is
    the size above which a payload is kept apart as a blob (core policy,
    the same on every backend); other keywords go to the backend."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        durability: str = "full",
        *,
        backend: Backend | None = None,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        **backend_options: Any,
    ) -> None:
        # Checked before a backend is opened, so a bad value changes nothing.
        if type(blob_threshold) is not int or not 0 <= blob_threshold <= MAX_BLOB_THRESHOLD:
            raise InvalidOption(
                f"blob_threshold must be a whole number of bytes from 0 to {MAX_BLOB_THRESHOLD:,}, "
                f"not {blob_threshold!r}"
            )
        if backend is None:
            location = os.fspath(home) if home is not None else default_location()
            backend = open_backend(location, durability=durability, **backend_options)
        self.backend = backend
        self.blob_threshold = blob_threshold

    @classmethod
    def memory(cls, **options: Any) -> Store:
        """A store that lives in this process's memory only (tests, scratch)."""
        return cls("memory:", **options)

    @property
    def url(self) -> str:
        return self.backend.url

    @property
    def home(self) -> str:
        """The store's directory where it has one (file backend), else its URL."""
        return self.backend.home or self.backend.url

    @property
    def durability(self) -> str:
        return self.backend.durability

    # --- sessions ----------------------------------------------------------------
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

    def _initial(
        self, events: Sequence[Event], source: SessionStorage | None, head: str | None = None
    ) -> Commit | None:
        if not events and head in (None, NIL_ID):
            return None
        staged, blobs = stage_existing(events, source, self.blob_threshold)
        if head is None:
            head = staged[-1].id
        elif head != NIL_ID and head not in {e.id for e in staged}:
            # HEAD must name one of the events the session starts with: a
            # HEAD outside them is a session whose active path is broken.
            raise InvalidEvent(f"HEAD {head} is not one of the {len(staged)} events the session is created with")
        return Commit(tuple(staged), head, NIL_ID, blobs)

    def create_timeline(
        self,
        session_id: str,
        meta: dict[str, Any],
        events: Sequence[Event] = (),
        source: SessionStorage | None = None,
        head: str | None = None,
    ) -> Timeline:
        """Create a session on the backend with its first events (kept
        verbatim, in one atomic commit), register its writer, and leave its
        working directory's breadcrumb. ``Store.create`` and the lazy gate
        use it; HEAD ends on ``head`` (default: the last event)."""
        storage = self.backend.create(session_id, meta, self._initial(events, source, head))
        timeline = WRITERS.adopt(self.url, session_id, Timeline(storage, blob_threshold=self.blob_threshold))
        try:
            self._leave_breadcrumb(session_id, meta.get("working_dir"))
        except BaseException:
            WRITERS.release(self.url, session_id, timeline)
            raise
        return timeline

    def _timeline(self, session_id: str) -> Timeline:
        """A writer's core over a freshly opened storage (its lease released
        again if the core cannot start on it)."""
        storage = self.backend.open(session_id, readonly=False)
        try:
            return Timeline(storage, blob_threshold=self.blob_threshold)
        except BaseException:
            storage.close()
            raise

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

    # --- --continue ------------------------------------------------------------------
    def _leave_breadcrumb(self, session_id: str, working_dir: Any) -> None:
        """Remember the session as its directory's latest. A breadcrumb is a
        cache of what listing finds: failing to write one is said, never
        fatal (it comes after a commit, which must not then look failed)."""
        if not isinstance(working_dir, str) or not working_dir:
            return  # none, or a hand-edited session.json's odd value: nothing to remember
        try:
            self.backend.put_breadcrumb(working_dir, session_id)
        except StorageError as exc:
            warnings.warn(
                RecoveryWarning(f"cannot record {session_id} as the latest session of {working_dir}: {exc}"),
                stacklevel=3,
            )

    def latest_for(self, working_dir: str) -> str | None:
        """The id of the latest session of ``working_dir``, if any."""
        working_dir = os.path.abspath(working_dir)
        try:
            crumb = self.backend.get_breadcrumb(working_dir)
        except (CorruptionError, StorageError) as exc:
            # A breadcrumb is a cache of what listing can find; say it is
            # damaged or unreadable, then find the session the slow way.
            warnings.warn(RecoveryWarning(f"{exc}; looking the session up by listing"), stacklevel=2)
            crumb = None
        # Archived sessions are hidden from --continue as from ls.
        if crumb is not None and self.backend.exists(crumb) and not self._archived(crumb):
            return crumb
        for row in self.list():
            if row.working_dir == working_dir:
                return row.id
        return None

    def _archived(self, session_id: str) -> bool:
        try:
            return self.backend.read_meta(session_id).get("archived") is True
        except CorruptionError:
            return False  # listing reports it; the breadcrumb still names it

    def find_moved(self, working_dir: str) -> list[SessionInfo]:
        """Sessions whose working directory no longer exists and whose last
        path component matches ``working_dir``'s: a project that was moved."""
        name = os.path.basename(os.path.abspath(working_dir))
        return [
            row
            for row in self.list(archived=True)
            if row.working_dir and not os.path.isdir(row.working_dir) and os.path.basename(row.working_dir) == name
        ]

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

    def exists(self, session_id: str) -> bool:
        return self.backend.exists(check_session_id(session_id))

    def _not_open_here(self, session_id: str) -> None:
        if WRITERS.is_open(self.url, check_session_id(session_id)):
            # Its writer would lose its next acknowledged append.
            raise SessionLocked(session_id, f"pid {os.getpid()} (this process)")

    def delete(self, session_id: str) -> None:
        self._not_open_here(session_id)
        self.backend.delete(session_id)

    def meta(self, session_id: str) -> dict[str, Any]:
        return self.backend.read_meta(check_session_id(session_id))

    # --- listing -----------------------------------------------------------------
    def info(self, session_id: str) -> SessionInfo:
        """One listing row, without reading any event payload."""
        return _info(session_id, self.backend.read_meta(check_session_id(session_id)), self.backend.stats(session_id))

    def list(self, *, archived: bool = False) -> builtins.list[SessionInfo]:
        """Sessions, most recently updated first; archived ones only if asked.

        Reads session.json and one stat per session, never the event logs.
        A malformed session is left out (see ``broken()``, ``fsck``)."""
        rows, _ = self.scan()
        if not archived:
            rows = [r for r in rows if not r.archived]
        return rows

    def scan(self) -> tuple[builtins.list[SessionInfo], builtins.list[BrokenSession]]:
        rows: builtins.list[SessionInfo] = []
        broken: builtins.list[BrokenSession] = []
        for row in self.backend.listing():
            if row.error is not None or row.stats is None:
                broken.append(BrokenSession(row.session_id, str(row.error)))
            else:
                rows.append(_info(row.session_id, row.meta, row.stats))
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return rows, broken

    def broken(self) -> builtins.list[BrokenSession]:
        return self.scan()[1]

    # --- searching ---------------------------------------------------------------
    def search(self, query: str, **options: Unpack[SearchOptions]) -> builtins.list[SearchHit]:
        """Full-text search over every session, every branch and the history
        before compactions, best first (``agentlog.search.search`` has the
        options: ``session``, ``kind``, ``role``, ``since``, ``cwd``, ``limit``)."""
        return search_sessions(self, query, **options)

    # --- checking ----------------------------------------------------------------
    def fsck(self, session_id: str | None = None) -> builtins.list[Problem]:
        """Verify one session or all; returns every problem found (changes nothing)."""
        ids = [check_session_id(session_id)] if session_id is not None else sorted(self.backend.session_ids())
        problems: builtins.list[Problem] = []
        if session_id is None:
            # What listing reports but no session holds (a file where a
            # session's directory should be) is a problem too.
            known = set(ids)
            problems += [Problem(b.id, self.home, None, b.reason) for b in self.broken() if b.id not in known]
        for sid in ids:
            if not self.backend.exists(sid):
                raise SessionNotFound(sid)
            try:
                problems += self.backend.verify(sid)
            except CorruptionError as exc:
                problems.append(Problem(sid, exc.path, exc.offset, exc.reason))
            except StorageError as exc:
                # The OS refused a read (a directory where a chunk should be,
                # EIO): report it for this session, and check the others.
                problems.append(Problem(sid, exc.path or sid, None, f"cannot be checked: {exc}"))
        return problems

    def repair(self, session_id: str) -> builtins.list[str]:
        """Quarantine damaged bytes and rebuild derived files (explicit; see fsck)."""
        self._not_open_here(session_id)
        if not self.backend.exists(session_id):
            raise SessionNotFound(session_id)
        return self.backend.repair(session_id)

    def close(self) -> None:
        """Release the backend's connections (sessions stay stored)."""
        self.backend.close()

    def __repr__(self) -> str:
        return f"<Store {self.url} durability={self.durability}>"
