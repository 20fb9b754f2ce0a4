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
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import anyio
import watchfiles

from .. import NIL_ID, AgentlogError, CorruptionError, Event, Session, SessionNotFound, Store
from .._json import dumps as dumps_json
from ..agent import Dropped, LiveHub
from .encode import event_json

__all__ = ["Feed", "Feeds", "Item", "Replay", "Subscriber", "problem_item", "read_after"]

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
            self._wire = head.encode() + b"data: " + dumps_json(self.data) + b"\r\n\r\n"
        return self._wire


def settled_items(session: Session, ids: list[str]) -> list[Item]:
    """The ``settled`` items for ``ids`` with their records (blobs left for
    the client to fetch when opened) and HEAD as the session has it now,
    when they are read (events read together carry the same HEAD).

    An event whose record is damaged becomes a ``problem`` naming the file
    and offset, in its place (one for a run of events the same damage
    hides): the events around it still go out, and a client does not
    reconnect into the same damage forever."""
    head = session.head
    items: list[Item] = []
    damaged: list[str] = []  # consecutive ids that failed with the same error
    reason = ""

    def flush() -> None:
        if damaged:
            which = (
                f"event {damaged[0]}" if len(damaged) == 1 else f"{len(damaged)} events, {damaged[0]} to {damaged[-1]},"
            )
            log.warning("session %s: %s cannot be read: %s", session.id, which, reason)
            items.append(problem_item(f"{which} cannot be read: {reason}"))
            damaged.clear()

    for event_id in ids:
        try:
            document = event_json(session.event(event_id))
        except CorruptionError as exc:
            message = f"{type(exc).__name__}: {exc}"
            if message != reason:
                flush()
                reason = message
            damaged.append(event_id)
            continue
        flush()
        document["head"] = head
        items.append(Item("settled", event_id, document))
    flush()
    return items


def problem_item(message: str) -> Item:
    return Item("problem", None, {"message": message})


def _problem(exc: BaseException) -> Item:
    return problem_item(f"{type(exc).__name__}: {exc}")


@dataclasses.dataclass
class Replay:
    """What a (re)connecting client gets before the live stream."""

    items: list[Item]  #: the settled events after ``after``, in append order
    head: str
    last: str  #: the id of the last settled event ("" for an empty session)
    after: str  #: the id the live stream goes on from ("" for the start)
    problems: list[Item]  #: what the client must be told: damage found, an unknown id


def read_after(store: Store, session_id: str, after: str | None) -> Replay:
    """The replay a (re)connecting client gets: every settled event after
    ``after`` in append order (none when ``after`` is None).

    An ``after`` that is not an event of this session (a session deleted
    and made again, an id of another session) cannot be placed in the
    log: the client is told so in a ``problem`` and gets the whole session.
    Warnings of the reader (a log rebuilt after damage) are ``problem``s too."""
    with store.open(session_id, readonly=True) as session:
        ids = [e.id for e in session.entries()]
        last = ids[-1] if ids else ""
        problems = [problem_item(f"session {session_id}: {warning}") for warning in session.warnings]
        if after is None:
            return Replay([], session.head, last, last, problems)
        if after != NIL_ID and after not in set(ids):
            problems.append(
                problem_item(
                    f"event {after} (Last-Event-ID or ?after=) is not an event of session {session_id}: "
                    "the whole session is replayed"
                )
            )
            after = NIL_ID
        fresh = [i for i in ids if i > after]  # ids strictly increase in append order
        return Replay(settled_items(session, fresh), session.head, last, max(after, last), problems)


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
        self.offer_many([item])

    def offer_many(self, items: list[Item]) -> None:
        """Queue ``items`` that arrived together (the events of one read of
        the log) as a whole. A client is too slow when it still has
        ``maxsize`` items unsent as new ones arrive, not when one large
        commit (a batch, an import) holds more events than its queue: such a
        burst would otherwise drop every client, however fast. The queue
        holds at most ``maxsize`` items plus one burst, of items shared by
        every subscriber."""
        if not items or self.dropped is not None or self.closed:
            return
        if len(self._items) >= self.maxsize:
            self.dropped = (
                f"subscriber too slow: {len(self._items)} items were still unsent (its queue holds "
                f"{self.maxsize}); reconnect with Last-Event-ID to catch up from the log"
            )
        else:
            self._items.extend(items)
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
    """The settled events and deltas of one session, for its subscribers.

    Nothing of a feed holds a worker of the pools the routes use while it
    waits: the file watch (or the backend's ``wait_for_commit``) and the
    hub bridge each run in a daemon thread of their own and wake the loop
    with ``call_soon_threadsafe``. Only the short reads of new events run
    in the default executor."""

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
        self.ended = False  # the session is gone: subscribers were ended, a new feed is needed
        self._reader: Session | None = None
        self._reader_lock = threading.Lock()  # the reader is used and closed from worker threads
        self._last = ""  # the id of the last settled event read (ids increase in append order)
        self._head = ""
        self._dirty = asyncio.Event()
        self._halt = threading.Event()  # stops this feed's threads
        self._task: asyncio.Task[None] | None = None
        self.threads: list[threading.Thread] = []
        self._hub_sub: Any = None
        self._loop = asyncio.get_running_loop()
        self._wait_problem = ""
        self._born: object = None  # the session's created_at: one made again under its id differs

    # --- life ---------------------------------------------------------------------
    async def start(self) -> None:
        """Open the reader and start watching; on failure nothing is left running."""
        try:
            self._reader = await asyncio.to_thread(self.store.open, self.session_id, True)
            self._born = await asyncio.to_thread(self._birth)
            entries = await asyncio.to_thread(self._reader.entries)
            self._last = entries[-1].id if entries else ""
            self._head = self._reader.head
            self._task = asyncio.create_task(self._catch_up_loop())
            directory = os.path.join(self.store.home, "sessions", self.session_id)
            if os.path.isdir(directory):
                self.mode = "watch"
                self._spawn("watch", self._watch_thread, directory)
            else:
                # The backend says when a commit lands: PostgreSQL by LISTEN/NOTIFY,
                # the others by looking every 50 ms (Session.wait_for_commit).
                self.mode = "wait"
                self._spawn("wait", self._wait_thread)
            self._hub_sub = self.hub.subscribe(self.session_id, maxsize=65536)
            self._spawn("hub", self._bridge_hub)
        except BaseException:
            await self.stop()
            raise

    def _spawn(self, what: str, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name=f"agentlog-feed-{what}-{self.session_id}")
        self.threads.append(thread)
        thread.start()

    async def stop(self) -> None:
        """End the feed: its threads stop on their own, subscribers are ended,
        the reader is closed. Never raises (a failure is logged)."""
        self._halt.set()
        hub_sub, self._hub_sub = self._hub_sub, None
        if hub_sub is not None:
            hub_sub.close()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass  # what cancel() asked for
            except Exception as exc:  # noqa: BLE001 - the feed is stopping either way; say why it ended
                log.warning("feed %s: its pump ended with %s: %s", self.session_id, type(exc).__name__, exc)
        for sub in self.subscribers:
            sub.end()
        await asyncio.to_thread(self._close_reader)

    def _close_reader(self) -> None:
        with self._reader_lock:  # waits for a read still running in a worker
            reader, self._reader = self._reader, None
        if reader is not None:
            try:
                reader.close()
            except Exception as exc:  # noqa: BLE001 - the feed is gone either way; say so
                log.warning("feed %s: closing the reader failed: %s", self.session_id, exc)

    def wake(self) -> None:
        """Look for new settled events soon (call on the loop's thread)."""
        self._dirty.set()

    def _from_thread(self, fn: Any, *args: Any) -> None:
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass  # the event loop has closed: the server is gone, so is the feed

    # --- settled events -----------------------------------------------------------
    async def _catch_up_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                items = await asyncio.to_thread(self._read_new)
            except Exception as exc:  # noqa: BLE001 - reported to every subscriber
                if not await asyncio.to_thread(self._exists):
                    self._gone()
                    return
                log.warning("feed %s: reading the log failed: %s", self.session_id, exc)
                items = [_problem(exc)]
            if items is None:
                self._gone()
                return
            self._broadcast_many(items)

    def _birth(self) -> object:
        """The session's ``created_at``: what tells it from one deleted and
        made again under the same id between two looks. None when its
        metadata cannot be read (damaged): then only its existence counts."""
        try:
            return self.store.backend.read_meta(self.session_id).get("created_at")
        except SessionNotFound:
            raise
        except AgentlogError:
            return None  # fsck reports the damage; the events can still be streamed

    def _exists(self) -> bool:
        """Whether the session this feed opened is still there (not deleted,
        nor deleted and made again under its id)."""
        try:
            # One read a wake: the metadata says both (a deleted session's is
            # SessionNotFound); only when it cannot be read does existence decide.
            born = self._birth()
            if born is None:
                return self.store.exists(self.session_id)
            return self._born is None or born == self._born
        except SessionNotFound:
            return False
        except Exception as exc:  # noqa: BLE001 - cannot tell: keep the feed, and say why
            log.warning("feed %s: cannot tell whether the session still exists: %s", self.session_id, exc)
            return True

    def _gone(self) -> None:
        """The session was deleted: say so and end every stream of it (a
        session made again under the same id is a new log, for a new feed)."""
        if self.ended:
            return
        log.info("feed %s: the session was deleted", self.session_id)
        self.ended = True
        self._halt.set()
        self._broadcast(Item("problem", None, {"message": f"session {self.session_id} was deleted; the stream ends"}))
        for sub in list(self.subscribers):
            sub.end()

    def _read_new(self) -> list[Item] | None:
        """The items since the last look; None if the session is gone."""
        if not self._exists():
            # Deleted, or deleted and made again: the reader would go on
            # reading the old log's open files, and the file watch died with
            # the old directory.
            return None
        with self._reader_lock:
            reader = self._reader
            if reader is None:
                return []  # stopped meanwhile
            reader.refresh()
            # By id, not by count: a log that was repaired shorter still
            # gives its new events, and none is sent twice.
            fresh = [e.id for e in reader.entries() if e.id > self._last]
            if fresh:
                self._last = fresh[-1]
            items = settled_items(reader, fresh)
            head = reader.head
        if not fresh and head != self._head:
            items.append(Item("head", None, {"head": head}))  # a checkout: HEAD moved, no event
        self._head = head
        return items

    def _watch_thread(self, directory: str) -> None:
        """Wake the feed on every change in the session's directory (own thread)."""
        try:
            for _changes in watchfiles.watch(
                directory,
                stop_event=self._halt,
                debounce=self.watch_debounce_ms,
                step=5,
                recursive=True,
                raise_interrupt=False,
            ):
                self._from_thread(self._dirty.set)
        except Exception as exc:  # noqa: BLE001 - e.g. the OS's limit of watches: fall back to waiting
            if not self._halt.is_set():
                self._from_thread(self._watch_failed, exc)

    def _watch_failed(self, exc: Exception) -> None:
        if self._halt.is_set():
            return
        log.warning("feed %s: the file watch failed, waiting for commits instead: %s", self.session_id, exc)
        self.mode = "wait"
        self._broadcast(
            Item(
                "problem",
                None,
                {
                    "message": f"watching the session's files failed ({type(exc).__name__}: {exc}); "
                    "new events are looked for by polling instead"
                },
            )
        )
        self._spawn("wait", self._wait_thread)
        self._dirty.set()  # whatever landed while nobody watched

    def _wait_thread(self) -> None:
        """Wake the feed on every commit the backend reports (own thread,
        own read-only session); a failure is reported and retried."""
        while not self._halt.is_set():
            try:
                waiter = self.store.open(self.session_id, readonly=True)
            except Exception as exc:  # noqa: BLE001 - reported, retried
                if not self._exists():
                    self._from_thread(self._gone)
                    return
                self._wait_error(exc)
                continue
            try:
                while not self._halt.is_set():
                    if waiter.wait_for_commit(self.poll_interval * 5):
                        self._from_thread(self._dirty.set)
                    elif not self._exists():  # some backends keep serving a deleted session's reader
                        self._from_thread(self._gone)
                        return
            except Exception as exc:  # noqa: BLE001 - reported, retried
                self._wait_error(exc)
            finally:
                try:
                    waiter.close()
                except Exception as exc:  # noqa: BLE001 - a reader only; say so, the next wait opens another
                    log.warning("feed %s: closing the waiting reader failed: %s", self.session_id, exc)

    def _wait_error(self, exc: Exception) -> None:
        message = f"waiting for commits failed: {type(exc).__name__}: {exc}"
        if message != self._wait_problem:  # once per distinct failure, not once a second
            self._wait_problem = message
            log.warning("feed %s: %s", self.session_id, message)
            self._from_thread(self._broadcast, Item("problem", None, {"message": message}))
        self._from_thread(self._dirty.set)  # the catch-up finds out whether the session is gone
        self._halt.wait(max(self.poll_interval * 5, 0.05))

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
            if self._halt.is_set() or not isinstance(sub.dropped, Dropped):
                return
            # The bridge itself fell behind (65536 items): say so and resubscribe.
            notice = Item("problem", None, {"message": "live deltas were lost: the server fell behind"})
            self._from_thread(self._broadcast, notice)
            sub = self._hub_sub = self.hub.subscribe(self.session_id, maxsize=65536)
            if self._halt.is_set():  # stopped meanwhile: stop() may not have seen this one
                sub.close()
                return

    def _on_live(self, item: Any) -> None:
        if isinstance(item, Event):
            self._dirty.set()  # settled: it reaches subscribers from the log, once
        else:
            self._broadcast(Item("delta", None, delta_json(item)))

    def _broadcast(self, item: Item) -> None:
        self._broadcast_many([item])

    def _broadcast_many(self, items: list[Item]) -> None:
        for sub in list(self.subscribers):
            sub.offer_many(items)


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
