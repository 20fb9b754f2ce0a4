"""OpenAI Agents SDK ``Session`` on an agentlog timeline.

``AgentlogSession(session_id, store=None, session_settings=None)`` behaves
like the SDK's own ``SQLiteSession`` (same item dicts, order, limits, and
``pop_item`` on an empty session returning None), mapped onto a timeline:

- ``add_items`` is one atomic batch (``Session.append_many``);
- ``pop_item`` moves HEAD to the popped item's parent; the item stays in
  history, and the next ``add_items`` starts a branch there;
- ``clear_session`` moves HEAD to the root, so the next item starts a new
  root and the old timeline stays reachable in ``agentlog tree``;
- ``get_items(limit)`` walks back from HEAD, reading only what it returns.

Each item is stored as one event: a message as kind ``message`` whose record
*is* the item, a ``function_call`` as ``tool_call`` and a
``function_call_output`` as ``tool_result`` (with the record conventions'
fields beside the verbatim ``item``), anything else as ``custom``
``{"item": ...}``. Events on the path that this adapter did not write are
rendered as items where they have a natural form (messages, tool calls and
results) and skipped otherwise (compactions, labels, state).

Requires the ``openai-agents`` extra.
"""

from __future__ import annotations

import asyncio
import copy
import threading
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

try:
    from agents.memory.session import SessionABC
    from agents.memory.session_settings import SessionSettings, coerce_session_settings, resolve_session_limit
except ModuleNotFoundError as exc:  # the extra is not installed: say which
    from .._extras import extra_missing

    raise extra_missing(exc, extra="openai-agents", module=__name__) from exc

from .. import NIL_ID, Event, InvalidEvent, InvalidOption, Session, SessionClosed, SessionExists, Store
from ._ids import session_key
from ._locks import release_when_collected, shared_lock

__all__ = ["AgentlogSession", "item_to_draft", "event_to_item"]

_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
T = TypeVar("T")
Item = Any  # the SDK's TResponseInputItem: a TypedDict union, a plain dict at run time
EventTuple = tuple[str, dict[str, Any], str | None]


def item_to_draft(item: Item) -> EventTuple:
    """The (kind, record, role) an SDK item is stored as."""
    if not isinstance(item, dict):
        raise InvalidEvent(f"an Agents SDK session item must be a dict, not {type(item).__name__}")
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message") and role in _MESSAGE_ROLES and "content" in item:
        return "message", item, role
    if kind == "function_call" and isinstance(item.get("call_id"), str):
        record = {
            "id": item["call_id"],
            "name": item.get("name"),
            "arguments": item.get("arguments"),
            "item": item,
        }
        return "tool_call", record, "assistant"
    if kind == "function_call_output" and isinstance(item.get("call_id"), str):
        # The output is kept once, as the conventional ``content``. An item
        # that has one keeps its key (set to None) so its key order survives
        # the round trip; an item without one is stored as it is, so reading
        # it back adds no key.
        rest = dict(item)
        if "output" in rest:
            rest["output"] = None
        return (
            "tool_result",
            {"tool_call_id": item["call_id"], "content": item.get("output"), "item": rest},
            "tool",
        )
    return "custom", {"item": item}, None


def event_to_item(event: Event) -> Item | None:
    """The SDK item an event stands for, or None when it stands for none."""
    record = event.record
    if not isinstance(record, dict):
        return None
    if event.kind == "message":
        if "role" in record:
            return record
        if event.role in _MESSAGE_ROLES:
            return {"role": event.role, "content": record.get("content")}
        return None
    if event.kind == "tool_call":
        if isinstance(record.get("item"), dict):
            return record["item"]
        return {
            "type": "function_call",
            "call_id": record.get("id"),
            "name": record.get("name"),
            "arguments": record.get("arguments"),
        }
    if event.kind == "tool_result":
        if isinstance(record.get("item"), dict):
            item = dict(record["item"])
            if "output" in item:
                item["output"] = record.get("content")
            return item
        return {
            "type": "function_call_output",
            "call_id": record.get("tool_call_id"),
            "output": record.get("content"),
        }
    if event.kind == "custom" and isinstance(record.get("item"), dict):
        return record["item"]
    return None


async def _complete(work: Callable[[], T]) -> T:
    """Run a blocking mutation in a worker thread and see it through.

    A cancelled caller cannot stop a thread, so this waits for the mutation
    to finish (holding the session's lock, so no other call overlaps it)
    and then re-raises the cancellation, as the SDK's own sessions do."""
    task = asyncio.ensure_future(asyncio.to_thread(work))
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError as exc:
            cancelled = cancelled or exc
    if cancelled is not None:
        if not task.cancelled() and task.exception() is not None:
            raise cancelled from task.exception()
        raise cancelled
    return task.result()


class AgentlogSession(SessionABC):
    """The Agents SDK ``Session`` protocol, kept as an agentlog session.

    ``session_id`` names the agentlog session: kept as it is when it is a
    valid agentlog id, otherwise mapped to ``h--<digest>`` (the original is
    kept in the session's metadata as ``framework_id``). The session is
    opened for writing on its first write and holds agentlog's writer lease
    until ``close()``: a writer in another process gets ``SessionLocked``.
    ``get_items()`` takes no lease (a read-only handle, unless this object
    holds the writer), and reads a session never written as empty without
    creating it. Within
    one process, writers of a session share that lease (as ``Store.open``
    does): a second ``AgentlogSession`` with the same id, or a
    ``store.open()`` of it, writes to the same timeline, and each sees the
    other's items.
    """

    def __init__(
        self,
        session_id: str,
        store: Store | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        self.session_id = session_id
        # As SQLiteSession: a dict is coerced the SDK's way, None means defaults.
        self.session_settings: SessionSettings | None = (
            coerce_session_settings(session_settings) if session_settings is not None else SessionSettings()
        )
        self.store = store if store is not None else Store()
        self.agentlog_id = session_key("", session_id)
        self._session: Session | None = None
        # Closes the session if this object is dropped without close() (set on open).
        self._release: weakref.finalize[..., object] | None = None
        self._closed = False
        # One operation at a time. The blocking store calls run in a worker
        # thread so the loop itself never waits on a sync, and the lock is taken
        # there: a thread lock, because callers may use one session from
        # several event loops or threads (as SQLiteSession allows), and an
        # asyncio.Lock shared across loops deadlocks. The lock is shared by
        # every AgentlogSession of this session in the process (_locks), as
        # they write one timeline: a pop must not interleave another
        # object's add_items (that item would leave the path). Within one loop, calls
        # also queue on that loop's own asyncio.Lock, so they run in the order
        # they were made (worker threads alone would take them in any order:
        # concurrent pops would return the items shuffled).
        self._lock = shared_lock(self.store, "openai-agents", self.agentlog_id)
        self._loop_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._loop_locks_guard = threading.Lock()

    def _in_order(self) -> asyncio.Lock:
        """The running loop's own lock (made on its first call here)."""
        loop = asyncio.get_running_loop()
        with self._loop_locks_guard:
            lock = self._loop_locks.get(loop)
            if lock is None:
                lock = self._loop_locks[loop] = asyncio.Lock()
        return lock

    def _locked(self, work: Callable[[], T]) -> Callable[[], T]:
        def run() -> T:
            with self._lock:
                return work()

        return run

    # --- the agentlog session -------------------------------------------------------
    def _open(self) -> Session:
        if self._closed:
            raise SessionClosed(self.agentlog_id)
        if self._session is None:
            if self.store.exists(self.agentlog_id):
                self._session = self.store.open(self.agentlog_id)
            else:
                try:
                    self._session = self.store.create(
                        name=self.session_id,
                        session_id=self.agentlog_id,
                        framework="openai-agents",
                        framework_id=self.session_id,
                    )
                except SessionExists:
                    # Created by another writer between the check and here.
                    self._session = self.store.open(self.agentlog_id)
            self._release = release_when_collected(self, self._session.close)
        return self._session

    @property
    def session(self) -> Session:
        """The agentlog session (opened for writing on first use)."""
        return self._open()

    def _items_back(self, session: Session) -> Iterator[tuple[Event, Item]]:
        """(event, item) from HEAD back to the root, loading blobs as met."""
        for event in session.walk():
            item = event_to_item(session.resolve(event))
            if item is not None:
                yield event, item

    # --- the protocol ---------------------------------------------------------------
    async def get_items(self, limit: int | None = None, *, wrapper: Any = None) -> list[Item]:
        """The latest ``limit`` items of the active path, oldest first.

        ``limit`` None uses ``session_settings.limit``; 0 gives []; a negative
        limit gives everything (as SQLite's ``LIMIT -1`` does for SQLiteSession)."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            # 2.5 gave 3 items; SQLiteSession's query refuses it too.
            raise InvalidOption(f"limit must be an integer or None, not {limit!r}")
        wanted = resolve_session_limit(limit, self.session_settings)

        def read() -> list[Item]:
            if self._closed:
                raise SessionClosed(self.agentlog_id)
            if wanted == 0:
                return []
            # A read takes no lease, as SQLiteSession's readers take none: the
            # writer when this object holds it, else a read-only handle, and
            # a session never written reads as empty without being created.
            session = self._session
            reader = None
            if session is None:
                if not self.store.exists(self.agentlog_id):
                    return []
                session = reader = self.store.open(self.agentlog_id, readonly=True)
            try:
                items: list[Item] = []
                for _, item in self._items_back(session):
                    items.append(item)
                    if wanted is not None and wanted > 0 and len(items) >= wanted:
                        break
            finally:
                if reader is not None:
                    reader.close()
            items.reverse()
            return items

        async with self._in_order():
            return await asyncio.to_thread(self._locked(read))

    async def add_items(self, items: list[Item], *, wrapper: Any = None) -> None:
        """Append ``items`` as one atomic batch (all or none after a crash)."""
        if self._closed:
            # As SQLiteSession: a closed session refuses even an empty batch.
            raise SessionClosed(self.agentlog_id)
        if not isinstance(items, list | tuple):
            # None used to do nothing, unseen: the caller's items were lost.
            raise InvalidEvent(f"add_items takes a list of items, not {type(items).__name__}")
        if not items:
            return
        drafts = [item_to_draft(copy.deepcopy(item)) for item in items]
        async with self._in_order():
            await _complete(self._locked(lambda: self._open().append_many(drafts)))

    async def pop_item(self, *, wrapper: Any = None) -> Item | None:
        """The latest item, with HEAD moved to its parent (it stays in history)."""

        def pop() -> Item | None:
            session = self._open()
            for event, item in self._items_back(session):
                session.checkout(event.parent_id)
                return item
            return None

        async with self._in_order():
            return await _complete(self._locked(pop))

    async def clear_session(self, *, wrapper: Any = None) -> None:
        """Start a fresh root: HEAD moves to the root, nothing is deleted."""

        def clear() -> None:
            self._open().checkout(NIL_ID)

        async with self._in_order():
            await _complete(self._locked(clear))

    def close(self) -> None:
        """Close the agentlog session, releasing its writer lease; later calls
        raise ``SessionClosed`` (SQLiteSession raises after ``close()`` too)."""
        with self._lock:  # never under a running call's feet
            self._closed = True
            if self._session is not None:
                if self._release is not None:
                    self._release.detach()  # closed here, so not again when collected
                self._session.close()
                self._session = None
