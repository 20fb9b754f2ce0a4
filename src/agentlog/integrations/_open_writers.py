"""A bounded set of sessions an adapter keeps open for writing.

Adapters hold agentlog's writer lease on what they write, so a second
writer elsewhere is refused. A server that serves many sessions would
otherwise keep every one open (a file handle and a lease each) until it
stops: past ``limit``, the least recently used one is closed. Its lease is
released then; the adapter reopens it, taking the lease again, on its next
use.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from ..errors import InvalidOption

__all__ = ["OpenWriters"]

T = TypeVar("T")


class OpenWriters(Generic[T]):
    """Open items by key, least recently used first; not thread-safe (callers lock)."""

    def __init__(self, limit: int, close: Callable[[T], None]) -> None:
        if type(limit) is not int or limit < 1:
            raise InvalidOption(f"the number of open writers must be a whole number of at least 1, not {limit!r}")
        self._items: OrderedDict[str, T] = OrderedDict()
        self._limit = limit
        self._close = close

    def get(self, key: str) -> T | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, key: str, item: T) -> None:
        self._items[key] = item
        self._items.move_to_end(key)
        while len(self._items) > self._limit:
            _, oldest = self._items.popitem(last=False)
            self._close(oldest)

    def pop(self, key: str) -> T | None:
        return self._items.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._items.values()))

    def close_all(self) -> None:
        while self._items:
            _, item = self._items.popitem(last=False)
            self._close(item)
