"""Per-session fan-out of settled events and live deltas to SSE clients.

One :class:`Feed` per watched session, shared by all of its subscribers:

- **Settled events** are read from the durable log, never taken from a
  writer's hands: a read-only session is refreshed and its ``entries()``
  (append order) diffed against what was already sent. So events written
  through this API, by an agent in this process, or by another process all
  arrive the same way, once, in order, each with HEAD as read with it.
- **What wakes the feed**: a write through this API (``Feeds.notify``), a
  settled ``Event`` published on the in-process hub, and for the file
  backend a watch on the session's directory (``watchfiles``: inotify on
  Linux). Any other backend is asked (``Session.wait_for_commit``):
  PostgreSQL is told of each commit by LISTEN/NOTIFY; memory and SQLite
  look every 50 ms. Either waits in a thread of the feed's own, never in a
  worker the routes need; a watch that fails (the OS's limit of watches)
  is reported and replaced by waiting.
- **A deleted session** ends its streams after a ``problem``.
- **Live deltas** come from the in-process :class:`~agentlog.agent.hub.LiveHub`
  (which ``POST /live`` also feeds); a bridge thread per feed forwards them.
- **Back-pressure**: every subscriber has a bounded queue filled from the
  event loop without waiting. One whose queue is full is dropped, gets a
  final notice after what it already has, and can reconnect with
  ``Last-Event-ID``. No writer ever waits for a reader.

Where each part lives: this module keeps the feeds by session
(:class:`Feeds`); ``session_feed`` is one session's :class:`Feed`;
``feed_settled`` reads settled events from the log (and the replay of a
reconnecting client); ``feed_subscriber`` is a client's bounded queue;
``feed_item`` the messages themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio

from .. import Store
from ..agent import LiveHub
from .feed_item import Item, problem_item
from .feed_settled import Replay, read_after
from .feed_subscriber import Subscriber
from .session_feed import Feed

# Feed, Item, Replay, Subscriber, problem_item and read_after live in the
# modules above; they stay importable from here, where the routes and the
# tests import them.
__all__ = ["Feed", "Feeds", "Item", "Replay", "Subscriber", "problem_item", "read_after"]


class Feeds:
    """The feeds of the sessions somebody is watching, made and ended on demand."""

    def __init__(
        self, store: Store, hub: LiveHub, *, queue_size: int, poll_interval: float, watch_debounce_ms: int
    ) -> None:
        self.store = store
        self.hub = hub
        self.queue_size = queue_size
        self.poll_interval = poll_interval
        self.watch_debounce_ms = watch_debounce_ms
        self._feeds: dict[str, Feed] = {}
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    @contextlib.asynccontextmanager
    async def subscribe(self, session_id: str, queue_size: int | None = None) -> AsyncIterator[Subscriber]:
        self._loop = asyncio.get_running_loop()
        sub = Subscriber(queue_size or self.queue_size)
        async with self._lock:
            feed = self._feeds.get(session_id)
            if feed is None or feed.ended:
                feed = Feed(
                    self.store,
                    session_id,
                    self.hub,
                    poll_interval=self.poll_interval,
                    watch_debounce_ms=self.watch_debounce_ms,
                )
                # Shielded: a client that leaves meanwhile must not leave a
                # half-started feed behind (start() cleans up after a failure).
                with anyio.CancelScope(shield=True):
                    await feed.start()
                self._feeds[session_id] = feed
            feed.subscribers.add(sub)
        try:
            yield sub
        finally:
            # A stream usually ends by cancellation (the client went away),
            # and the lock may be held by another stream's cleanup: without
            # the shield the wait for it is cancelled too and the feed, its
            # reader and its threads leak.
            with anyio.CancelScope(shield=True):
                async with self._lock:
                    feed.subscribers.discard(sub)
                    if not feed.subscribers:
                        if self._feeds.get(session_id) is feed:
                            del self._feeds[session_id]
                        await feed.stop()

    def notify(self, session_id: str) -> None:
        """A write committed (call from any thread): wake the session's feed."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # closed meanwhile
            loop.call_soon_threadsafe(self._wake, session_id)

    def _wake(self, session_id: str) -> None:
        feed = self._feeds.get(session_id)
        if feed is not None:
            feed.wake()

    def active(self) -> dict[str, dict[str, Any]]:
        return {sid: {"subscribers": len(f.subscribers), "mode": f.mode} for sid, f in self._feeds.items()}

    async def close(self, join_seconds: float = 2.0) -> None:
        """Stop every feed (at shutdown), and give their threads a moment to end."""
        async with self._lock:
            feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            await feed.stop()
        threads = [t for f in feeds for t in f.threads]

        def join() -> None:
            deadline = time.monotonic() + join_seconds
            for thread in threads:
                thread.join(max(0.0, deadline - time.monotonic()))

        if threads:
            await asyncio.to_thread(join)
