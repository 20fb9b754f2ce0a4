"""One writer per session per process, shared by every handle that opens it.

Two cores over one session would each believe they own HEAD and the id
sequence. Instead every writer ``Session`` of a process for one session
shares one ``Timeline`` (so one lease, one id sequence, one group-commit
queue); it closes when the last handle does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from .timeline import Timeline

__all__ = ["WRITERS", "Writers"]


@dataclass
class _Slot:
    timeline: Timeline
    handles: int = 0
    # Set while the last handle's release closes the timeline: the slot
    # stays registered until the close returns (its lease is still held),
    # and an open of the same session waits for it instead of making a
    # second core, which would find the session's lease taken (PostgreSQL:
    # SessionLocked against this very process) or race the closing one.
    closing: threading.Event | None = None


class Writers:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], _Slot] = {}

    def is_open(self, url: str, session_id: str) -> bool:
        with self._lock:
            return (url, session_id) in self._open

    def acquire(self, url: str, session_id: str, factory: Callable[[], Timeline]) -> Timeline:
        """The shared timeline, made by ``factory`` (which takes the lease) if
        this process has none open; counted until ``release``."""
        key = (url, session_id)
        while True:
            with self._lock:
                slot = self._open.get(key)
                if slot is None:
                    slot = self._open[key] = _Slot(factory())
                if slot.closing is None:
                    slot.handles += 1
                    return slot.timeline
                closing = slot.closing
            closing.wait()

    def adopt(self, url: str, session_id: str, timeline: Timeline) -> Timeline:
        """Register a timeline just created (its lease already held)."""
        return self.acquire(url, session_id, lambda: timeline)

    def release(self, url: str, session_id: str, timeline: Timeline) -> None:
        key = (url, session_id)
        with self._lock:
            slot = self._open.get(key)
            if slot is None or slot.timeline is not timeline or slot.closing is not None:
                return
            slot.handles -= 1
            if slot.handles > 0:
                return
            slot.closing = closing = threading.Event()
        try:
            timeline.close()
        finally:
            with self._lock:
                del self._open[key]
            closing.set()


#: The process-wide registry.
WRITERS = Writers()
