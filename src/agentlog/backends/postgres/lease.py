"""The writer's lease on PostgreSQL: one writer per session across machines.

Two modes (the URL's ``lease=`` parameter):

- ``advisory`` (default): the writer holds a session-level advisory lock
  on its own dedicated connection for its lifetime. The server drops it the
  moment that connection ends, however the writer died, so a successor
  never waits. Needs a direct connection (or PgBouncer in session mode).
- ``row``: a lease row with an expiry that the writer renews every third
  of ``lease_ttl``; a crashed writer's lease lapses after ``lease_ttl``.
  Works behind a transaction-pooling proxy, where advisory locks do not
  hold, at the price of that wait.

In both, the lease row carries a fresh token, and every commit checks the
token inside its own transaction: a writer whose lease ended (connection
killed, lease expired and taken) commits nothing more (``LeaseLost``).

A writer that stops inside a transaction (a paused VM, a network partition,
SIGSTOP) keeps its lease row locked while the server thinks its connection
alive, which is hours behind a dead TCP peer. Every transaction on a lease's
connection therefore asks the server to end it after ``lease_ttl`` seconds
idle (``guard``), and taking a lease waits at most ``ACQUIRE_WAIT_MS`` for a
locked lease row: a second writer gets ``SessionLocked``, never a hang.
"""

from __future__ import annotations

import hashlib
import math
import os
import socket
import threading
import time
import uuid

import psycopg

from ...errors import LeaseLost, SessionLocked

__all__ = ["LEASE_MODES", "PostgresLease", "held_here", "lock_key"]

LEASE_MODES = ("advisory", "row")

#: How long taking a lease waits for the lease row's lock. The row is
#: locked by the holder's commit in progress (then the answer is
#: SessionLocked anyway) or by another contender's attempt (milliseconds).
ACQUIRE_WAIT_MS = 2000


def lock_key(schema: str, session_id: str) -> int:
    """A signed 64-bit advisory-lock key for one session of one schema."""
    digest = hashlib.sha256(f"{schema}/{session_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _holder_prefix() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()} since "


def _holder_note() -> str:
    return _holder_prefix() + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def held_here(holder: str | None) -> bool:
    """True if a refused lease's holder note names this process: a second
    lease of one process is refused like another process's would be."""
    return holder is not None and holder.startswith(_holder_prefix())


class PostgresLease:
    """A held lease; ``check`` runs inside each commit's transaction."""

    def __init__(
        self,
        conn: psycopg.Connection[tuple[object, ...]],
        schema: str,
        session_id: str,
        mode: str,
        ttl: float,
    ) -> None:
        self.conn = conn
        #: Serializes every use of ``conn``: the writer's commits and reads
        #: and the row-mode renewer share it, and a psycopg connection runs
        #: one transaction at a time. Without it a renewal that starts while
        #: a commit's transaction is open nests into it (or the commit into
        #: the renewal) and one of them commits or rolls back the other's work.
        self.lock = threading.Lock()
        self.session_id = session_id
        self.token = str(uuid.uuid4())
        self._mode = mode
        self._ttl = ttl
        self._key = lock_key(schema, session_id)
        self._stop = threading.Event()
        self._renewer: threading.Thread | None = None
        self.lost: str | None = None
        # A whole number of milliseconds, at least 1 (0 would turn it off).
        idle_ms = max(1, math.ceil(ttl * 1000))
        self._guard = f"SET LOCAL idle_in_transaction_session_timeout = {idle_ms}"
        try:
            self._acquire()
        except psycopg.errors.LockNotAvailable:
            # The row stayed locked past ACQUIRE_WAIT_MS: its holder is in a
            # commit (or stuck in one, which the server ends after lease_ttl).
            raise SessionLocked(self.session_id, self._holder()) from None

    def guard(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """First in every transaction on the lease's connection: the server
        ends the connection (and with it an advisory lock, or the lock on a
        lease row) if the transaction sits idle for ``lease_ttl`` seconds, so
        a writer frozen mid-commit does not hold its session for hours. SET
        LOCAL, not a session setting: it must hold behind a transaction-pooling
        proxy too, where the next transaction may run on another connection."""
        conn.execute(self._guard)

    def _begin_acquire(self) -> None:
        self.guard(self.conn)
        self.conn.execute(f"SET LOCAL lock_timeout = {ACQUIRE_WAIT_MS}")

    def _holder(self) -> str | None:
        row = self.conn.execute("SELECT holder FROM leases WHERE session_id = %s", (self.session_id,)).fetchone()
        return None if row is None else str(row[0])

    def _acquire(self) -> None:
        note = _holder_note()
        if self._mode == "advisory":
            # The note is written, then the lock tried, in one transaction: the
            # note's row lock makes contenders take turns, and a refused one
            # rolls its note back, so the note read after a refusal is the holder's.
            refused = False
            with self.conn.transaction():
                self._begin_acquire()
                self.conn.execute(
                    "INSERT INTO leases VALUES (%s, %s, %s, 'infinity') ON CONFLICT (session_id)"
                    " DO UPDATE SET token = EXCLUDED.token, holder = EXCLUDED.holder, expires_at = 'infinity'",
                    (self.session_id, self.token, note),
                )
                got = self.conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()
                if not (got and got[0]):
                    refused = True
                    raise psycopg.Rollback()  # leaves the block quietly, the note undone
            if refused:
                raise SessionLocked(self.session_id, self._holder())
            return
        with self.conn.transaction():
            self._begin_acquire()
            row = self.conn.execute(
                "INSERT INTO leases VALUES (%s, %s, %s, now() + make_interval(secs => %s)) ON CONFLICT (session_id)"
                " DO UPDATE SET token = EXCLUDED.token, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at"
                " WHERE leases.expires_at < now() RETURNING token",
                (self.session_id, self.token, note, self._ttl),
            ).fetchone()
        if row is None:
            raise SessionLocked(self.session_id, self._holder())
        self._renewer = threading.Thread(target=self._renew, name=f"agentlog-lease-{self.session_id}", daemon=True)
        self._renewer.start()

    def _renew(self) -> None:
        """Row mode: push the expiry forward until released or lost."""
        while not self._stop.wait(self._ttl / 3):
            try:
                with self.lock:
                    if self._stop.is_set():
                        return  # released while this renewal waited for the connection
                    cur = self.conn.execute(
                        "UPDATE leases SET expires_at = now() + make_interval(secs => %s)"
                        " WHERE session_id = %s AND token = %s",
                        (self._ttl, self.session_id, self.token),
                    )
                if cur.rowcount != 1:
                    self.lost = "it expired and another writer took it"
                    return
            except Exception as exc:  # noqa: BLE001  # not swallowed: the next commit raises LeaseLost with it
                self.lost = f"renewal failed: {str(exc).strip() or type(exc).__name__}"
                return

    def held_query(self) -> tuple[str, tuple[object, ...]]:
        """The statement a commit runs, inside its transaction, to check that
        the lease is still this writer's (a row back, or none). In row mode
        it also pushes the expiry forward: a writer committing is alive, and
        a tight loop of commits can keep the renewer waiting for the
        connection's lock past a short ``lease_ttl`` (seen at 0.5 s on a
        saturated machine). Advisory leases never expire: a plain locking
        read, so a commit writes no lease row."""
        if self._mode == "advisory":
            return (
                "SELECT 1 FROM leases WHERE session_id = %s AND token = %s AND expires_at > now() FOR UPDATE",
                (self.session_id, self.token),
            )
        return (
            "UPDATE leases SET expires_at = now() + make_interval(secs => %s)"
            " WHERE session_id = %s AND token = %s AND expires_at > now() RETURNING 1",
            (self._ttl, self.session_id, self.token),
        )

    def check(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """Inside a commit's transaction: the lease is still ours, or LeaseLost."""
        if self.lost:
            raise LeaseLost(self.session_id, self.lost)
        row = conn.execute(
            "SELECT 1 FROM leases WHERE session_id = %s AND token = %s AND expires_at > now() FOR UPDATE",
            (self.session_id, self.token),
        ).fetchone()
        if row is None:
            self.lost = "another writer holds it now"
            raise LeaseLost(self.session_id, self.lost)

    def release(self) -> None:
        self._stop.set()
        if self._renewer is not None:
            self._renewer.join(timeout=5)
        with self.lock:
            self._release()

    def _release(self) -> None:
        try:
            self.conn.execute("DELETE FROM leases WHERE session_id = %s AND token = %s", (self.session_id, self.token))
            if self._mode == "advisory":
                self.conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except psycopg.Error:
            pass  # the connection is gone: the server already dropped the lock; the row names a dead token
        finally:
            self.conn.close()
