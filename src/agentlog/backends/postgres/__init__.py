"""The PostgreSQL backend: the same timeline on a database many machines share.

Written against the seam like the SQLite backend: a commit is one
transaction that checks the writer's lease and moves HEAD by
compare-and-swap (``UPDATE ... WHERE head = expected``); a path is one
recursive query; listing reads the sessions table alone; every commit
sends ``NOTIFY`` (ids only) so readers elsewhere follow without polling.

URL: ``postgresql://user@host:port/db?schema=agentlog&lease=advisory&lease_ttl=15``
(``schema``, ``lease`` and ``lease_ttl`` are ours; the rest goes to libpq).
Needs the ``postgres`` extra (psycopg 3 and psycopg_pool).
"""

from __future__ import annotations

import math
import os
import time
import warnings
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool

from ...errors import (
    CorruptionError,
    SearchError,
    SearchWarning,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StorageError,
    UnknownBackend,
)
from ...event import NIL_ID, check_session_id
from ..base import (
    Backend,
    Commit,
    ListingRow,
    Problem,
    SearchHit,
    SessionStats,
    SessionStorage,
    check_durability,
)
from ..checks import (
    check_rows,
)
from ..sqlrows import (
    listing_row,
    stored_meta,
)
from .lease import LEASE_MODES, PostgresLease, held_here
from .schema import migrate
from .search import search_sql, to_hits, unfolded_case
from .storage import META as _META
from .storage import PostgresSessionStorage, channel_of, commit_rows, insert_commit, meta_columns

__all__ = ["PostgresBackend"]

Conn = psycopg.Connection[tuple[Any, ...]]


def _configure_for(schema: str, durability: str) -> Callable[[Conn], None]:
    """Set up each new connection: our schema, and the durability asked for.
    (A closure, not a method: the pool must not keep its backend alive.)"""

    def configure(conn: Conn) -> None:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        if durability == "off":
            conn.execute("SET synchronous_commit TO off")

    return configure


#: PostgreSQL's longest identifier in bytes (NAMEDATALEN - 1).
_MAX_IDENTIFIER = 63


def _seconds(text: str) -> float | str:
    """A URL's ``lease_ttl``: a number, or the text itself for the check to refuse."""
    try:
        return float(text)
    except ValueError:
        return text


def _split_url(url: str, options: dict[str, Any]) -> str:
    """The libpq DSN of a store URL; agentlog's own parameters (schema,
    lease, lease_ttl) go into ``options`` unless given there already."""
    parts = urlsplit(url)
    ours = {"schema", "lease", "lease_ttl"}
    # Blank values kept: "?schema=" dropped would mean the default schema,
    # a store other than the one asked for.
    query = parse_qsl(parts.query, keep_blank_values=True)
    seen: set[str] = set()
    for key, value in query:
        if key not in ours:
            continue
        if not value:
            raise UnknownBackend(f"{key}= is empty in the store URL: give a value, or leave {key} out")
        if key in seen:
            raise UnknownBackend(f"{key} is given twice in the store URL")
        seen.add(key)
        options.setdefault(key, _seconds(value) if key == "lease_ttl" else value)
    # The rest goes to libpq as written: re-encoding it (urlencode) wrote a
    # space as "+", which libpq does not decode, so ``options=-c%20x%3Dy``
    # reached the server as "-c+x=y" and every connection was refused.
    rest = [part for part in parts.query.split("&") if part and unquote_plus(part.partition("=")[0]) not in ours]
    return urlunsplit(parts._replace(query="&".join(rest)))


def _shown_url(dsn: str, schema: str) -> str:
    """The store's URL as shown to people: user and host, never a password."""
    parts = urlsplit(dsn)
    shown = parts._replace(netloc=parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(shown._replace(netloc=user + shown.netloc, query=urlencode({"schema": schema})))


_DEFAULT_LEASE, _DEFAULT_LEASE_TTL = "advisory", 15.0


def _check_encoding(conn: psycopg.Connection[Any], url: str) -> None:
    """Refuse a database not encoded in UTF-8 before anything is written
    to it: under ``SQL_ASCII`` the store opened and its first write failed
    with "operator does not exist: uuid = bytea", and another encoding
    cannot hold every text an agent writes."""
    row = conn.execute("SHOW server_encoding").fetchone()
    value = row[0] if row else "unknown"
    # under SQL_ASCII psycopg gives text back as bytes
    encoding = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    if encoding != "UTF8":
        raise StorageError(
            "postgresql",
            url,
            None,
            f"the database is encoded {encoding}; agentlog stores text as UTF-8 and needs a database"
            " created with ENCODING 'UTF8'",
        )


def _check_options(schema: object, lease: object, lease_ttl: object) -> None:
    """UnknownBackend for a schema, lease mode or lease_ttl no store can have."""
    if not isinstance(schema, str) or not schema:
        raise UnknownBackend(f"schema={schema!r}: give the name of a schema")
    if len(schema.encode()) > _MAX_IDENTIFIER or "\x00" in schema:
        # PostgreSQL would cut a longer name to its first 63 bytes without
        # a word, and two stores would share the schema they both cut to.
        raise UnknownBackend(f"schema={schema!r}: a schema name is at most {_MAX_IDENTIFIER} bytes, without NUL")
    if lease not in LEASE_MODES:
        raise UnknownBackend(f"lease={lease!r}: use one of {', '.join(LEASE_MODES)}")
    if not (isinstance(lease_ttl, int | float) and math.isfinite(lease_ttl) and lease_ttl > 0):
        # 0 or less: a row lease expired the moment it was taken (every
        # commit refused) and its renewer spun without pause.
        raise UnknownBackend(f"lease_ttl={lease_ttl!r}: give a number of seconds above 0")


class PostgresBackend(Backend):
    """Sessions in a PostgreSQL schema (created and migrated on first use)."""

    def __init__(
        self,
        dsn: str,
        *,
        durability: str = "full",
        schema: str = "agentlog",
        lease: str = _DEFAULT_LEASE,
        lease_ttl: float = _DEFAULT_LEASE_TTL,
        pool_size: int = 4,
    ) -> None:
        check_durability(durability)
        _check_options(schema, lease, lease_ttl)
        self.dsn = dsn
        self.schema = schema
        self.durability = durability
        self.lease_mode = lease
        self.lease_ttl = lease_ttl
        self.url = _shown_url(dsn, schema)
        with self.errors():
            with psycopg.connect(dsn, autocommit=True) as conn:
                _check_encoding(conn, self.url)
                migrate(conn, schema)
                self._unfolded_case = unfolded_case(conn)
            self._pool: ConnectionPool[Conn] = ConnectionPool(
                dsn,
                min_size=0,  # a writer reads on its own connection: open pooled ones only when asked
                max_size=pool_size,
                max_idle=60,
                open=True,
                configure=_configure_for(schema, durability),
                kwargs={"autocommit": True, "application_name": f"agentlog:{schema}"},
            )
        # A Store dropped without close() must not keep its connections: the
        # pool's own threads keep the pool alive, so close it with its owner.
        weakref.finalize(self, self._pool.close)

    @classmethod
    def from_url(cls, url: str, *, durability: str = "full", **options: Any) -> PostgresBackend:
        dsn = _split_url(url, options)
        return cls(dsn, durability=durability, **options)

    @classmethod
    def missing_at(cls, url: str) -> str | None:
        """The store's URL (password hidden) when its schema holds no store
        yet: opening would create it, which a read-only command must not."""
        options: dict[str, Any] = {}
        dsn = _split_url(url, options)
        schema = options.get("schema", "agentlog")
        # A URL that could never open is refused here too: "no store there"
        # would send its user to look for a store, not at the typo.
        _check_options(schema, options.get("lease", _DEFAULT_LEASE), options.get("lease_ttl", _DEFAULT_LEASE_TTL))
        shown = _shown_url(dsn, str(schema))
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT 1 FROM information_schema.tables"
                    " WHERE table_schema = %s AND table_name = 'schema_migrations'",
                    (schema,),
                ).fetchone()
        except psycopg.Error as exc:
            raise StorageError("postgresql", shown, None, str(exc).strip() or type(exc).__name__) from None
        return None if row is not None else shown

    # --- one place where the driver's errors become ours ----------------------------
    @contextmanager
    def errors(self) -> Iterator[None]:
        try:
            yield
        except (psycopg.errors.DataCorrupted, psycopg.errors.IndexCorrupted) as exc:
            raise CorruptionError(self.url, None, str(exc).strip()) from None
        except psycopg.Error as exc:
            raise StorageError("postgresql", self.url, None, str(exc).strip() or type(exc).__name__) from None

    @contextmanager
    def connection(self) -> Iterator[Conn]:
        with self.errors(), self._pool.connection() as conn:
            yield conn

    def query(self, statement: str, args: Any = (), *, one: bool = False) -> Any:
        """One read (or idempotent write) on a pooled connection. A pooled
        connection the server ended since (a restart ends them all at once)
        is discarded by the pool and the query re-run on the next one, up to
        the pool's size plus one: after a restart the first query meets every
        dead connection in turn, and must not fail because of them."""
        attempts = self._pool.max_size + 1
        for attempt in range(1, attempts + 1):
            used: Conn | None = None
            try:
                with self._pool.connection() as conn:
                    used = conn
                    cursor = conn.execute(statement, args)
                    return cursor.fetchone() if one else cursor.fetchall()
            except psycopg.OperationalError:
                # Only a dead connection is worth another try; a query the
                # server refused or cancelled fails here, typed.
                if used is None or not used.broken or attempt == attempts:
                    with self.errors():
                        raise
            except psycopg.Error:
                with self.errors():
                    raise
        raise AssertionError("unreachable")

    def writer_connection(self, role: str = "writer") -> Conn:
        """A dedicated connection for one writer's lifetime (its lease lives on
        it), named so an operator sees who holds what in pg_stat_activity."""
        with self.errors():
            conn: Conn = psycopg.connect(self.dsn, autocommit=True, application_name=f"agentlog:{self.schema}:{role}")
            _configure_for(self.schema, self.durability)(conn)
            return conn

    def _lease(self, session_id: str, *, exists: bool) -> PostgresLease:
        """A writer's connection holding the session's lease. The session must
        exist (or, for ``exists=False``, not yet): checked first on the same
        connection, so a writer process needs just this one connection."""
        conn = self.writer_connection(f"writer:{check_session_id(session_id)}")
        try:
            with self.errors():
                found = conn.execute("SELECT 1 FROM sessions WHERE id = %s", (session_id,)).fetchone() is not None
                if found and not exists:
                    raise self._taken(conn, session_id)
                if exists and not found:
                    raise SessionNotFound(session_id)
                return PostgresLease(conn, self.schema, session_id, self.lease_mode, self.lease_ttl)
        except BaseException:
            conn.close()
            raise

    def _taken(self, conn: Conn, session_id: str) -> SessionExists | SessionLocked:
        """Why a session cannot be created under an id that exists: as on
        the file and SQLite backends, which take the lease before they look,
        ``SessionLocked`` while a writer in another process holds it, else
        ``SessionExists`` (this process's own writer included: its second
        lease would be refused, as a file lease is not)."""
        try:
            PostgresLease(conn, self.schema, session_id, self.lease_mode, self.lease_ttl).release()
        except SessionLocked as exc:
            if not held_here(exc.holder):
                return exc
        return SessionExists(session_id)

    # --- sessions ------------------------------------------------------------------
    def create(self, session_id: str, meta: dict[str, Any], initial: Commit | None = None) -> SessionStorage:
        # The initial events' rows before the transaction opens: making them
        # inside it left it idle past lease_ttl for a large tool output, and
        # the server ended the connection (a fork or copy of it failed).
        rows = commit_rows(session_id, initial) if initial is not None else None
        lease = self._lease(session_id, exists=False)
        try:
            # The lease's lock: a row lease's renewer shares this connection.
            with lease.lock, self.errors(), lease.conn.transaction():
                lease.guard(lease.conn)
                try:
                    with lease.conn.transaction():
                        lease.conn.execute(
                            "INSERT INTO sessions (id, meta_text, meta, head, updated_ns) VALUES (%s, %s, %s, %s, %s)",
                            (session_id, *meta_columns(meta), NIL_ID, time.time_ns()),
                        )
                except psycopg.errors.UniqueViolation:
                    raise SessionExists(session_id) from None
                if initial is not None:
                    insert_commit(lease.conn, session_id, initial, channel_of(self.schema, session_id), None, rows)
        except BaseException:
            lease.release()
            raise
        return PostgresSessionStorage(self, session_id, lease)

    def open(self, session_id: str, *, readonly: bool) -> SessionStorage:
        if readonly:
            if not self.exists(session_id):
                raise SessionNotFound(session_id)
            return PostgresSessionStorage(self, session_id, None)
        return PostgresSessionStorage(self, session_id, self._lease(session_id, exists=True))

    def exists(self, session_id: str) -> bool:
        return self.query("SELECT 1 FROM sessions WHERE id = %s", (check_session_id(session_id),), one=True) is not None

    def session_ids(self) -> Iterator[str]:
        return iter([str(row[0]) for row in self.query("SELECT id FROM sessions")])

    def read_meta(self, session_id: str) -> dict[str, Any]:
        row = self.query(f"SELECT {_META} FROM sessions WHERE id = %s", (check_session_id(session_id),), one=True)
        if row is None:
            raise SessionNotFound(session_id)
        return stored_meta(session_id, row[0], self.url)

    def stats(self, session_id: str) -> SessionStats:
        row = self.query("SELECT event_count, updated_ns FROM sessions WHERE id = %s", (session_id,), one=True)
        if row is None:
            raise SessionNotFound(session_id)
        return SessionStats(int(row[0]), int(row[1]))

    def listing(self) -> Iterator[ListingRow]:
        """Every session's metadata and counts in one query."""
        rows = self.query(f"SELECT id, {_META}, event_count, updated_ns FROM sessions")
        return iter([listing_row(str(r[0]), r[1], r[2], r[3], self.url) for r in rows])

    def delete(self, session_id: str) -> None:
        lease = self._lease(session_id, exists=True)
        try:
            with lease.lock, self.errors(), lease.conn.transaction():
                lease.guard(lease.conn)
                lease.check(lease.conn)
                digests = [
                    str(row[0])
                    for row in lease.conn.execute(
                        "SELECT DISTINCT digest FROM events WHERE session_id = %s AND digest IS NOT NULL ORDER BY 1",
                        (session_id,),
                    )
                ]
                lease.conn.execute("DELETE FROM sessions WHERE id = %s", (session_id,))  # cascades
                if digests:
                    # Lock the blobs first (waiting for any commit elsewhere that
                    # is adding an event naming one: it row-locks them too), and
                    # only then look for events that still name them, in a new
                    # statement whose snapshot sees those commits. One DELETE
                    # with NOT EXISTS would judge by a snapshot taken before the
                    # wait, and delete a blob that a just-committed event needs.
                    lease.conn.execute(
                        "SELECT 1 FROM blobs WHERE digest = ANY(%s) ORDER BY digest FOR UPDATE", (digests,)
                    )
                    lease.conn.execute(
                        "DELETE FROM blobs b WHERE b.digest = ANY(%s)"
                        " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.digest = b.digest)",
                        (digests,),
                    )
        finally:
            lease.release()

    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        self.query(
            "INSERT INTO breadcrumbs VALUES (%s, %s, now()) ON CONFLICT (working_dir)"
            " DO UPDATE SET session_id = EXCLUDED.session_id, updated_at = now() RETURNING 1",
            (os.path.abspath(working_dir), check_session_id(session_id)),
            one=True,
        )

    def get_breadcrumb(self, working_dir: str) -> str | None:
        row = self.query(
            "SELECT session_id FROM breadcrumbs WHERE working_dir = %s",
            (os.path.abspath(working_dir),),
            one=True,
        )
        return None if row is None else str(row[0])

    def verify(self, session_id: str) -> list[Problem]:
        return check_rows(self, PostgresSessionStorage(self, session_id, None), self.url)

    def search(
        self,
        query: str,
        *,
        session: str | None = None,
        kind: str | None = None,
        role: str | None = None,
        since: str | None = None,
        cwd: str | None = None,
        limit: int = 20,
    ) -> list[SearchHit] | None:
        """PostgreSQL's own full-text index answers ``agentlog search`` (no derived file)."""
        if not query.strip():
            raise SearchError("an empty query matches nothing: give a word")
        statement, args = search_sql(
            query,
            session=session,
            kind=kind,
            role=role,
            since=since,
            cwd=os.path.abspath(cwd) if cwd else None,
            limit=limit,
        )
        hits = to_hits(self.query(statement, args), query)
        if self._unfolded_case is not None:
            warnings.warn(SearchWarning(self._unfolded_case), stacklevel=2)
            self._unfolded_case = None  # once per store: every search would repeat it
        return hits

    def repair(self, session_id: str) -> list[str]:
        return []  # the server's WAL recovers its own crashes; damage beyond is reported by verify

    def close(self) -> None:
        self._pool.close()
