"""The derived full-text index: SQLite FTS5 through the standard library.

The index is never a source of truth. It holds, per session, how many of
the session's index entries it has read and the id of the last one; a
catch-up reads only the entries after that (opening the session read-only,
so a running writer is never blocked) and a session whose count went down
or whose last indexed event moved (a repair, a delete and re-create) is
indexed again from scratch. Deleting the index file loses nothing: the
next search rebuilds it.

SQLite runs in WAL mode, so searches read while a catch-up writes, and
each catch-up transaction holds the write lock for one batch only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import threading
import urllib.parse
import warnings
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import AgentlogError, CorruptionError, SessionNotFound
from ..recordtext import record_text, strip_terminal_codes
from .query import SearchError, SearchWarning
from .scripts import split
from .transaction import write
from .upgrade import UPGRADED_IN_PLACE, upgrade

if TYPE_CHECKING:  # annotations only: the store imports this package to offer search()
    from ..store import Store

__all__ = ["SCHEMA_VERSION", "SearchIndex", "IndexStats", "forget_session", "index_location", "open_index", "tag"]

#: 3: a character of the scripts written without spaces (``scripts.py``)
#: is a word of its own; 4: a terminal's escape codes are not part of the
#: text (``recordtext.strip_terminal_codes``); 5: the text of thinking
#: parts is (``recordtext.reasoning_text``); 6: so is each character of
#: Thai, Lao, Myanmar and Khmer, and a word ends at an emoji
#: (``symbols.py``); 7: a word ends there also after a decomposed accent
#: (``cafe\u0301🤖``, ``cafe\u0301数据``); 8: a text is read composed
#: (``composed.py``: Korean written by macOS). An index of version 2 to 7
#: is upgraded in place (``upgrade.py``).
SCHEMA_VERSION = "8"
#: Events written per transaction: short enough that another process's
#: catch-up waits milliseconds, long enough to amortize the commit.
BATCH = 500
#: Kinds left out of the index: a ``state`` checkpoint after every step
#: repeats the same todo list and would crowd every result page.
SKIPPED_KINDS = frozenset({"state"})
_BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS info(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions(
    session_id TEXT PRIMARY KEY,
    indexed INTEGER NOT NULL,
    last_event_id TEXT NOT NULL,
    updated_ns INTEGER NOT NULL,
    working_dir TEXT
);
CREATE TABLE IF NOT EXISTS events(
    rowid INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    event_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    role TEXT,
    timestamp TEXT NOT NULL,
    UNIQUE(session_id, event_id)
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(text, tags, tokenize='unicode61 remove_diacritics 2');
"""

ProgressFn = Callable[[int, int], None]


def tag(field: str, value: str) -> str:
    """The token that stands for ``field`` = ``value`` in the ``tags``
    column (s: session, k: kind, r: role). Hex keeps any id one token.

    Filters are FTS5 terms rather than joins, so FTS5 intersects them with
    the words inside its own index: a common word filtered to one session
    costs about what the session's events cost, not every match."""
    return field + value.encode("utf-8").hex()


_memory_lock = threading.Lock()
_memory: dict[str, sqlite3.Connection] = {}


@dataclass(frozen=True, slots=True)
class IndexStats:
    """What one catch-up did."""

    sessions: int
    sessions_indexed: int
    events_added: int
    sessions_removed: int
    #: (session id, error) of each session that could not be read: it is
    #: left out of the results (what was indexed before stays) until fixed.
    failed: tuple[tuple[str, str], ...] = ()
    #: (session id, event id, error) of each payload (a blob) that could not
    #: be read: that event alone is left out; the rest of its session is in.
    unreadable: tuple[tuple[str, str, str], ...] = ()


def index_location(home: str) -> str | None:
    """Where the index of the store at ``home`` lives; None: in memory.

    A directory home keeps it in ``<home>/search/fts.sqlite3``; an
    ``sqlite:///path`` store beside its database; a ``memory:`` store (and
    any other URL) in memory, for the life of the process."""
    if home.startswith("memory:"):
        return None
    if home.startswith("sqlite:///"):
        return home[len("sqlite:///") - 1 :] + ".search.sqlite3"
    if "://" in home:
        return None
    return os.path.join(home, "search", "fts.sqlite3")


def _connect(path: str) -> sqlite3.Connection:
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    # Created 0600 like every file of the store (it holds the same text);
    # SQLite gives its -wal and -shm files the database file's mode.
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    # A derived index needs no fsync per commit: after a power loss it is
    # rebuilt or caught up from the log, which is durable.
    conn.execute("PRAGMA synchronous=NORMAL")
    return conn


def _setup(conn: sqlite3.Connection, store: Store) -> None:
    """Create the tables; an index of an earlier version is brought to this
    one in place (``upgrade``), and one of any other version is dropped and
    rebuilt by the next catch-up (it is derived, so nothing is lost)."""
    with write(conn):
        has_info = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='info'").fetchone()
        row = conn.execute("SELECT value FROM info WHERE key='schema'").fetchone() if has_info else None
        if row is not None and row[0] not in (SCHEMA_VERSION, *UPGRADED_IN_PLACE):
            for table in ("fts", "events", "sessions", "info"):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            row = None
        for statement in filter(str.strip, _SCHEMA.split(";")):
            conn.execute(statement)
        if row is None:
            conn.execute("INSERT OR REPLACE INTO info VALUES('schema', ?)", (SCHEMA_VERSION,))
        found = row[0] if row is not None else None
    if found in UPGRADED_IN_PLACE:
        upgrade(conn, store, found, SCHEMA_VERSION)


@contextlib.contextmanager
def open_index(store: Store) -> Iterator[SearchIndex]:
    """The index of ``store``, created if missing; closed after use."""
    path = index_location(store.home)
    if path is None:
        with _memory_lock:
            conn = _memory.get(store.home)
            if conn is None:
                conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
                _setup(conn, store)
                _memory[store.home] = conn
                # The index dies with the store's backend, so a new memory
                # store never inherits an old one's index.
                weakref.finalize(store.backend, _memory.pop, store.home, None)
        with _memory_lock:
            yield SearchIndex(store, conn)
        return
    writable = True
    try:
        conn = _connect(path)
    except (OSError, sqlite3.Error) as exc:
        if not _cannot_write(exc):
            raise SearchError(f"cannot open the search index {path}: {exc}") from exc
        conn, writable = _read_only(path, exc)
    try:
        if writable:
            _setup(conn, store)
        yield SearchIndex(store, conn, writable=writable)
    except sqlite3.Error as exc:
        # A full disk or an I/O error while reading or catching up (what was
        # committed batch by batch stays): one line, not an internal error.
        raise SearchError(
            f"cannot use the search index {path}: {exc} (it is derived from the sessions: "
            "deleting it loses nothing, and the next search rebuilds it)"
        ) from None
    finally:
        conn.close()


def _cannot_write(exc: BaseException) -> bool:
    """Whether opening the index failed for want of write permission (a
    read-only home, a read-only file system), rather than damage."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS)
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def _read_only(path: str, why: BaseException) -> tuple[sqlite3.Connection, bool]:
    """The index as it is, read-only (it may lag the store: a warning says
    so); without one of this schema, an index built in memory for this
    process, so a read-only store can still be searched. With whether
    the connection may be written (the one in memory may)."""
    reason = getattr(why, "strerror", None) or str(why)
    if os.path.exists(path):
        # immutable: no -shm or -wal to create beside it (the directory may
        # be read-only too); a WAL not yet checkpointed is left unread.
        uri = "file:" + urllib.parse.quote(os.fsencode(path)) + "?immutable=1"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            row = conn.execute("SELECT value FROM info WHERE key='schema'").fetchone()
        except sqlite3.Error:
            row = None
        else:
            if row is not None and row[0] in (SCHEMA_VERSION, *UPGRADED_IN_PLACE):
                # An older index that would be upgraded in place is searched
                # as it is too: rebuilding it in memory on every search cost
                # far more than the texts it lacks.
                older = (
                    f"; it is of an earlier version ({row[0]}), which misses some text (reasoning, script, colour)"
                    if row[0] != SCHEMA_VERSION
                    else ""
                )
                warnings.warn(
                    SearchWarning(
                        f"the search index {path} cannot be written ({reason}): searching it as it is, "
                        f"which may miss what was stored since it was last updated{older}"
                    ),
                    stacklevel=4,
                )
                return conn, False
            conn.close()
    warnings.warn(
        SearchWarning(
            f"the search index {path} cannot be written ({reason}): searching without it "
            "(an index is built in memory for this search)"
        ),
        stacklevel=4,
    )
    conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    return conn, True


def drop(store: Store) -> None:
    """Delete the index of ``store`` (it is derived: nothing is lost)."""
    path = index_location(store.home)
    if path is None:
        with _memory_lock:
            conn = _memory.pop(store.home, None)
        if conn is not None:
            conn.close()
        return
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)


def forget_session(store: Store, session_id: str) -> None:
    """Drop a deleted session from the store's index, if the store has one.

    A session deleted and made again under its id with as many events and
    the same dates (a bundle imported over it: the ``--redact``ed one, to
    replace a session that held a secret) looked unchanged to the next
    catch-up, and search went on showing the deleted text. An index that
    cannot be written now is caught up as before; a search says so."""
    path = index_location(store.home)
    if path is None:
        with _memory_lock:
            conn = _memory.get(store.home)
            if conn is not None:
                with write(conn):
                    SearchIndex(store, conn)._forget(session_id)
        return
    if not os.path.exists(path):
        return  # no index yet: the first search indexes what is there
    try:
        with open_index(store) as index:
            if index.writable:
                with write(index.conn):
                    index._forget(session_id)
    except SearchError as exc:
        # The session is deleted; only the derived index lags: said, not raised.
        warnings.warn(
            SearchWarning(
                f"session {session_id} is deleted, but the search index still holds it: {exc}; "
                "'agentlog search --reindex' rebuilds the index"
            ),
            stacklevel=3,
        )


class SearchIndex:
    """One open connection to a store's index. A read-only one (the index
    of a store this process may not write) is searched as it is: catching
    up and optimizing do nothing."""

    def __init__(self, store: Store, conn: sqlite3.Connection, *, writable: bool = True) -> None:
        self.store = store
        self.conn = conn
        self.writable = writable

    def optimize(self) -> None:
        """Merge the index's segments into one (after a bulk build): fewer
        segments to consult per query."""
        if not self.writable:
            return
        with write(self.conn):
            self.conn.execute("INSERT INTO fts(fts) VALUES('optimize')")

    # --- catching up -------------------------------------------------------------
    def catch_up(self, progress: ProgressFn | None = None) -> IndexStats:
        """SearchIndex what was appended since the last catch-up, in every session.

        Unchanged sessions cost one stat each (the event count and time
        the backend keeps without reading events); no event log is opened."""
        if not self.writable:
            return IndexStats(0, 0, 0, 0)  # searched as it is (open_index warned)
        ids = sorted(self.store.backend.session_ids())
        known = {
            row[0]: (row[1], row[2], row[3])
            for row in self.conn.execute("SELECT session_id, indexed, last_event_id, updated_ns FROM sessions")
        }
        present = set(ids)
        removed = [sid for sid in known if sid not in present]
        for sid in removed:
            with write(self.conn):
                self._forget(sid)
        touched = added = 0
        failed: list[tuple[str, str]] = []
        unreadable: list[tuple[str, str, str]] = []
        for n, sid in enumerate(ids):
            if progress is not None:
                progress(n, len(ids))
            try:
                stats = self.store.backend.stats(sid)
            except SessionNotFound:
                continue  # deleted since it was listed
            except AgentlogError as exc:
                failed.append((sid, str(exc)))
                continue
            seen = known.get(sid)
            if seen is not None and seen[0] == stats.event_count and seen[2] == stats.updated_ns:
                continue
            try:
                count = self._index_session(sid, seen, stats.updated_ns, unreadable)
            except SessionNotFound:
                continue  # deleted since it was listed
            except AgentlogError as exc:
                # What was committed batch by batch stays; the rest of this
                # session is retried on the next catch-up.
                failed.append((sid, str(exc)))
                continue
            touched += 1
            added += count
        if progress is not None:
            progress(len(ids), len(ids))
        for sid, reason in failed:
            warnings.warn(
                SearchWarning(f"search cannot read session {sid}: {reason}; see 'agentlog fsck {sid}'"),
                stacklevel=3,
            )
        for sid, eid, reason in unreadable:
            warnings.warn(
                SearchWarning(
                    f"search left out event {eid} of session {sid}: its payload cannot be read: {reason}; "
                    f"see 'agentlog fsck {sid}', then 'agentlog search --reindex'"
                ),
                stacklevel=3,
            )
        return IndexStats(len(ids), touched, added, len(removed), tuple(failed), tuple(unreadable))

    def _forget(self, sid: str) -> None:
        self.conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM events WHERE session_id=?)", (sid,))
        self.conn.execute("DELETE FROM events WHERE session_id=?", (sid,))
        self.conn.execute("DELETE FROM sessions WHERE session_id=?", (sid,))

    def _index_session(
        self, sid: str, seen: tuple[int, str, int] | None, updated_ns: int, unreadable: list[tuple[str, str, str]]
    ) -> int:
        with self.store.open(sid, readonly=True) as session:
            entries = session.entries()
            # An imported session keeps the directory it was recorded in as
            # source_cwd (a working_dir would make it what --continue opens).
            working_dir = session.meta.get("working_dir") or session.meta.get("source_cwd")
            if not isinstance(working_dir, str):
                working_dir = None  # a hand-edited session.json must not break every search
            start = 0
            if seen is not None:
                indexed, last = seen[0], seen[1]
                still_there = (indexed == 0 and last == "") or (
                    0 < indexed <= len(entries) and entries[indexed - 1].id == last
                )
                if still_there:
                    start = indexed
                else:  # repaired, or deleted and made again: start over
                    with write(self.conn):
                        self._forget(sid)
            added = 0
            for lo in range(start, max(len(entries), start + 1), BATCH):
                batch = entries[lo : lo + BATCH]
                with write(self.conn):
                    for entry in batch:
                        if entry.kind in SKIPPED_KINDS:
                            continue
                        stored = session.event(entry.id)  # a damaged line fails the session, as it did
                        try:
                            event = session.resolve(stored)
                        except CorruptionError as exc:  # one lost blob: index the rest, and say so
                            unreadable.append((sid, entry.id, str(exc)))
                            continue
                        text = strip_terminal_codes(record_text(event.kind, event.record))
                        if not text:
                            continue
                        cur = self.conn.execute(
                            "INSERT OR IGNORE INTO events(session_id, event_id, kind, role, "
                            "timestamp) VALUES(?,?,?,?,?)",
                            (sid, event.id, event.kind, event.role, event.timestamp),
                        )
                        if cur.rowcount == 1:
                            tags = [tag("s", sid), tag("k", event.kind)]
                            if event.role:
                                tags.append(tag("r", event.role))
                            self.conn.execute(
                                "INSERT INTO fts(rowid, text, tags) VALUES(?,?,?)",
                                (cur.lastrowid, split(text), " ".join(tags)),
                            )
                            added += 1
                    done = lo + len(batch)
                    last_id = entries[done - 1].id if done else ""
                    self.conn.execute(
                        "INSERT INTO sessions VALUES(?,?,?,?,?) ON CONFLICT(session_id) DO "
                        "UPDATE SET indexed=excluded.indexed, last_event_id=excluded.last_event_id,"
                        " updated_ns=excluded.updated_ns, working_dir=excluded.working_dir "
                        "WHERE excluded.indexed >= sessions.indexed",
                        (sid, done, last_id, updated_ns if done == len(entries) else 0, working_dir),
                    )
            return added
