"""Undoing what converting one source line changed, when the line fails.

A line is converted all or nothing. While a ``Journal`` is open, every
write to a map or set of the builder (and to an importer's ``state``) goes
through ``put`` / ``add``, which remember the value before; an earlier
pending event's record is copied before a merge first changes it
(``keep_record``). ``undo`` puts all of it back, newest first."""

from __future__ import annotations

import copy
from typing import Any, Protocol

__all__ = ["Journal"]

#: The key (or set member) was absent before the line.
_ABSENT = object()


class _HasRecord(Protocol):
    id: str
    record: dict[str, Any]


class Journal:
    def __init__(self) -> None:
        self.entries: list[tuple[Any, Any, Any]] | None = None  # None: not converting a line
        self.kept: set[str] = set()  # ids of the records copied during this line

    def open(self) -> None:
        self.entries = []
        self.kept.clear()

    def close(self) -> None:
        self.entries = None
        self.kept.clear()

    def put(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        if self.entries is not None:
            self.entries.append((mapping, key, mapping.get(key, _ABSENT)))
        mapping[key] = value

    def add(self, items: set[Any], item: Any) -> None:
        if item not in items:
            if self.entries is not None:
                self.entries.append((items, item, _ABSENT))
            items.add(item)

    def keep_record(self, holder: _HasRecord) -> None:
        """Copy ``holder.record`` once per line, before it is changed in place."""
        if self.entries is not None and holder.id not in self.kept:
            self.kept.add(holder.id)
            self.entries.append((holder, "record", copy.deepcopy(holder.record)))

    def undo(self) -> None:
        assert self.entries is not None, "undo outside a line"
        for container, key, old in reversed(self.entries):
            if isinstance(container, set):
                container.discard(key)
            elif not isinstance(container, dict):
                container.record = old  # a record kept by keep_record
            elif old is _ABSENT:
                container.pop(key, None)
            else:
                container[key] = old
        self.open()  # what follows in this line (the line kept whole) is journalled afresh
