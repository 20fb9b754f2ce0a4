"""One session on PostgreSQL: commits, reads, and waiting for a writer."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import psycopg
from psycopg import sql

from ...errors import (
    BlobIntegrityError,
    EventNotFound,
    HeadConflict,
    LeaseLost,
    ReadOnlySession,
    SessionNotFound,
    StorageError,
)
from ...event import NIL_ID, Event, digest_of
from ...recordtext import record_text, strip_terminal_codes
from ...search.composed import composed
from ...search.diacritics import index_words
from ..base import (
    Commit,
    IndexEntry,
    SessionStorage,
    Ticket,
)
from ..sqlrows import (
    EVENTS_PAGE,
    event_from_row,
    paged_events,
    paged_scan,
    read_path,
    session_value,
    stored_meta,
)
from .lease import PostgresLease
from .textparts import index_parts

if TYPE_CHECKING:  # the backend module imports this one; the name is for annotations only
    from . import PostgresBackend

__all__ = ["META", "PostgresSessionStorage", "channel_of", "insert_commit", "meta_columns"]

Conn = psycopg.Connection[tuple[Any, ...]]
#: The metadata as written (``meta_text``, since migration 0004), or as
#: jsonb kept it for a session whose metadata no agentlog since has written.
META = "coalesce(meta_text, meta::json)"
_COLUMNS = "id::text, parent_id::text, kind, role, ts, record::text, digest, branch_from::text"
#: The whole path in one recursive query. Every column rides in the walk
#: itself (as in the SQLite backend): joining the walk back to ``events``
#: afterwards made the planner hash the session's every row, 630 ms for the
#: newest 20 of 100,000 events.
_ANCESTORS = f"""
WITH RECURSIVE walk (depth, uid, puid, k, id, parent_id, kind, role, ts, record, digest, branch_from) AS (
  SELECT 1, id, parent_id, kind, {_COLUMNS} FROM events WHERE session_id = %(s)s AND id = %(start)s
  UNION ALL
  SELECT walk.depth + 1, e.id, e.parent_id, e.kind, {", ".join("e." + c for c in _COLUMNS.split(", "))}
  FROM walk JOIN events e ON e.session_id = %(s)s AND e.id = walk.puid
  WHERE walk.depth < %(limit)s AND walk.k IS DISTINCT FROM %(kind)s
    AND walk.uid IS DISTINCT FROM %(stop)s::uuid)
SELECT id, parent_id, kind, role, ts, record, digest, branch_from FROM walk ORDER BY depth"""
#: A session's events from one id down, newest id first, a page at a time:
#: a backward scan of the primary key (``read_path`` follows the rest of a
#: long path through it; a uuid orders as its canonical text does). The
#: order names ``events.id``: a bare ``id`` is the SELECT's ``id::text``,
#: which made PostgreSQL sort every row below the start as text.
_PATH_SCAN = "SELECT {} FROM events WHERE session_id = %s AND id {} %s::uuid ORDER BY events.id DESC LIMIT %s"
_PATH_SCAN_FROM, _PATH_SCAN_BELOW = _PATH_SCAN.format(_COLUMNS, "<="), _PATH_SCAN.format(_COLUMNS, "<")


def searchable_text(kind: str, payload: bytes) -> str:
    """What search indexes of a record: its text as the SQLite index and the
    exports read it (``recordtext``), without a terminal's escape codes, a NUL (which PostgreSQL text refuses)
    shown as the symbol for one, as the CLI shows it: dropping it glued the
    words on either side into one ("hello\\x00nul" could not be found by "nul").
    Composed (``search.composed``), as the SQLite index reads a text."""
    return composed(strip_terminal_codes(record_text(kind, orjson.loads(payload))).replace("\x00", "\u2400"))


#: A search text and the words indexed of it where they differ (``index_words``).
Indexed = tuple[str | None, str | None]


def _indexed(text: str) -> tuple[Indexed, list[Indexed]]:
    """(the row's own search text and words, its parts'): a text too long
    for one ``tsvector`` is held in parts alone (``textparts``), its row's
    text NULL."""
    parts = index_parts(text)
    if len(parts) == 1:
        return (text, index_words(text)), []
    return (None, None), [(part, index_words(part)) for part in parts]


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def meta_columns(meta: dict[str, Any]) -> tuple[str, str]:
    """The metadata as the two columns hold it: ``meta_text`` (json, the exact
    document, what reads return) and ``meta`` (jsonb, for queries; jsonb
    refuses NUL characters, so they are left out of that copy only)."""
    return orjson.dumps(meta).decode(), orjson.dumps(_without_nul(meta)).decode()


def channel_of(schema: str, session_id: str) -> str:
    """The NOTIFY channel of one session (an identifier of at most 63 bytes)."""
    return "agentlog_" + hashlib.sha256(f"{schema}/{session_id}".encode()).hexdigest()[:40]


class CommitRows(NamedTuple):
    """The rows of one commit, made before its transaction opens
    (``commit_rows``)."""

    blob_rows: list[tuple[str, bytes, str | None, str | None]]
    blob_parts: list[dict[str, object]]
    event_rows: list[tuple[object, ...]]
    event_parts: list[tuple[str, str, int, str | None, str | None]]


def commit_rows(session_id: str, commit: Commit) -> CommitRows:
    """Every row of ``commit``, its records parsed and their search text
    made. Made before a transaction opens: the server waits idle in it
    meanwhile, and the lease's guard ends a transaction idle for
    lease_ttl (one 50 MB tool output takes about 30 s to make)."""
    blobs = [(d, b if isinstance(b, bytes) else b.source.get_blob(d)) for d, b in commit.blobs.items()]
    kinds = {e.digest: e.kind for e in commit.events if e.digest}  # a blob is indexed as its event's kind
    blob_rows: list[tuple[str, bytes, str | None, str | None]] = []
    blob_parts: list[dict[str, object]] = []
    for digest, data in sorted(blobs):
        blob_text, pieces = _indexed(searchable_text(kinds.get(digest, "custom"), data))
        blob_rows.append((digest, data, *blob_text))
        if pieces:
            blob_parts.append({"d": digest, "t": [t for t, _ in pieces], "w": [w for _, w in pieces]})
    event_rows: list[tuple[object, ...]] = []
    event_parts: list[tuple[str, str, int, str | None, str | None]] = []
    for e in commit.events:
        record: str | None = None
        text: Indexed = (None, None)
        parts: list[Indexed] = []
        if e.payload is not None:
            record = e.payload.decode()
            text, parts = _indexed(searchable_text(e.kind, e.payload))
        event_rows.append((e.id, e.parent_id, e.kind, e.role, e.timestamp, record, e.digest, e.branch_from, *text))
        event_parts.extend((session_id, e.id, i, *part) for i, part in enumerate(parts))
    return CommitRows(blob_rows, blob_parts, event_rows, event_parts)


def insert_commit(
    conn: Conn,
    session_id: str,
    commit: Commit,
    channel: str,
    lease: PostgresLease | None,
    rows: CommitRows | None = None,
) -> None:
    """Apply one commit in one transaction, in two round trips (pipeline mode).

    First the lease check and HEAD's compare-and-swap (an UPDATE whose WHERE
    names the expected HEAD); then, if both held, the blobs, the events and
    the NOTIFY (delivered only if the transaction commits) with the COMMIT.
    A failed check raises, and the transaction rolls back whole. ``rows``:
    the commit's rows when the caller made them before a transaction of
    its own opened (``commit_rows``)."""
    n, last = len(commit.events), (commit.events[-1].id if commit.events else None)
    blob_rows, blob_parts, event_rows, event_parts = rows if rows is not None else commit_rows(session_id, commit)
    if lease is not None and lease.lost:
        raise LeaseLost(session_id, lease.lost)
    with conn.pipeline() as pipeline, conn.transaction():
        if lease is not None:
            lease.guard(conn)
        held = conn.execute(*lease.held_query()) if lease is not None else None
        swapped = conn.execute(
            "UPDATE sessions SET head = %s, event_count = event_count + %s, updated_ns = %s, updated_at = now(),"
            " last_id = coalesce(%s, last_id) WHERE id = %s AND head = %s RETURNING event_count",
            (commit.head, n, time.time_ns(), last, session_id, commit.expected_head),
        )
        pipeline.sync()
        if held is not None and held.fetchone() is None:
            assert lease is not None
            lease.lost = "another writer holds it now"
            raise LeaseLost(session_id, lease.lost)
        row = swapped.fetchone()
        if row is None:
            actual = conn.execute("SELECT head::text FROM sessions WHERE id = %s", (session_id,)).fetchone()
            if actual is None:
                raise SessionNotFound(session_id)
            raise HeadConflict(session_id, commit.expected_head, actual[0])
        first_seq = int(row[0]) - n
        with conn.cursor() as cur:
            if blob_rows:
                # DO UPDATE, not DO NOTHING: it row-locks a blob that is already
                # there until this commit ends, so a concurrent delete of another
                # session that shares it waits, then sees this commit's event and
                # keeps the blob (DO NOTHING locks nothing: the delete removed a
                # blob this commit's event names). Sorted, so that two commits
                # and a delete lock shared blobs in one order and never deadlock.
                cur.executemany(
                    "INSERT INTO blobs (digest, data, search_text, search_words) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (digest) DO UPDATE SET digest = blobs.digest",
                    blob_rows,
                )
            if event_rows:
                cur.executemany(
                    "INSERT INTO events (session_id, id, parent_id, kind, role, ts, record, digest, branch_from,"
                    " search_text, search_words, seq) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    [(session_id, *r, first_seq + i) for i, r in enumerate(event_rows)],
                )
            if blob_parts:
                # A blob stored already has its parts already, or, stored
                # whole under another rule, keeps its row's text alone. Its
                # parts may be another cut: the same bytes stored as another
                # kind, whose text differs. They are kept whole, never mixed
                # with these: a blob's parts go in at once, in one statement,
                # only if it has none (the blob's row lock above orders two
                # commits that store it).
                cur.executemany(
                    "INSERT INTO blob_parts (digest, part, search_text, search_words)"
                    " SELECT %(d)s, p.n - 1, p.t, p.w"
                    " FROM unnest(%(t)s::text[], %(w)s::text[]) WITH ORDINALITY p (t, w, n)"
                    " WHERE NOT EXISTS (SELECT 1 FROM blobs WHERE digest = %(d)s AND search_text IS NOT NULL)"
                    " AND NOT EXISTS (SELECT 1 FROM blob_parts WHERE digest = %(d)s) ON CONFLICT DO NOTHING",
                    blob_parts,
                )
            if event_parts:
                cur.executemany(
                    "INSERT INTO event_parts (session_id, id, part, search_text, search_words)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    event_parts,
                )
        conn.execute("SELECT pg_notify(%s, %s)", (channel, f"{last or ''} {commit.head}"))


class PostgresSessionStorage(SessionStorage):
    def __init__(self, backend: PostgresBackend, session_id: str, lease: PostgresLease | None) -> None:
        self.session_id = session_id
        self.readonly = lease is None
        self.warnings: list[str] = []
        self._db = backend
        self._lease = lease
        # The lease's own lock: its renewer uses the same connection.
        self._commit_lock = lease.lock if lease is not None else threading.Lock()
        self._listener: Conn | None = None

    def commit(self, commit: Commit) -> Ticket:
        if self._lease is None:
            raise ReadOnlySession(self.session_id)
        conn = self._lease.conn
        try:
            with self._commit_lock:
                insert_commit(conn, self.session_id, commit, channel_of(self._db.schema, self.session_id), self._lease)
        except (HeadConflict, LeaseLost, SessionNotFound) as exc:
            return Ticket(exc)
        except psycopg.Error as exc:
            if conn.broken or conn.closed:
                # The connection that holds the lease is gone: whatever the
                # server did with this transaction, this writer may commit no more.
                self._lease.lost = f"its connection ended: {str(exc).strip() or type(exc).__name__}"
                return Ticket(LeaseLost(self.session_id, self._lease.lost))
            # The server refused this commit (a limit, a lock wait) and rolled
            # it back whole; the lease and its connection are as they were.
            return Ticket(StorageError("commit", self._db.url, None, str(exc).strip()))
        return Ticket.done()

    def _query(self, statement: str, args: Any = (), *, one: bool = False) -> Any:
        """A read: a writer uses its own connection (one connection per agent
        process, and it reads its own commits); a reader uses the pool."""
        if self._lease is not None and not self._lease.lost:
            with self._commit_lock:
                try:
                    cursor = self._lease.conn.execute(statement, args)
                    return cursor.fetchone() if one else cursor.fetchall()
                except psycopg.OperationalError as exc:
                    # Its connection is gone, and with it the lease: read on.
                    self._lease.lost = f"its connection ended: {str(exc).strip() or type(exc).__name__}"
                except psycopg.Error:
                    with self._db.errors():
                        raise
        return self._db.query(statement, args, one=one)

    def _one(self, statement: str, *args: Any) -> Any:
        row = self._query(statement, (self.session_id, *args), one=True)
        return None if row is None else row[0]

    def _session(self, column: str) -> Any:
        return session_value(
            self._query(f"SELECT {column} FROM sessions WHERE id = %s", (self.session_id,), one=True), self.session_id
        )

    def head(self) -> str:
        head: str | None = self._session("head::text")
        return head or NIL_ID

    def last_id(self) -> str:
        last: str | None = self._session("last_id::text")
        return last or ""

    def get(self, event_id: str) -> Event:
        row = self._query(
            f"SELECT {_COLUMNS} FROM events WHERE session_id = %s AND id = %s",
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
            rows: list[tuple[Any, ...]] = self._query(
                _PATH_SCAN_FROM if inclusive else _PATH_SCAN_BELOW, (self.session_id, upto, size)
            )
            return rows

        def scan(start: str) -> Iterator[Sequence[Any]]:
            return paged_scan(page, start)

        def walk(start: str, bound: int) -> list[tuple[Any, ...]]:
            args = {"s": self.session_id, "start": start, "kind": until_kind, "stop": until_id, "limit": bound}
            rows: list[tuple[Any, ...]] = self._query(_ANCESTORS, args)
            return rows

        return read_path(self, from_id, limit, until_kind, until_id, scan=scan, walk=walk, where=self._db.url)

    def contains(self, event_id: str) -> bool:
        return self._one("SELECT 1 FROM events WHERE session_id = %s AND id = %s", event_id) is not None

    def has_children(self, event_id: str) -> bool:
        return self._one("SELECT 1 FROM events WHERE session_id = %s AND parent_id = %s LIMIT 1", event_id) is not None

    def entries(self) -> Iterator[IndexEntry]:
        rows = self._query(
            "SELECT id::text, parent_id::text, branch_from::text, kind, role, ts, digest"
            " FROM events WHERE session_id = %s ORDER BY seq",
            (self.session_id,),
        )
        if not rows:
            self._session("1")
        return iter([IndexEntry(*row) for row in rows])

    def events(self) -> Iterator[Event]:
        def fetch(after: int) -> list[tuple[Any, ...]]:
            statement = f"SELECT seq, {_COLUMNS} FROM events WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s"
            rows: list[tuple[Any, ...]] = self._query(statement, (self.session_id, after, EVENTS_PAGE))
            if len(rows) < EVENTS_PAGE:
                # The last page: the session must still be there, or a delete
                # while it was read would end the events early, in silence.
                self._session("1")
            return rows

        return paged_events(fetch)

    def event_count(self) -> int:
        count: int | None = self._session("event_count")
        return int(count or 0)

    def get_blob(self, digest: str) -> bytes:
        row = self._query("SELECT data FROM blobs WHERE digest = %s", (digest,), one=True)
        data = None if row is None else bytes(row[0])
        if data is None or digest_of(data) != digest:
            raise BlobIntegrityError(self._db.url, None, f"blob {digest} is missing or damaged")
        return data

    def read_meta(self) -> dict[str, Any]:
        # Through ``_query``: a writer reads on its own connection. The pool
        # would open a second server connection per agent process (idle for a
        # minute after), doubling what a fleet of writers holds.
        meta: Any = self._one(f"SELECT {META} FROM sessions WHERE id = %s")
        if meta is None:
            raise SessionNotFound(self.session_id)
        return stored_meta(self.session_id, meta, self._db.url)

    def write_meta(self, meta: dict[str, Any]) -> None:
        self._write(
            "UPDATE sessions SET meta_text = %s, meta = %s WHERE id = %s", (*meta_columns(meta), self.session_id)
        )

    def set_updated_ns(self, updated_ns: int) -> None:
        self._write("UPDATE sessions SET updated_ns = %s WHERE id = %s", (updated_ns, self.session_id))

    def _write(self, statement: str, args: tuple[Any, ...]) -> None:
        """A small write under the lease (metadata, sidecars)."""
        if self._lease is None:
            raise ReadOnlySession(self.session_id)
        conn = self._lease.conn
        try:
            with self._commit_lock, conn.transaction():
                self._lease.guard(conn)
                self._lease.check(conn)
                conn.execute(statement, args)
        except psycopg.OperationalError as exc:
            self._lease.lost = f"its connection ended: {str(exc).strip()}"
            raise LeaseLost(self.session_id, self._lease.lost) from None
        except psycopg.Error as exc:
            raise StorageError("write", self._db.url, None, str(exc).strip()) from None

    def read_sidecar(self, name: str) -> bytes | None:
        data = self._one("SELECT data FROM sidecars WHERE session_id = %s AND name = %s", name)
        return None if data is None else bytes(data)

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        if data is None:
            self._write("DELETE FROM sidecars WHERE session_id = %s AND name = %s", (self.session_id, name))
        else:
            self._write(
                "INSERT INTO sidecars VALUES (%s, %s, %s) ON CONFLICT (session_id, name)"
                " DO UPDATE SET data = EXCLUDED.data",
                (self.session_id, name, data),
            )

    def sidecar_names(self) -> list[str]:
        rows = self._query("SELECT name FROM sidecars WHERE session_id = %s ORDER BY name", (self.session_id,))
        return [str(row[0]) for row in rows]

    def refresh(self) -> None:
        """Every read asks the database: there is nothing to catch up, but a
        session another process deleted is gone, not empty."""
        if self._one("SELECT 1 FROM sessions WHERE id = %s") is None:
            raise SessionNotFound(self.session_id)

    def wait_for_commit(self, timeout: float) -> bool:
        """Block until a commit to this session is announced (LISTEN), or
        ``timeout`` seconds pass; True if one was. No polling."""
        if self._listener is None:
            # A commit between this call and the LISTEN taking effect would
            # never be announced to us: compare HEAD and count across it.
            before = (self.head(), self.event_count())
            listener = self._db.writer_connection("listener")
            try:
                with self._db.errors():
                    listener.execute(
                        sql.SQL("LISTEN {}").format(sql.Identifier(channel_of(self._db.schema, self.session_id)))
                    )
            except BaseException:
                listener.close()
                raise
            self._listener = listener
            if (self.head(), self.event_count()) != before:
                return True
        try:
            return any(True for _ in self._listener.notifies(timeout=timeout, stop_after=1))
        except psycopg.OperationalError:
            # The listening connection ended (the server restarted, or an
            # operator or a proxy dropped it). Unlike a writer's, it holds
            # nothing another process may have taken since: listen again on
            # the next call. Commits made meanwhile were announced to nobody,
            # so say "something may have changed" and let the caller re-read
            # (a server that is really down fails that read, typed).
            self._listener.close()
            self._listener = None
            return True
        except psycopg.Error:
            with self._db.errors():
                raise

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._lease is not None:
            self._lease.release()
            self._lease = None
