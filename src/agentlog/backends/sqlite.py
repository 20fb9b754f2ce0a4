"""The SQLite backend: every session of a store in one database file.

Written against the seam and nothing else, as the template for SQL
backends: a commit is one transaction whose UPDATE of HEAD is the
compare-and-swap; a path is one recursive query; the writer's lease is the
same flock lease the file backend uses, in a directory beside the
database. WAL mode, so readers never block the writer; ``synchronous=FULL``
under durability ``full``, ``NORMAL`` under ``off``. The file opens in ``sqlite3`` and Datasette.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote

import orjson

from .._lease import Lease, acquire
from ..errors import (
    BlobIntegrityError,
    CorruptionError,
    EventNotFound,
    HeadConflict,
    ReadOnlySession,
    RecoveryWarning,
    SessionExists,
    SessionNotFound,
    StorageError,
    UnknownBackend,
)
from ..event import NIL_ID, Event, check_session_id, digest_of
from .base import (
    Backend,
    Commit,
    IndexEntry,
    ListingRow,
    Problem,
    SessionStats,
    SessionStorage,
    Ticket,
    check_durability,
)
from .checks import (
    check_rows,
)
from .registry import local_path
from .sqlrows import (
    EVENTS_PAGE,
    event_from_row,
    listing_row,
    paged_events,
    paged_scan,
    read_path,
    session_value,
    stored_meta,
)

__all__ = ["SqliteBackend"]

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, meta TEXT NOT NULL, head TEXT NOT NULL, last_id TEXT NOT NULL,
  event_count INTEGER NOT NULL, updated_ns INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL, id TEXT NOT NULL, seq INTEGER NOT NULL, parent_id TEXT NOT NULL,
  branch_from TEXT, kind TEXT NOT NULL, role TEXT, timestamp TEXT NOT NULL, record TEXT, digest TEXT,
  PRIMARY KEY (session_id, id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS events_in_order ON events (session_id, seq);
CREATE INDEX IF NOT EXISTS events_by_parent ON events (session_id, parent_id);
CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS sidecars (
  session_id TEXT NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL,
  PRIMARY KEY (session_id, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS breadcrumbs (working_dir TEXT PRIMARY KEY, session_id TEXT NOT NULL) WITHOUT ROWID;
"""
_COLUMNS = "id, parent_id, kind, role, timestamp, record, digest, branch_from"


def _blobs_in_a_rowid_table(db: sqlite3.Connection) -> None:
    """Move the blobs of a store made before 2026-12-06 out of a WITHOUT
    ROWID table, once. Such a table keeps each row in its key's B-tree,
    and a key lookup that passes a 50 MB blob reads all of it to compare:
    500 appends of 20 KB tool outputs took 10 s once three 50 MB outputs
    were stored (0.24 s before them), and a 465 MB session took six
    minutes to copy in. A rowid table keeps the data apart from the
    digest's index. The queries are the same either way, so an older
    agentlog reads the moved table as it read the old one."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'blobs'").fetchone()
    if row is None or "WITHOUT ROWID" not in str(row[0]).upper():
        return
    db.execute("CREATE TABLE blobs_moved (digest TEXT PRIMARY KEY, data BLOB NOT NULL)")
    db.execute("INSERT INTO blobs_moved (digest, data) SELECT digest, data FROM blobs")
    db.execute("DROP TABLE blobs")
    db.execute("ALTER TABLE blobs_moved RENAME TO blobs")


_ANCESTORS = f"""
WITH RECURSIVE walk (depth, {_COLUMNS}) AS (
  SELECT 1, {_COLUMNS} FROM events WHERE session_id = :s AND id = :start
  UNION ALL
  SELECT walk.depth + 1, {", ".join("e." + c for c in _COLUMNS.split(", "))}
  FROM walk JOIN events e ON e.session_id = :s AND e.id = walk.parent_id
  WHERE walk.depth < :limit AND walk.kind IS NOT :kind AND walk.id IS NOT :stop)
SELECT {_COLUMNS} FROM walk ORDER BY depth"""
#: Every event after ``seq``, in ``seq`` order (``events()``: keyset paging).
_EVENTS = f"SELECT seq, {_COLUMNS} FROM events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?"
#: A session's events from one id down, newest id first: one range scan of
#: the primary key (``read_path`` follows the rest of a long path through it).
_PATH_SCAN = f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT ?"
_PATH_SCAN_BELOW = f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND id < ? ORDER BY id DESC LIMIT ?"


class SqliteSessionStorage(SessionStorage):
    def __init__(self, backend: SqliteBackend, session_id: str, lease: Lease | None) -> None:
        self.session_id = session_id
        self.readonly = lease is None
        self.warnings: list[str] = []
        self._db = backend
        self._lease = lease

    def commit(self, commit: Commit) -> Ticket:
        if self.readonly:
            raise ReadOnlySession(self.session_id)
        try:
            self._db.apply(self.session_id, commit)
        except (HeadConflict, StorageError) as exc:
            return Ticket(exc)
        return Ticket.done()

    def _one(self, sql: str, *args: Any) -> Any:
        row = self._db.query(sql, (self.session_id, *args), one=True)
        return None if row is None else row[0]

    def _session(self, column: str) -> Any:
        return session_value(
            self._db.query(f"SELECT {column} FROM sessions WHERE id = ?", (self.session_id,), one=True), self.session_id
        )

    def head(self) -> str:
        head: str = self._session("head") or NIL_ID
        return head

    def last_id(self) -> str:
        last: str = self._session("last_id") or ""
        return last

    def get(self, event_id: str) -> Event:
        row = self._db.query(
            f"SELECT {_COLUMNS} FROM events WHERE session_id = ? AND id = ?",
            (self.session_id, event_id),
            one=True,
        )
        if row is None:
            self._session("1")
            raise EventNotFound(event_id, self.session_id)
        return event_from_row(row)

    def ancestors(
        self,
        from_id: str,
        *,
        limit: int | None = None,
        until_kind: str | None = None,
        until_id: str | None = None,
    ) -> list[Event]:
        def page(upto: str, inclusive: bool, size: int) -> list[tuple[Any, ...]]:
            rows: list[tuple[Any, ...]] = self._db.query(
                _PATH_SCAN if inclusive else _PATH_SCAN_BELOW, (self.session_id, upto, size)
            )
            return rows

        def scan(start: str) -> Iterator[Sequence[Any]]:
            return paged_scan(page, start)

        def walk(start: str, bound: int) -> list[tuple[Any, ...]]:
            args = {"s": self.session_id, "start": start, "kind": until_kind, "stop": until_id, "limit": bound}
            rows: list[tuple[Any, ...]] = self._db.query(_ANCESTORS, args)
            return rows

        return read_path(self, from_id, limit, until_kind, until_id, scan=scan, walk=walk, where=self._db.path)

    def contains(self, event_id: str) -> bool:
        return self._one("SELECT 1 FROM events WHERE session_id = ? AND id = ?", event_id) is not None

    def has_children(self, event_id: str) -> bool:
        return self._one("SELECT 1 FROM events WHERE session_id = ? AND parent_id = ? LIMIT 1", event_id) is not None

    def entries(self) -> Iterator[IndexEntry]:
        rows = self._db.query(
            "SELECT id, parent_id, branch_from, kind, role, timestamp, digest FROM events"
            " WHERE session_id = ? ORDER BY seq",
            (self.session_id,),
        )
        if not rows:
            self._session("1")
        return iter([IndexEntry(*row) for row in rows])

    def events(self) -> Iterator[Event]:
        def fetch(after: int) -> list[tuple[Any, ...]]:
            rows: list[tuple[Any, ...]] = self._db.query(_EVENTS, (self.session_id, after, EVENTS_PAGE))
            if len(rows) < EVENTS_PAGE:
                # The last page: the session must still be there, or a delete
                # while it was read would end the events early, in silence.
                self._session("1")
            return rows

        return paged_events(fetch)

    def event_count(self) -> int:
        count: int = self._session("event_count") or 0
        return count

    def get_blob(self, digest: str) -> bytes:
        data = self._db.query("SELECT data FROM blobs WHERE digest = ?", (digest,), one=True)
        if data is None or digest_of(data[0]) != digest:
            raise BlobIntegrityError(self._db.path, None, f"blob {digest} is missing or damaged")
        blob: bytes = data[0]
        return blob

    def read_meta(self) -> dict[str, Any]:
        return self._db.read_meta(self.session_id)

    def write_meta(self, meta: dict[str, Any]) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE sessions SET meta = ? WHERE id = ?", (orjson.dumps(meta).decode(), self.session_id))

    def set_updated_ns(self, updated_ns: int) -> None:
        with self._db.transaction() as db:
            db.execute("UPDATE sessions SET updated_ns = ? WHERE id = ?", (updated_ns, self.session_id))

    def read_sidecar(self, name: str) -> bytes | None:
        data: bytes | None = self._one("SELECT data FROM sidecars WHERE session_id = ? AND name = ?", name)
        return data

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        with self._db.transaction() as db:
            if data is None:
                db.execute("DELETE FROM sidecars WHERE session_id = ? AND name = ?", (self.session_id, name))
            else:
                db.execute("INSERT OR REPLACE INTO sidecars VALUES (?, ?, ?)", (self.session_id, name, data))

    def sidecar_names(self) -> list[str]:
        rows = self._db.query("SELECT name FROM sidecars WHERE session_id = ? ORDER BY name", (self.session_id,))
        return [row[0] for row in rows]

    def refresh(self) -> None:
        """Every read asks the database: there is nothing to catch up, but a
        session another process deleted is gone, not empty."""
        if self._one("SELECT 1 FROM sessions WHERE id = ?") is None:
            raise SessionNotFound(self.session_id)

    def close(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None


class SqliteBackend(Backend):
    """All sessions in the database at ``path`` (created on first use)."""

    def __init__(self, path: str, *, durability: str = "full") -> None:
        check_durability(durability)
        # The real path: the lease's lock files sit beside the database, so
        # two names of one file (a symlink) must find the same lock files, or
        # a writer through each name would both hold "the" lease. SQLite
        # itself resolves symlinks to name its WAL; the URL follows too, so
        # writers in one process share one timeline whichever name they used.
        self.path = os.path.realpath(path)
        # from_url unquotes: a "?" or "%" in the name survives, and so do bytes that are not UTF-8
        self.url = "sqlite://" + quote(os.fsencode(self.path))
        self.durability = durability
        self._locks = self.path + ".locks"
        self._mutex = threading.RLock()
        with self._errors():
            os.makedirs(self._locks, mode=0o700, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA busy_timeout = 10000")
            (mode,) = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
            if str(mode).lower() != "wal":
                # SQLite answers with the mode it kept (a file system
                # without shared memory refuses WAL); readers would then
                # block the writer, and the durability argument below is
                # WAL's: say so rather than run on something else.
                self._conn.close()
                raise StorageError("open", self.path, None, f"SQLite would not use WAL mode here (it kept {mode!r})")
            # ``off`` is NORMAL, not OFF: in WAL mode NORMAL skips the sync
            # of each commit (a power loss may lose the last ones) but never
            # corrupts the file, where OFF can; ``fsck --repair`` has nothing
            # to repair a corrupt SQLite file with.
            self._conn.execute(f"PRAGMA synchronous = {'FULL' if durability == 'full' else 'NORMAL'}")
        try:
            self._create_schema()
        except UnknownBackend:
            self._conn.close()
            raise

    def _create_schema(self) -> None:
        with self.transaction() as db:
            for statement in _SCHEMA.split(";"):  # executescript would commit mid-transaction
                if statement.strip():
                    db.execute(statement)
            row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            elif row[0] != SCHEMA_VERSION:
                # Another agentlog's tables (a newer one, or a hand edit):
                # reading them as these would be silently wrong.
                raise UnknownBackend(
                    f"{self.path}: its schema version is {row[0]!r}, and this agentlog reads version "
                    f"{SCHEMA_VERSION} (a store written by a newer agentlog: upgrade to open it)"
                )
        try:
            with self.transaction() as db:
                _blobs_in_a_rowid_table(db)
        except StorageError as exc:
            # A full disk (the move copies the blobs before it drops the old
            # table) or a read-only file: the store works as it was, only
            # slower with large blobs; the next open tries again.
            warnings.warn(
                RecoveryWarning(
                    f"{self.path}: its blobs could not be moved to a rowid table ({exc}); "
                    "the store works as it is, and the next open tries again"
                ),
                stacklevel=2,
            )

    @classmethod
    def from_url(cls, url: str, *, durability: str = "full", **options: Any) -> SqliteBackend:
        """``sqlite:///absolute/path.db`` or ``sqlite:relative/path.db``."""
        path = local_path("sqlite", url)
        if not path:
            raise UnknownBackend(f"{url!r} names no database file")
        return cls(path, durability=durability, **options)

    # --- one place where the driver's errors become ours ----------------------------
    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.IntegrityError:
            raise  # a constraint: the caller knows what it means
        except sqlite3.DatabaseError as exc:
            text = str(exc)
            if "malformed" in text or "not a database" in text:
                raise CorruptionError(self.path, None, text) from None
            raise StorageError("sqlite", self.path, getattr(exc, "sqlite_errorcode", None), text) from None
        except OSError as exc:
            raise StorageError("open", self.path, exc.errno, exc.strerror or str(exc)) from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._mutex, self._errors():
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def query(self, sql: str, args: Any = (), *, one: bool = False) -> Any:
        with self._mutex, self._errors():
            cursor = self._conn.execute(sql, args)
            return cursor.fetchone() if one else cursor.fetchall()

    def apply(self, session_id: str, commit: Commit, db: sqlite3.Connection | None = None) -> None:
        """One commit in one transaction; HEAD moves by compare-and-swap."""
        blobs = [(d, b if isinstance(b, bytes) else b.source.get_blob(d)) for d, b in commit.blobs.items()]
        if db is None:
            with self.transaction() as tx:
                return self.apply(session_id, commit, tx)
        row = db.execute("SELECT head, event_count FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise SessionNotFound(session_id)
        if row[0] != commit.expected_head:
            raise HeadConflict(session_id, commit.expected_head, row[0])
        db.executemany("INSERT OR IGNORE INTO blobs VALUES (?, ?)", blobs)
        db.executemany(
            f"INSERT INTO events (session_id, seq, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    session_id,
                    row[1] + i,
                    e.id,
                    e.parent_id,
                    e.kind,
                    e.role,
                    e.timestamp,
                    None if e.payload is None else e.payload.decode(),
                    e.digest,
                    e.branch_from,
                )
                for i, e in enumerate(commit.events)
            ],
        )
        last = commit.events[-1].id if commit.events else None
        db.execute(
            "UPDATE sessions SET head = ?, event_count = event_count + ?, updated_ns = ?,"
            " last_id = coalesce(?, last_id) WHERE id = ?",
            (commit.head, len(commit.events), time.time_ns(), last, session_id),
        )
        return None

    def lease(self, session_id: str) -> Lease:
        return acquire(self._locks, check_session_id(session_id))

    # --- sessions ------------------------------------------------------------------
    def create(self, session_id: str, meta: dict[str, Any], initial: Commit | None = None) -> SessionStorage:
        lease = self.lease(session_id)
        try:
            with self.transaction() as db:
                try:
                    db.execute(
                        "INSERT INTO sessions VALUES (?, ?, ?, '', 0, ?)",
                        (session_id, orjson.dumps(meta).decode(), NIL_ID, time.time_ns()),
                    )
                except sqlite3.IntegrityError:
                    raise SessionExists(session_id) from None
                if initial is not None:
                    self.apply(session_id, initial, db)
        except BaseException:
            lease.release()
            raise
        return SqliteSessionStorage(self, session_id, lease)

    def open(self, session_id: str, *, readonly: bool) -> SessionStorage:
        if not self.exists(session_id):
            raise SessionNotFound(session_id)
        return SqliteSessionStorage(self, session_id, None if readonly else self.lease(session_id))

    def exists(self, session_id: str) -> bool:
        return self.query("SELECT 1 FROM sessions WHERE id = ?", (check_session_id(session_id),), one=True) is not None

    def session_ids(self) -> Iterator[str]:
        return iter([row[0] for row in self.query("SELECT id FROM sessions")])

    def read_meta(self, session_id: str) -> dict[str, Any]:
        row = self.query("SELECT meta FROM sessions WHERE id = ?", (check_session_id(session_id),), one=True)
        if row is None:
            raise SessionNotFound(session_id)
        return stored_meta(session_id, row[0], self.path)

    def listing(self) -> Iterator[ListingRow]:
        rows = self.query("SELECT id, meta, event_count, updated_ns FROM sessions")
        return iter([listing_row(r[0], r[1], r[2], r[3], self.path) for r in rows])

    def stats(self, session_id: str) -> SessionStats:
        row = self.query("SELECT event_count, updated_ns FROM sessions WHERE id = ?", (session_id,), one=True)
        if row is None:
            raise SessionNotFound(session_id)
        return SessionStats(row[0], row[1])

    def delete(self, session_id: str) -> None:
        if not self.exists(session_id):
            raise SessionNotFound(session_id)
        with self.lease(session_id), self.transaction() as db:
            digests = db.execute(
                "SELECT DISTINCT digest FROM events WHERE session_id = ? AND digest IS NOT NULL",
                (session_id,),
            ).fetchall()
            for table, key in (("events", "session_id"), ("sidecars", "session_id"), ("sessions", "id")):
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (session_id,))
            db.executemany(
                "DELETE FROM blobs WHERE digest = ?1 AND NOT EXISTS (SELECT 1 FROM events WHERE digest = ?1)",
                digests,
            )

    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT OR REPLACE INTO breadcrumbs VALUES (?, ?)",
                (os.path.abspath(working_dir), check_session_id(session_id)),
            )

    def get_breadcrumb(self, working_dir: str) -> str | None:
        row = self.query(
            "SELECT session_id FROM breadcrumbs WHERE working_dir = ?",
            (os.path.abspath(working_dir),),
            one=True,
        )
        return None if row is None else str(row[0])

    def verify(self, session_id: str) -> list[Problem]:
        problems = [
            Problem(session_id, self.path, None, f"integrity_check: {row[0]}", repairable=False)
            for row in self.query("PRAGMA quick_check")
            if row[0] != "ok"
        ]
        return problems + check_rows(self, SqliteSessionStorage(self, session_id, None), self.path)

    def repair(self, session_id: str) -> list[str]:
        return []  # SQLite recovers its own journal; damage beyond it is reported by verify

    def close(self) -> None:
        with self._mutex:
            self._conn.close()
