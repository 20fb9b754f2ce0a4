"""What adapter objects of one process share, and what they leave behind.

One lock per stored thing, shared by every adapter object of a process.

Writers of one session in one process share its lease and timeline (as
``Store.open`` does), so two adapter objects over one store (two
``AgentlogSessionService`` instances, two ``AgentlogSession("x")``) write
the same sessions. A read-modify-write (a shared state scope, a pop) must
then exclude the other object too, not only its own calls: each object
taking only its own lock lets the other's write land between the read and
the write, and one of the two acknowledged writes is lost.

The lock is keyed by the store's URL (two ``Store`` objects over one home
share it), what takes it, and a name within that. It lives while some
object holds it.

And an adapter dropped without ``close()`` releases its leases when it is
collected (``release_when_collected``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

from .. import Store

__all__ = ["release_when_collected", "shared_lock"]

_LOCKS: weakref.WeakValueDictionary[tuple[str, str, str], threading.RLock] = weakref.WeakValueDictionary()
_GUARD = threading.Lock()


def shared_lock(store: Store, owner: str, name: str = "") -> threading.RLock:
    """The process-wide reentrant lock of ``name`` under ``owner`` in ``store``
    (hold a reference for as long as it is used: it lives only as long)."""
    key = (store.url, owner, name)
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = threading.RLock()
            _LOCKS[key] = lock
        return lock


def release_when_collected(owner: object, close: Callable[[], object]) -> weakref.finalize[..., object]:
    """Run ``close`` when ``owner`` is garbage-collected.

    An adapter holds writer leases (a lease and its file handles per
    session). One dropped without ``close()``, as the frameworks' own stores
    may be (an ``SQLiteSession`` made per request and never closed), would
    keep them until the process ends: other processes get ``SessionLocked``,
    and a server runs out of file handles. ``close`` must not refer to
    ``owner``. Not run at interpreter exit: the process's end releases the
    leases, every acknowledged write is already durable, and the store's
    connections may be gone by then.

    ``close`` runs in a thread of its own: a collection runs in whatever
    thread allocated at that moment, which may hold a lock that closing
    takes (the registry of open writers, while it opens a session), and
    would wait on itself for ever. An adapter's own ``close()`` closes in
    its caller's thread. The Agents SDK session's then ``detach()``es the
    finalizer (it holds one session, which is gone); the LangGraph saver
    and the ADK service keep theirs, because they may be used after
    ``close()``, which opens sessions again: collected, they close those,
    and closing none is nothing."""
    finalizer = weakref.finalize(owner, _close_in_a_thread, close)
    finalizer.atexit = False
    return finalizer


def _close_in_a_thread(close: Callable[[], object]) -> None:
    threading.Thread(target=close, name="agentlog-release", daemon=True).start()
