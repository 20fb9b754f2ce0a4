"""What every route shares: the store, the hub, the feeds, and how a
request opens a session.

Store calls block (files, locks, fsync), so routes run them in a worker
thread through :meth:`Service.read` and :meth:`Service.write`.

A write opens the session for writing for the length of the request and
closes it after, so the server holds no lease between requests and an
agent in another process can write in between. If that agent holds the
lease right now the request fails with ``423 session_locked``. Requests of
this server that write the same session queue on a per-session lock
instead of failing against each other.

Search brings agentlog's own index up to date before it queries. The
server starts that catch-up when it starts (``warm_search``), in a thread
of its own, so that the first search of a store nobody has searched yet
does not pay for indexing every session; a search that comes while it
runs waits for it rather than indexing the same sessions a second time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from .. import Session, Store
from ..agent import LiveHub
from ..backends.base import Backend
from ..search import catch_up, index_location, index_unwritable
from .errors import ApiError
from .feed import Feeds

__all__ = ["Service", "if_match_header"]

T = TypeVar("T")
log = logging.getLogger("agentlog.server")


class _Stopped(Exception):
    """Raised from the warm-up's progress callback when the server stops."""


class Service:
    def __init__(self, store: Store, hub: LiveHub, feeds: Feeds) -> None:
        self.store = store
        self.hub = hub
        self.feeds = feeds
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._indexing = threading.Lock()  # one catch-up of the search index at a time
        self._stop = threading.Event()
        self._warmer: threading.Thread | None = None
        # A search waits for the index's first build (minutes for a million
        # events) inside its worker thread; on the shared pool, a few waiting
        # searches took every thread and froze every other route.
        self.search_limiter = anyio.CapacityLimiter(4)

    @property
    def own_index(self) -> bool:
        """Whether search runs on agentlog's own index (a backend may search itself)."""
        return type(self.store.backend).search is Backend.search

    def catch_up_search(self) -> tuple[tuple[str, str], ...]:
        """Bring the search index up to date; the sessions it cannot read."""
        with self._indexing:
            return catch_up(self.store).failed

    def warm_search(self) -> None:
        """Start catching the search index up in the background (see the
        module's docstring). Nothing to do for a backend that searches
        itself, or an index this process may not write: a search there
        builds one in memory for itself, which a warm-up would throw away."""
        if not self.own_index or self._warmer is not None:
            return
        path = index_location(self.store.home)
        if path is not None and index_unwritable(path) is not None:
            return
        self._warmer = threading.Thread(target=self._warm, name="agentlog-search-warm-up", daemon=True)
        self._warmer.start()

    def _warm(self) -> None:
        def progress(done: int, total: int) -> None:
            if self._stop.is_set():
                raise _Stopped

        with self._indexing:
            try:
                catch_up(self.store, progress)
            except _Stopped:
                return  # what was indexed stays (a batch is one transaction): the next search goes on
            except Exception as exc:
                if self._stop.is_set():
                    return  # the server stopped and closed the store under us; the index is derived
                # Nothing is lost (the index is derived), and the first search
                # catches up again and reports the same failure to its client.
                log.warning("agentlog: warning: could not prepare the search index: %s: %s", type(exc).__name__, exc)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the warm-up between two sessions and wait for it."""
        self._stop.set()
        if self._warmer is not None:
            self._warmer.join(timeout)

    def _lock(self, session_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(session_id, threading.Lock())

    async def run(self, fn: Callable[[], T], limiter: anyio.CapacityLimiter | None = None) -> T:
        """``fn()`` in a worker thread: of the shared pool, or of ``limiter``'s."""
        return await anyio.to_thread.run_sync(fn, limiter=limiter)

    async def read(self, session_id: str, fn: Callable[[Session], T]) -> T:
        """``fn(session)`` on the session opened read-only, in a worker thread."""

        def work() -> T:
            with self.store.open(session_id, readonly=True) as session:
                return fn(session)

        return await anyio.to_thread.run_sync(work)

    async def write(self, session_id: str, fn: Callable[[Session], T], if_match: str | None = None) -> T:
        """``fn(session)`` with the session open for writing; HEAD must equal
        ``if_match`` when given (else 409 head_mismatch with the current head).
        Subscribers of the session are woken once the write is committed."""

        def work() -> T:
            with self._lock(session_id):
                with self.store.open(session_id) as session:
                    if if_match is not None and session.head != if_match:
                        raise ApiError(
                            409, "head_mismatch", f"HEAD is {session.head}, not {if_match}", head=session.head
                        )
                    try:
                        return fn(session)
                    finally:
                        self.feeds.notify(session_id)

        return await anyio.to_thread.run_sync(work)


def if_match_header(value: str | None) -> str | None:
    """The HEAD named by ``If-Match`` (quotes and a W/ prefix tolerated)."""
    if value is None:
        return None
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"')
