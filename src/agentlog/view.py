"""The small protocols the session helpers depend on, instead of ``Session``.

Compaction, sync and the lifecycle helpers read a session through
``SessionView``; context assembly reads a path through ``PathReader``
(which every ``SessionStorage`` is). Neither knows how a session is built.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from .event import Event

__all__ = ["PathReader", "SessionView"]


class PathReader(Protocol):
    def ancestors(
        self,
        from_id: str,
        *,
        limit: int | None = None,
        until_kind: str | None = None,
        until_id: str | None = None,
    ) -> list[Event]: ...

    def contains(self, event_id: str) -> bool: ...


class SessionView(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def head(self) -> str: ...

    @property
    def pending(self) -> str | None: ...

    @property
    def meta(self) -> dict[str, Any]: ...

    def walk(self, event_id: str | None = None) -> Iterator[Event]: ...

    def context(self, *, at: str | None = None, resolve: bool = False) -> list[Event]:
        """The model's context ending at ``at``, by default where the next
        append goes (the selected event, else HEAD)."""
        ...

    def resolve(self, event: Event) -> Event: ...

    def append(self, kind: str, record: Any = None, role: str | None = None) -> Event: ...
