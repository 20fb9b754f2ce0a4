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
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

from .. import Session, Store
from ..agent import LiveHub
from .errors import ApiError
from .feed import Feeds

__all__ = ["Service", "if_match_header"]

T = TypeVar("T")


class Service:
    def __init__(self, store: Store, hub: LiveHub, feeds: Feeds) -> None:
        self.store = store
        self.hub = hub
        self.feeds = feeds
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def _lock(self, session_id: str) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(session_id, threading.Lock())

    async def run(self, fn: Callable[[], T]) -> T:
        return await anyio.to_thread.run_sync(fn)

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
