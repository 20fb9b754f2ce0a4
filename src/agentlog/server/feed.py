"""Per-session fan-out of settled events and live deltas to SSE clients.

One :class:`Feed` per watched session, shared by all of its subscribers:

- **Settled events** are read from the durable log, never taken from a
  writer's hands: a read-only session is refreshed and its ``entries()``
  (append order) diffed against what was already sent. So events written
  through this API, by an agent in this process, or by another process all
  arrive the same way, once, in order, each with the HEAD after its batch.
- **What wakes the feed**: a write through this API (``Feeds.notify``), a
  settled ``Event`` published on the in-process hub, and for the file
  backend a watch on the session's directory (``watchfiles``: inotify on
  Linux). Any other backend is asked (``Session.wait_for_commit``):
  PostgreSQL is told of each commit by LISTEN/NOTIFY; memory and SQLite
  look every 50 ms.
- **Live deltas** come from the in-process :class:`~agentlog.agent.hub.LiveHub`
  (which ``POST /live`` also feeds); a bridge thread per feed forwards them.
- **Back-pressure**: every subscriber has a bounded queue filled from the
  event loop without waiting. One whose queue is full is dropped, gets a
  final notice after what it already has, and can reconnect with
  ``Last-Event-ID``. No writer ever waits for a reader.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import orjson
import watchfiles

from .. import Event, Session, Store
from ..agent import Dropped, LiveHub
from .encode import event_json

__all__ = ["Feed", "Feeds", "Item", "Subscriber", "read_after"]

log = logging.getLogger("agentlog.server")


class Item:
    """One SSE message for subscribers: event name, event id (or None), data.

    The same object goes to every subscriber, so it is encoded once."""

    __slots__ = ("_wire", "data", "id", "name")

    def __init__(self, name: str, event_id: str | None, data: dict[str, Any]) -> None:
        self.name = name
        self.id = event_id
        self.data = data
        self._wire: bytes | None = None

    def wire(self) -> bytes:
        """The message as it goes on the wire (orjson output has no newline)."""
        if self._wire is None:
            head = f"event: {self.name}\r\n" + (f"id: {self.id}\r\n" if self.id else "")
            self._wire = head.encode() + b"data: " + orjson.dumps(self.data) + b"\r\n\r\n"
        return self._wire


def settled_items(session: Session, ids: list[str]) -> list[Item]:
    """The ``settled`` items for ``ids`` with their records (blobs left for
    the client to fetch when opened) and the session's current HEAD."""
    head = session.head
    items: list[Item] = []
    for event_id in ids:
        document = event_json(session.event(event_id))
        document["head"] = head
        items.append(Item("settled", event_id, document))
    return items


def read_after(store: Store, session_id: str, after: str | None) -> tuple[list[Item], str, str]:
    """The replay a (re)connecting client gets: every settled event after
    ``after`` in append order (none when ``after`` is None), HEAD, and the
    id of the last settled event (empty for an empty session)."""
    with store.open(session_id, readonly=True) as session:
        ids = [e.id for e in session.entries()]
        last = ids[-1] if ids else ""
        if after is None:
            return [], session.head, last
        fresh = [i for i in ids if i > after]  # ids strictly increase in append order
        return settled_items(session, fresh), session.head, last


def delta_json(item: Any) -> dict[str, Any]:
    """A live item as JSON, marked as a delta (never persisted)."""
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        body: Any = dataclasses.asdict(item)
        body.setdefault("type", type(item).__name__.lower())
    elif isinstance(item, dict):
        body = item
    else:
        body = {"type": type(item).__name__.lower(), "value": repr(item)}
    return {"delta": True, "item": body}


class Subscriber:
    """One SSE client's bounded queue, filled on the event loop's thread."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._items: deque[Item] = deque()
        self._wake = asyncio.Event()
        self.dropped: str | None = None
        self.closed = False

    def offer(self, item: Item) -> None:
        if self.dropped is not None or self.closed:
            return
        if len(self._items) >= self.maxsize:
            self.dropped = (
                f"subscriber too slow: its queue of {self.maxsize} items was full; "
                "reconnect with Last-Event-ID to catch up from the log"
            )
        else:
            self._items.append(item)
        self._wake.set()

    def end(self) -> None:
        self.closed = True
        self._wake.set()

    async def get(self) -> Item | None:
        """The next item; a final ``dropped`` item after a drop; None at the end."""
        batch = await self.get_many(1)
        return batch[0] if batch else None

    async def get_many(self, limit: int) -> list[Item]:
        """Up to ``limit`` queued items, waiting for at least one; a final
        ``dropped`` item after a drop; an empty list at the end."""
        while True:
            if self._items:
                count = min(limit, len(self._items))
                return [self._items.popleft() for _ in range(count)]
            if self.dropped is not None:
                reason, self.dropped = self.dropped, None
                self.closed = True
                return [Item("dropped", None, {"reason": reason})]
            if self.closed:
                return []
            self._wake.clear()
            await self._wake.wait()


class Feed:
    """The settled events and deltas of one session, for its subscribers."""

    def __init__(
        self, store: Store, session_id: str, hub: LiveHub, *, poll_interval: float, watch_debounce_ms: int
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.hub = hub
        self.poll_interval = poll_interval
        self.watch_debounce_ms = watch_debounce_ms
        self.subscribers: set[Subscriber] = set()
        self.mode = "starting"  # "watch" or "wait", for /health and the docs
        self._reader: Session | None = None
        self._waiter: Session | None = None
        self._count = 0
        self._head = ""
        self._dirty = asyncio.Event()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._bridge: threading.Thread | None = None
        self._hub_sub: Any = None
        self._loop = asyncio.get_running_loop()

    # --- life ---------------------------------------------------------------------
    async def start(self) -> None:
        self._reader = await asyncio.to_thread(self.store.open, self.session_id, True)
        entries = await asyncio.to_thread(self._reader.entries)
        self._count = len(entries)
        self._head = self._reader.head
        self._tasks.append(asyncio.create_task(self._catch_up_loop()))
        directory = os.path.join(self.store.home, "sessions", self.session_id)
        if os.path.isdir(directory):
            self.mode = "watch"
            self._tasks.append(asyncio.create_task(self._watch(directory)))
        else:
            # The backend says when a commit lands: PostgreSQL by LISTEN/NOTIFY,
            # the others by looking every 50 ms (Session.wait_for_commit).
            self.mode = "wait"
            self._waiter = await asyncio.to_thread(self.store.open, self.session_id, True)
            self._tasks.append(asyncio.create_task(self._wait()))
        self._hub_sub = self.hub.subscribe(self.session_id, maxsize=65536)
        self._bridge = threading.Thread(target=self._bridge_hub, daemon=True, name=f"agentlog-feed-{self.session_id}")
        self._bridge.start()

    async def stop(self) -> None:
        self._stop.set()
        if self._hub_sub is not None:
            self._hub_sub.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for sub in self.subscribers:
            sub.end()
        for reader in (self._reader, self._waiter):
            if reader is not None:
                await asyncio.to_thread(reader.close)

    def wake(self) -> None:
        """Look for new settled events soon (call on the loop's thread)."""
        self._dirty.set()

    # --- settled events -----------------------------------------------------------
    async def _catch_up_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                items = await asyncio.to_thread(self._read_new)
            except Exception as exc:  # noqa: BLE001 - reported to every subscriber, feed stays up
                log.warning("feed %s: reading the log failed: %s", self.session_id, exc)
                items = [Item("problem", None, {"message": f"{type(exc).__name__}: {exc}"})]
            for item in items:
                self._broadcast(item)

    def _read_new(self) -> list[Item]:
        assert self._reader is not None
        self._reader.refresh()
        entries = self._reader.entries()
        fresh = [e.id for e in entries[self._count :]]
        self._count = len(entries)
        items = settled_items(self._reader, fresh)
        head = self._reader.head
        if not fresh and head != self._head:
            items.append(Item("head", None, {"head": head}))  # a checkout: HEAD moved, no event
        self._head = head
        return items

    async def _watch(self, directory: str) -> None:
        async for _changes in watchfiles.awatch(
            directory, stop_event=self._stop, debounce=self.watch_debounce_ms, step=5, recursive=True
        ):
            self._dirty.set()

    async def _wait(self) -> None:
        assert self._waiter is not None
        while True:
            if await asyncio.to_thread(self._waiter.wait_for_commit, self.poll_interval * 5):
                self._dirty.set()

    # --- live deltas --------------------------------------------------------------
    def _bridge_hub(self) -> None:
        """Forward hub items to the loop (runs in its own thread: Subscription blocks)."""
        sub = self._hub_sub
        while sub is not None:
            for item in sub:
                if isinstance(item, Dropped):
                    break
                try:
                    self._loop.call_soon_threadsafe(self._on_live, item)
                except RuntimeError:
                    return  # the event loop has closed: the server is gone, so is the feed
            if self._stop.is_set() or not isinstance(sub.dropped, Dropped):
                return
            # The bridge itself fell behind (65536 items): say so and resubscribe.
            notice = Item("problem", None, {"message": "live deltas were lost: the server fell behind"})
            self._loop.call_soon_threadsafe(self._broadcast, notice)
            sub = self._hub_sub = self.hub.subscribe(self.session_id, maxsize=65536)

    def _on_live(self, item: Any) -> None:
        if isinstance(item, Event):
            self._dirty.set()  # settled: it reaches subscribers from the log, once
        else:
            self._broadcast(Item("delta", None, delta_json(item)))

    def _broadcast(self, item: Item) -> None:
        for sub in list(self.subscribers):
            sub.offer(item)


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
            if feed is None:
                feed = Feed(
                    self.store,
                    session_id,
                    self.hub,
                    poll_interval=self.poll_interval,
                    watch_debounce_ms=self.watch_debounce_ms,
                )
                await feed.start()
                self._feeds[session_id] = feed
            feed.subscribers.add(sub)
        try:
            yield sub
        finally:
            async with self._lock:
                feed.subscribers.discard(sub)
                if not feed.subscribers and self._feeds.get(session_id) is feed:
                    del self._feeds[session_id]
                    await feed.stop()

    def notify(self, session_id: str) -> None:
        """A write committed (call from any thread): wake the session's feed."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._wake, session_id)

    def _wake(self, session_id: str) -> None:
        feed = self._feeds.get(session_id)
        if feed is not None:
            feed.wake()

    def active(self) -> dict[str, dict[str, Any]]:
        return {sid: {"subscribers": len(f.subscribers), "mode": f.mode} for sid, f in self._feeds.items()}

    async def close(self) -> None:
        async with self._lock:
            feeds, self._feeds = list(self._feeds.values()), {}
        for feed in feeds:
            await feed.stop()
