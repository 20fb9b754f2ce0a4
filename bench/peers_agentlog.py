"""agentlog as a peer: one adapter, four backends (file, sqlite, postgresql, memory).

A location is a directory for file and sqlite, a PostgreSQL schema on
``AGENTLOG_BENCH_PG`` (default the test server), and a named in-process
store for memory. Builds use durability ``off`` (the same bytes, no
syncs); every timed append uses ``full``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from itertools import islice
from typing import Any

from agentlog import Store
from agentlog.event import NIL_ID
from agentlog.summarize import empty_structured

from .peers_data import COMPACTION, Ev
from .peers_peer import Peer, Writer, batched, dir_bytes

PG_URL = os.environ.get("AGENTLOG_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/test")


def pg_reachable() -> str | None:
    """None when the server answers, else why not."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (the postgres extra)"
    try:
        with psycopg.connect(PG_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        return f"{PG_URL} is not reachable ({str(exc).strip().splitlines()[0]})"
    return None


def pg_drop(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def pg_analyze(schema: str) -> None:
    """Gather the planner's statistics for a schema just built, as autovacuum
    would soon after a load on a server that runs it (the test server runs
    without it): a table never analysed makes PostgreSQL plan the path
    scan's backward index scan as a sort of every row below its start
    (docs/postgres.md, "Planner statistics")."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(PG_URL, autocommit=True) as conn:
        for table in ("sessions", "events", "blobs"):
            conn.execute(sql.SQL("ANALYZE {}.{}").format(sql.Identifier(schema), sql.Identifier(table)))


def pg_schema_bytes(schema: str) -> int:
    """Every relation of the schema (tables, indexes, TOAST), on disk."""
    import psycopg

    with psycopg.connect(PG_URL) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
            (schema,),
        ).fetchone()
    return int(row[0]) if row else 0


class _AgentlogWriter(Writer):
    def __init__(self, store: Store, sid: str) -> None:
        self.store = store
        self.session = store.open(sid)

    def prepare(self, ev: Ev) -> Any:
        return ev

    def append(self, native: Any) -> None:
        kind, role, record = native
        self.session.append(kind, record, role=role)

    def close(self) -> None:
        self.session.close()


class AgentlogPeer(Peer):
    shares_session = True
    writers_note = "one session, 8 threads sharing its Session (group commit)"

    def __init__(self, backend: str, session_each: bool = False) -> None:
        self.backend = backend
        self.key = f"agentlog-{backend}"
        self.label = f"agentlog ({backend})"
        if session_each:
            # The 8-writer layout of the file peers, for comparison: no shared session.
            self.key += "-sessions"
            self.label += ", a session per writer"
            self.shares_session = False
            self.writers_note = "8 threads, a session each (as the file peers)"
            self.eight_only = True
        self.durability = {
            "file": "fdatasync per append (8 writers share one)",
            "sqlite": "SQLite WAL, synchronous=FULL: WAL fsync per commit",
            "postgresql": "synchronous_commit on: WAL flush per commit",
            "memory": "none (reference: the core without storage)",
        }[backend]
        self.sync = {"file": "fdatasync", "sqlite": "WAL fsync", "postgresql": "WAL flush", "memory": "no sync"}[
            backend
        ]
        if session_each:
            self.durability = "fdatasync per append (each session its own)"
        self._stores: dict[tuple[str, str], Store] = {}

    def unavailable(self) -> str | None:
        return pg_reachable() if self.backend == "postgresql" else None

    def url(self, loc: str) -> str:
        if self.backend == "file":
            return os.path.join(loc, "home")
        if self.backend == "sqlite":
            return "sqlite:///" + os.path.join(loc, "agentlog.db")
        if self.backend == "postgresql":
            return f"{PG_URL}?schema={loc}"
        return f"memory:{loc}"

    def store(self, loc: str, durability: str = "full") -> Store:
        """One store object per location, kept for the process (as a server keeps it)."""
        key = (loc, durability)
        if key not in self._stores:
            self._stores[key] = Store(self.url(loc), durability=durability)
        return self._stores[key]

    def release(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def build(self, loc: str, events: Iterable[Ev], name: str = "bench") -> str:
        store = self.store(loc, "off")
        sess = store.create(name=name, working_dir="/work/project", model="bench-model")
        try:
            _append_all(sess, events)
        finally:
            sess.close()
        if self.backend == "postgresql":
            pg_analyze(loc)
        return sess.id

    def build_many(self, loc: str, sessions: Iterable[tuple[str, list[Ev]]]) -> None:
        store = self.store(loc, "off")
        for summary, events in sessions:
            sess = store.create(name=summary[:40], working_dir="/work/project", model="bench-model", summary=summary)
            try:
                _append_all(sess, events)
            finally:
                sess.close()
        if self.backend == "postgresql":
            pg_analyze(loc)

    def writer(self, loc: str, sid: str) -> Writer:
        return _AgentlogWriter(self.store(loc), sid)

    def count(self, loc: str, sid: str) -> int:
        with self.store(loc).open(sid, readonly=True) as s:
            return len(s)

    def whole(self, loc: str, sid: str) -> int:
        sess = self.store(loc).open(sid, readonly=True)
        try:
            return len(sess.transcript())
        finally:
            sess.close()

    def last(self, loc: str, sid: str, n: int) -> int:
        sess = self.store(loc).open(sid, readonly=True)
        try:
            return len(list(islice(sess.walk(), n)))
        finally:
            sess.close()

    def listing(self, loc: str) -> int:
        return len(self.store(loc).list())

    def listing_rows(self, loc: str) -> int:
        """The backend's part of a listing alone: its rows (stored meta and
        stats), before the core builds and sorts a SessionInfo for each."""
        return sum(1 for _ in self.store(loc).backend.listing())

    def disk_bytes(self, loc: str) -> int | None:
        if self.backend == "postgresql":
            return pg_schema_bytes(loc)
        if self.backend == "memory":
            return None
        return dir_bytes(loc)

    def browse(self, loc: str, sid: str, context_len: int, pages: int, page: int) -> dict[str, int]:
        """Open, context(), the last 20 events' payloads, then ``pages``
        page-backs of ``page`` events before the context, payloads loaded."""
        sess = self.store(loc).open(sid, readonly=True)
        try:
            ctx = sess.context()
            shown = [sess.resolve(e) for e in ctx[-20:]]
            start = ctx[0].parent_id if ctx else None
            back = 0
            for _ in range(pages):
                if start is None or start == NIL_ID:
                    break
                chunk = list(islice(sess.walk(start), page))
                shown = [sess.resolve(e) for e in chunk]
                back += len(chunk)
                start = chunk[-1].parent_id if chunk else None
            return {"context": len(ctx), "paged_back": back, "shown": len(shown)}
        finally:
            sess.close()


def _append_all(sess: Any, events: Iterable[Ev]) -> None:
    """append_many in batches; a compaction marker becomes a compaction
    event that keeps the last KEEP events before it."""
    path: list[str] = []
    previous: str | None = None
    for batch in batched(events, 500):
        run: list[Ev] = []
        for kind, role, record in batch:
            if kind != COMPACTION:
                run.append((kind, role, record))
                continue
            path += [e.id for e in sess.append_many([(k, r, ro) for k, ro, r in run])] if run else []
            run = []
            keep = record["keep"]
            compaction = {
                "summary": record["summary"],
                "structured": empty_structured(),
                "first_kept_event_id": path[-keep] if len(path) >= keep else None,
                "tokens_before": 180_000,
                "tokens_after": 30_000,
                "previous_compaction_id": previous,
            }
            event = sess.append(COMPACTION, compaction, role="system")
            previous = event.id
            path.append(event.id)
        if run:
            path += [e.id for e in sess.append_many([(k, r, ro) for k, ro, r in run])]
        del path[:-1000]  # only the recent ids are ever kept
