"""LiveHub: fan-out of a session's live items to any number of subscribers.

The agent loop publishes streaming deltas (live-only, never stored) and
settled events as they happen; a TUI or an SSE endpoint subscribes per
session. Each subscriber has its own bounded queue. The publisher never
waits for a subscriber: one whose queue is full is dropped on the spot,
receives the items already queued and then a final :class:`Dropped`
notice, and may resubscribe and catch up from the durable log.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidOption
from ..event import check_session_id

__all__ = ["Dropped", "LiveHub", "Subscription"]


@dataclass(frozen=True, slots=True)
class Dropped:
    """The last item a dropped subscriber receives: why it was cut off."""

    reason: str


_CLOSED = object()  # end marker: the session's stream ended normally
_NOTHING = object()  # "no item": published items may be anything, even None


class Subscription:
    """One subscriber's queue: iterate it (blocking), or ``poll`` it.

    Iteration ends when the hub closes the session, when the subscription is
    closed, or right after a :class:`Dropped` notice. Use it as a context
    manager to unsubscribe on exit."""

    def __init__(self, hub: LiveHub, session_id: str, maxsize: int) -> None:
        self.session_id = session_id
        self.maxsize = maxsize
        self._hub = hub
        self._items: deque[Any] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._end: Any = None  # None while live, then _CLOSED or a Dropped
        self._received = 0
        self._notified = False  # the Dropped notice was handed out

    # --- publisher side (called by the hub, never blocks) ------------------------

    def _offer(self, item: Any) -> bool:
        """Queue ``item``; False (and the subscription is ended) if it is full."""
        with self._cond:
            if self._end is not None:
                return False
            if len(self._items) >= self.maxsize:
                self._end = Dropped(
                    f"subscriber too slow: its queue of {self.maxsize} items was full; "
                    f"dropped after {self._received} items, resubscribe and read the log"
                )
                self._cond.notify_all()
                return False
            self._items.append(item)
            self._received += 1
            self._cond.notify_all()
            return True

    def _finish(self, end: Any) -> None:
        with self._cond:
            if self._end is None:
                self._end = end
            self._cond.notify_all()

    # --- subscriber side ----------------------------------------------------------

    @property
    def ended(self) -> bool:
        """True once nothing more will arrive (queued items may remain)."""
        with self._cond:
            return self._end is not None

    @property
    def dropped(self) -> Dropped | None:
        with self._cond:
            return self._end if isinstance(self._end, Dropped) else None

    def poll(self, timeout: float | None = None) -> Any | None:
        """The next item, or None if none came within ``timeout`` or the
        subscription ended (check :attr:`ended`). A Dropped notice is an item."""
        item = self._take(timeout)
        return None if item is _NOTHING else item

    def _take(self, timeout: float | None) -> Any:
        with self._cond:
            if not self._cond.wait_for(lambda: self._items or self._end is not None, timeout):
                return _NOTHING
            if self._items:
                return self._items.popleft()
            if isinstance(self._end, Dropped) and not self._notified:
                self._notified = True
                return self._end
            return _NOTHING

    def __iter__(self) -> Iterator[Any]:
        while True:
            item = self._take(None)
            if item is _NOTHING:
                return
            yield item
            if isinstance(item, Dropped):
                return

    def close(self) -> None:
        """Unsubscribe: nothing more is queued; iteration ends after the backlog."""
        self._hub._remove(self)
        self._finish(_CLOSED)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LiveHub:
    """Per-session fan-out; safe to use from any number of threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: dict[str, list[Subscription]] = {}

    def subscribe(self, session_id: str, maxsize: int = 1024) -> Subscription:
        """A new subscription to items published for ``session_id`` from now on."""
        check_session_id(session_id)
        if not isinstance(maxsize, int) or maxsize < 1:
            raise InvalidOption(f"maxsize must be a positive int, not {maxsize!r}")
        sub = Subscription(self, session_id, maxsize)
        with self._lock:
            self._subs.setdefault(session_id, []).append(sub)
        return sub

    def publish(self, session_id: str, item: Any) -> int:
        """Deliver ``item`` to every live subscriber of ``session_id`` without
        waiting for any of them; returns how many received it."""
        with self._lock:
            subs = list(self._subs.get(session_id, ()))
        delivered = 0
        for sub in subs:
            if sub._offer(item):
                delivered += 1
            else:
                self._remove(sub)
        return delivered

    def close(self, session_id: str) -> None:
        """End every subscription of ``session_id``; they drain, then stop."""
        with self._lock:
            subs = self._subs.pop(session_id, [])
        for sub in subs:
            sub._finish(_CLOSED)

    def subscribers(self, session_id: str) -> int:
        with self._lock:
            return len(self._subs.get(session_id, ()))

    def _remove(self, sub: Subscription) -> None:
        with self._lock:
            subs = self._subs.get(sub.session_id)
            if subs and sub in subs:
                subs.remove(sub)
                if not subs:
                    del self._subs[sub.session_id]
