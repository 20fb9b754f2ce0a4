"""Writers shared within a process: a second open for writing reuses the first.

Two writer objects over the same files would each believe they own the
log's end. Instead, every writer handle in a process for one session
shares one storage (and so one lease, one group-commit queue); the storage
closes when the last handle does.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["SharedWriters", "WriterHandle"]

_lock = threading.Lock()
_open: dict[str, list[Any]] = {}  # key -> [storage, handle count]


class WriterHandle:
    """One user's reference to a shared writer storage."""

    def __init__(self, key: str, storage: Any) -> None:
        self._key = key
        self._storage = storage
        self._closed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._storage, name)

    @property
    def storage(self) -> Any:
        return self._storage

    def close(self) -> None:
        with _lock:
            if self._closed:
                return
            self._closed = True
            slot = _open.get(self._key)
            if slot is None or slot[0] is not self._storage:
                return
            slot[1] -= 1
            if slot[1] > 0:
                return
            del _open[self._key]
        self._storage.close()


class SharedWriters:
    def is_open(self, key: str) -> bool:
        with _lock:
            return key in _open

    def open(self, key: str, factory: Callable[[], Any]) -> WriterHandle:
        with _lock:
            slot = _open.get(key)
            if slot is not None:
                slot[1] += 1
                return WriterHandle(key, slot[0])
            storage = factory()
            _open[key] = [storage, 1]
            return WriterHandle(key, storage)
