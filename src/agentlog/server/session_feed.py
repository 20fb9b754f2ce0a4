"""One session's feed: what wakes it, what it reads, and whom it tells.

A :class:`Feed` reads the session's new settled events from the log when
something wakes it (a file watch, the backend's ``wait_for_commit``, a
write through the API, an ``Event`` on the hub), forwards live deltas from
the hub, and ends its streams when the session is deleted. Each waiting
part runs in a thread of its own. ``feed`` describes the whole design.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

import watchfiles

from .. import AgentlogError, Event, Session, SessionNotFound, Store
from ..agent import Dropped, LiveHub
from .feed_item import Item, delta_json, problem_item
from .feed_settled import settled_items
from .feed_subscriber import Subscriber

__all__ = ["Feed"]

log = logging.getLogger("agentlog.server")


def _problem(exc: BaseException) -> Item:
    return problem_item(f"{type(exc).__name__}: {exc}")


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
