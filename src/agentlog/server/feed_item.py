"""The messages a feed sends its SSE clients, each encoded once.

An :class:`Item` is shared by every subscriber of a feed, so its wire form
is made once however many clients get it. ``problem`` and ``delta`` items
are made here; ``settled`` ones where the log is read (``feed_settled``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._json import dumps as dumps_json

__all__ = ["Item", "delta_json", "problem_item"]


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


def problem_item(message: str) -> Item:
    return Item("problem", None, {"message": message})


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
