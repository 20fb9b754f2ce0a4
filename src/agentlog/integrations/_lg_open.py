"""Opening the agentlog session that holds a LangGraph thread.

A thread the saver writes is held open (with agentlog's writer lease) in
an ``OpenWriters`` set until the saver closes or the set is full; a thread
it only reads is opened read-only for one call, so reading never takes a
lease. Either way an interrupted rewrite (``_lg_retention``) is finished
first, and a thread is found by its session's metadata (``FRAMEWORK``).
None of these lock: the saver calls them under its lock.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import SessionExists, Store
from ._ids import session_key
from ._lg_retention import finish_rewrite
from ._lg_thread import Thread, is_current, open_thread
from ._open_writers import OpenWriters

__all__ = [
    "FRAMEWORK",
    "close_thread",
    "held_thread",
    "open_reader",
    "open_writer",
    "stored_thread_ids",
    "thread_meta",
    "thread_session_id",
]

FRAMEWORK = "langgraph"


def close_thread(thread: Thread) -> None:
    thread.session.close()


def thread_session_id(thread_id: str) -> str:
    """The agentlog session id of a LangGraph thread."""
    return session_key("lg", str(thread_id))


def thread_meta(thread_id: str) -> dict[str, Any]:
    return {"name": f"langgraph {thread_id}", "framework": FRAMEWORK, "thread_id": thread_id}


def open_writer(store: Store, threads: OpenWriters[Thread], thread_id: str) -> Thread:
    """The thread open for writing (created if new); kept open in ``threads``."""
    thread_id = str(thread_id)
    thread = held_thread(threads, thread_id)
    if thread is not None:
        return thread
    sid = thread_session_id(thread_id)
    finish_rewrite(store, sid, thread_id, thread_meta(thread_id))
    if store.exists(sid):
        session = store.open(sid)
    else:
        try:
            session = store.create(session_id=sid, **thread_meta(thread_id))
        except SessionExists:
            session = store.open(sid)
    thread = open_thread(session)
    threads.put(thread_id, thread)
    return thread


def held_thread(threads: OpenWriters[Thread], thread_id: str) -> Thread | None:
    """The thread held open in ``threads``, its index built again if another
    writer in this process (a second saver sharing the lease) appended
    to it since: a stale index would resume from an old checkpoint."""
    thread = threads.get(thread_id)
    if thread is None or is_current(thread):
        return thread
    threads.pop(thread_id)  # open_thread closes the session if it fails
    thread = open_thread(thread.session)
    threads.put(thread_id, thread)
    return thread


@contextmanager
def open_reader(store: Store, threads: OpenWriters[Thread], thread_id: str) -> Iterator[Thread | None]:
    """The thread to read: the one held in ``threads`` if it is written here,
    else a read-only handle for this call only (reading takes no lease, so
    listing threads never blocks another process's writer). None if the
    thread is absent."""
    thread_id = str(thread_id)
    thread = held_thread(threads, thread_id)
    if thread is not None:
        yield thread
        return
    sid = thread_session_id(thread_id)
    finish_rewrite(store, sid, thread_id, thread_meta(thread_id))
    if not store.exists(sid):
        yield None
        return
    thread = open_thread(store.open(sid, readonly=True))
    try:
        yield thread
    finally:
        thread.session.close()


def stored_thread_ids(store: Store) -> list[str]:
    """Every LangGraph thread in the store (listing metadata only, no event
    read), including one whose rewrite was interrupted (its staging copy)."""
    found: dict[str, None] = {}
    for info in store.list(archived=True):
        if info.meta.get("framework") in (FRAMEWORK, "langgraph-staging"):
            thread_id = info.meta.get("thread_id")
            if isinstance(thread_id, str):
                found[thread_id] = None
    return list(found)
