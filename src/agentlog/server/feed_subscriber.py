"""One SSE client's bounded queue: back-pressure that never makes a writer wait.

A subscriber too slow to keep up is dropped (told so after what it already
has) and reconnects with ``Last-Event-ID``; the feed never blocks on it.
"""

from __future__ import annotations

import asyncio
from collections import deque

from .feed_item import Item

__all__ = ["Subscriber"]


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
